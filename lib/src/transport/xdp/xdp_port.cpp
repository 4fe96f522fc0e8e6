// One worker's AF_XDP socket and its frames (xdp_port.hpp).
#include "transport/xdp/xdp_port.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include <dnstransport/error.hpp>

#include "transport/xdp/xdp_client_socket.hpp"
#include "util/clock.hpp"
#include "util/syscall_counter.hpp"

namespace dnstransport::detail {

namespace {

constexpr std::uint32_t frame_size = XSK_UMEM__DEFAULT_FRAME_SIZE;  // 4096
constexpr std::uint32_t receive_frames = 2048;
constexpr std::uint32_t send_frames = 2048;
constexpr std::uint32_t frames = receive_frames + send_frames;
constexpr std::uint32_t batch = 64;

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
  clients_.assign(65536, nullptr);
}

xdp_port::~xdp_port() {
  watched_.reset();
  xsk_socket__delete(socket_);
  xsk_umem__delete(umem_);
  munmap(area_, area_size_);
}

void xdp_port::watch(readiness_set& set, syscall_counter& syscalls) {
  if (watched_) return;
  syscalls_ = &syscalls;
  watched_ = std::make_unique<watched_socket>(
      set, [this](bool readable, std::uint64_t, bool ok) { on_ready(readable, ok); });
  // The descriptor stays libxdp's: the set watches (and closes) a duplicate of it.
  const int fd = dup(xsk_socket__fd(socket_));
  if (fd < 0 || watched_->assign(fd) != 0) {
    watched_.reset();
    return;
  }
  watched_->async_wait(true);
}

void xdp_port::join(xdp_client_socket& client, std::uint16_t port) {
  if (clients_[port] == nullptr) ++joined_;
  clients_[port] = &client;
}

void xdp_port::leave(std::uint16_t port) noexcept {
  if (clients_[port] == nullptr) return;
  clients_[port] = nullptr;
  std::erase_if(writers_, [port](xdp_client_socket* c) { return c->port() == port; });
  std::erase_if(waiting_clients_, [port](xdp_client_socket* c) { return c->port() == port; });
  // The last client of the worker is gone: so is the worker's readiness set, soon.
  if (--joined_ == 0) watched_.reset();
}

void xdp_port::on_ready(bool readable, bool ok) {
  if (!ok) return;
  if (readable) {
    receive();
    wake_waiting();
    if (watched_) watched_->async_wait(true);
    return;
  }
  reclaim();
  std::vector<xdp_client_socket*> writers;
  writers.swap(writers_);
  for (xdp_client_socket* c : writers) c->wake_writable();
}

void xdp_port::wake_waiting() {
  // The clients that have answers and wait for them, called back after the whole read.
  woken_.clear();
  for (xdp_client_socket* c : waiting_clients_) woken_.push_back(c);
  waiting_clients_.clear();
  for (xdp_client_socket* c : woken_) c->wake_readable();
}

void xdp_port::receive() {
  const std::uint64_t now = monotonic_ns();
  for (;;) {
    std::uint32_t at = 0;
    const std::uint32_t n = xsk_ring_cons__peek(&rx_, batch, &at);
    if (n == 0) break;
    std::uint32_t refill_at = 0;
    // The fill ring has room for every frame it lent (it holds receive_frames).
    xsk_ring_prod__reserve(&fill_, n, &refill_at);
    for (std::uint32_t i = 0; i < n; ++i) {
      const xdp_desc* d = xsk_ring_cons__rx_desc(&rx_, at + i);
      const auto* frame = static_cast<const std::uint8_t*>(xsk_umem__get_data(area_, d->addr));
      if (const auto datagram = read_frame({frame, d->len}, from_)) {
        const std::uint16_t port = datagram->destination_port;
        const std::uint64_t received = received_at(frame, now);
        if (xdp_client_socket* c = clients_[port]; c != nullptr) {
          if (c->deliver(datagram->payload, received)) waiting_clients_.push_back(c);
        }
      }
      *xsk_ring_prod__fill_addr(&fill_, refill_at + i) = xsk_umem__extract_addr(d->addr);
    }
    xsk_ring_prod__submit(&fill_, n);
    xsk_ring_cons__release(&rx_, n);
    if (n < batch) break;
  }
  if (xsk_ring_prod__needs_wakeup(&fill_)) {
    recvfrom(xsk_socket__fd(socket_), nullptr, 0, MSG_DONTWAIT, nullptr, nullptr);
    if (syscalls_ != nullptr) syscalls_->count_calls(1);
  }
}

void xdp_port::reclaim() noexcept {
  std::uint32_t at = 0;
  const std::uint32_t n = xsk_ring_cons__peek(&completion_, send_frames, &at);
  for (std::uint32_t i = 0; i < n; ++i) {
    free_frames_.push_back(*xsk_ring_cons__comp_addr(&completion_, at + i));
  }
  if (n > 0) xsk_ring_cons__release(&completion_, n);
}

void xdp_port::kick_send() noexcept {
  if (!xsk_ring_prod__needs_wakeup(&tx_)) return;
  sendto(xsk_socket__fd(socket_), nullptr, 0, MSG_DONTWAIT, nullptr, 0);
  if (syscalls_ != nullptr) syscalls_->count_calls(1);
}

int xdp_port::send(const frame_addresses& to, std::span<mmsghdr> messages) {
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
    kick_send();
  } else if (n == 0 && !messages.empty()) {
    return -EAGAIN;
  } else if (!messages.empty()) {
    return -EMSGSIZE;
  }
  return static_cast<int>(written);
}

void xdp_port::wait_writable(xdp_client_socket& client) noexcept {
  try {
    writers_.push_back(&client);
  } catch (...) {
    return;
  }
  kick_send();
  if (watched_) watched_->async_wait(false);
}

}  // namespace dnstransport::detail
