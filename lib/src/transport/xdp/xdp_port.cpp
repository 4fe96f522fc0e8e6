// The AF_XDP socket of one queue and its frames (xdp_port.hpp).
#include "transport/xdp/xdp_port.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include <dnstransport/error.hpp>

#include "util/clock.hpp"
#include "util/syscall_counter.hpp"

namespace dnstransport::detail {

namespace {

constexpr std::uint32_t frame_size = XSK_UMEM__DEFAULT_FRAME_SIZE;  // 4096
constexpr std::uint32_t receive_frames = 2048;
constexpr std::uint32_t send_frames = 2048;
constexpr std::uint32_t frames = receive_frames + send_frames;
constexpr std::uint32_t rx_batch = 64;

// What xdp_answers.bpf.c writes before each frame it steers here.
struct frame_meta {
  std::uint64_t magic;
  std::uint64_t received_ns;
};
constexpr std::uint64_t meta_magic = 0x64747864707473ULL;

// When the kernel received the frame at `frame`: the program's stamp, or `now` without one.
std::uint64_t received_at(const std::uint8_t* frame, std::uint64_t now) noexcept {
  frame_meta meta{};
  std::memcpy(&meta, frame - sizeof meta, sizeof meta);
  return meta.magic == meta_magic && meta.received_ns <= now ? meta.received_ns : now;
}

}  // namespace

xdp_port::xdp_port(const std::string& interface, const std::string& named, std::uint32_t queue,
                   int sockets_map)
    : interface_(interface), queue_(queue) {
  area_size_ = std::size_t{frames} * frame_size;
  area_ = mmap(nullptr, area_size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (area_ == MAP_FAILED) {
    area_ = nullptr;
    throw setup_error(fmt::format("{}: no memory for its frames: {}", named, std::strerror(errno)));
  }
  xsk_umem_config umem{};
  umem.fill_size = receive_frames;
  umem.comp_size = send_frames;
  umem.frame_size = frame_size;
  umem.frame_headroom = 0;
  if (const int error = xsk_umem__create(&umem_, area_, area_size_, &fill_, &completion_, &umem);
      error != 0) {
    munmap(area_, area_size_);
    throw setup_error(
        fmt::format("{}: its frames cannot be registered: {}", named, std::strerror(-error)));
  }
  xsk_socket_config config{};
  config.rx_size = receive_frames;
  config.tx_size = send_frames;
  config.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD;  // the run's program is ours
  // Zero-copy where the driver has it, else the kernel copies (veth, generic XDP).
  config.bind_flags = XDP_USE_NEED_WAKEUP | XDP_ZEROCOPY;
  int error = xsk_socket__create(&socket_, interface.c_str(), queue, umem_, &rx_, &tx_, &config);
  zero_copy_ = error == 0;
  if (error != 0) {
    config.bind_flags = XDP_USE_NEED_WAKEUP | XDP_COPY;
    error = xsk_socket__create(&socket_, interface.c_str(), queue, umem_, &rx_, &tx_, &config);
  }
  if (error == 0) error = xsk_socket__update_xskmap(socket_, sockets_map);
  if (error != 0) {
    if (socket_ != nullptr) xsk_socket__delete(socket_);
    xsk_umem__delete(umem_);
    munmap(area_, area_size_);
    throw setup_error(
        fmt::format("{}: no AF_XDP socket on its queue {}: {}", named, queue,
                    -error == EPERM ? "needs root (CAP_NET_RAW)" : std::strerror(-error)));
  }
  // Every receive frame goes to the kernel to fill.
  std::uint32_t at = 0;
  xsk_ring_prod__reserve(&fill_, receive_frames, &at);
  for (std::uint32_t i = 0; i < receive_frames; ++i) {
    *xsk_ring_prod__fill_addr(&fill_, at + i) = std::uint64_t{i} * frame_size;
  }
  xsk_ring_prod__submit(&fill_, receive_frames);
  free_frames_.reserve(send_frames);
  for (std::uint32_t i = 0; i < send_frames; ++i) {
    free_frames_.push_back(std::uint64_t{receive_frames + i} * frame_size);
  }
}

xdp_port::~xdp_port() {
  xsk_socket__delete(socket_);
  xsk_umem__delete(umem_);
  munmap(area_, area_size_);
}

int xdp_port::descriptor() const noexcept {
  return xsk_socket__fd(socket_);
}

void xdp_port::receive(const frame_addresses& from, const datagram_callback& each,
                       syscall_counter& syscalls) {
  const std::lock_guard lock(receiving_);
  const std::uint64_t now = monotonic_ns();
  for (;;) {
    std::uint32_t at = 0;
    const std::uint32_t n = xsk_ring_cons__peek(&rx_, rx_batch, &at);
    if (n == 0) break;
    std::uint32_t refill_at = 0;
    // The fill ring has room for every frame it lent (it holds receive_frames).
    xsk_ring_prod__reserve(&fill_, n, &refill_at);
    for (std::uint32_t i = 0; i < n; ++i) {
      const xdp_desc* d = xsk_ring_cons__rx_desc(&rx_, at + i);
      const auto* frame = static_cast<const std::uint8_t*>(xsk_umem__get_data(area_, d->addr));
      if (const auto datagram = read_frame({frame, d->len}, from)) {
        each(*datagram, received_at(frame, now));
      }
      *xsk_ring_prod__fill_addr(&fill_, refill_at + i) = xsk_umem__extract_addr(d->addr);
    }
    xsk_ring_prod__submit(&fill_, n);
    xsk_ring_cons__release(&rx_, n);
    if (n < rx_batch) break;
  }
  if (xsk_ring_prod__needs_wakeup(&fill_)) {
    recvfrom(xsk_socket__fd(socket_), nullptr, 0, MSG_DONTWAIT, nullptr, nullptr);
    syscalls.count_calls(1);
  }
}

bool xdp_port::reclaim() noexcept {
  std::uint32_t at = 0;
  const std::uint32_t n = xsk_ring_cons__peek(&completion_, send_frames, &at);
  for (std::uint32_t i = 0; i < n; ++i) {
    free_frames_.push_back(*xsk_ring_cons__comp_addr(&completion_, at + i));
  }
  if (n > 0) xsk_ring_cons__release(&completion_, n);
  return !free_frames_.empty();
}

void xdp_port::kick_send(syscall_counter& syscalls) noexcept {
  if (!xsk_ring_prod__needs_wakeup(&tx_)) return;
  sendto(xsk_socket__fd(socket_), nullptr, 0, MSG_DONTWAIT, nullptr, 0);
  syscalls.count_calls(1);
}

bool xdp_port::send_segment(const frame_addresses& to, const tcp_header& header,
                            std::span<const iovec> payload) noexcept {
  if (free_frames_.empty() && !reclaim()) return false;
  std::uint32_t at = 0;
  if (xsk_ring_prod__reserve(&tx_, 1, &at) != 1) return false;
  const std::uint64_t address = free_frames_.back();
  auto* frame = static_cast<std::uint8_t*>(xsk_umem__get_data(area_, address));
  const std::size_t length = write_tcp_frame(to, header, payload, {frame, std::size_t{frame_size}});
  if (length == 0) {
    tx_.cached_prod -= 1;  // reserved, unused: given back
    return false;
  }
  free_frames_.pop_back();
  xdp_desc* d = xsk_ring_prod__tx_desc(&tx_, at);
  d->addr = address;
  d->len = static_cast<std::uint32_t>(length);
  xsk_ring_prod__submit(&tx_, 1);
  return true;
}

void xdp_port::kick_send_all(syscall_counter& syscalls) noexcept {
  if (!xsk_ring_prod__needs_wakeup(&tx_)) return;
  for (std::uint32_t i = 0; i < send_frames / 32; ++i) {
    const ssize_t r = sendto(xsk_socket__fd(socket_), nullptr, 0, MSG_DONTWAIT, nullptr, 0);
    syscalls.count_calls(1);
    // EAGAIN: frames left (or no room to complete them: taken back here).
    if (r >= 0 || (errno != EAGAIN && errno != EBUSY)) break;
    reclaim();
  }
}

int xdp_port::send(const frame_addresses& to, std::span<mmsghdr> messages,
                   syscall_counter& syscalls) {
  reclaim();
  const auto wanted =
      static_cast<std::uint32_t>(std::min<std::size_t>(messages.size(), free_frames_.size()));
  std::uint32_t at = 0;
  const std::uint32_t n = wanted == 0 ? 0 : xsk_ring_prod__reserve(&tx_, wanted, &at);
  std::uint32_t written = 0;
  for (; written < n; ++written) {
    const msghdr& m = messages[written].msg_hdr;
    const std::uint64_t address = free_frames_.back();
    auto* frame = static_cast<std::uint8_t*>(xsk_umem__get_data(area_, address));
    const std::size_t length =
        write_frame(to, {m.msg_iov, m.msg_iovlen}, {frame, std::size_t{frame_size}});
    if (length == 0) break;  // larger than a frame: never a DNS query over UDP here
    free_frames_.pop_back();
    xdp_desc* d = xsk_ring_prod__tx_desc(&tx_, at + written);
    d->addr = address;
    d->len = static_cast<std::uint32_t>(length);
    messages[written].msg_len = static_cast<unsigned>(length);
  }
  if (written < n) {
    // Reserved but unused descriptors would go out empty: cancel them by rewinding.
    tx_.cached_prod -= n - written;
  }
  if (written > 0) {
    xsk_ring_prod__submit(&tx_, written);
    kick_send(syscalls);
  } else if (n == 0 && !messages.empty()) {
    kick_send(syscalls);  // the kernel must send (and complete) for frames to come free
    return -EAGAIN;
  } else if (!messages.empty()) {
    return -EMSGSIZE;
  }
  return static_cast<int>(written);
}

}  // namespace dnstransport::detail
