// DNS over UDP from AF_XDP sockets (xdp_sockets.hpp): each client's datagram_socket, over its
// worker's side of the run (xdp_worker.hpp, xdp_run.hpp).
#include "transport/xdp/xdp_sockets.hpp"

#include <cstring>

#include <boost/asio/ip/udp.hpp>
#include <boost/asio/post.hpp>

#include "engine/readiness.hpp"
#include "transport/xdp/xdp_client_socket.hpp"
#include "transport/xdp/xdp_run.hpp"
#include "transport/xdp/xdp_worker.hpp"
#include "util/receive_time.hpp"

namespace dnstransport::detail {

xdp_client_socket::xdp_client_socket(std::shared_ptr<xdp_run> run, readiness_set& readiness,
                                     ready_callback on_ready, syscall_counter& syscalls)
    : run_(std::move(run)),
      readiness_(readiness),
      on_ready_(std::move(on_ready)),
      syscalls_(syscalls) {}

xdp_client_socket::~xdp_client_socket() {
  if (worker_ != nullptr) run_->leave(to_.source_port);
}

int xdp_client_socket::open(const boost::asio::ip::udp::endpoint&,
                            const std::optional<boost::asio::ip::address>& source) {
  worker_ = run_->join(*this, readiness_, syscalls_, source, to_);
  return worker_ != nullptr ? 0 : EADDRINUSE;
}

socklen_t xdp_client_socket::local_address(sockaddr_storage& address) {
  const boost::asio::ip::udp::endpoint local(to_.source, to_.source_port);
  std::memcpy(&address, local.data(), local.size());
  return static_cast<socklen_t>(local.size());
}

void xdp_client_socket::call_later(bool readable, std::uint64_t token, bool ok) {
  boost::asio::post(readiness_.io(),
                    [this, readable, token, ok] { on_ready_(readable, token, ok); });
}

void xdp_client_socket::async_wait(bool readable, std::uint64_t token) {
  if (readable) {
    if (has_answers()) {
      call_later(true, token, true);
      return;
    }
    waiting_read_ = true;
    read_token_ = token;
    return;
  }
  waiting_write_ = true;
  write_token_ = token;
  if (worker_ != nullptr) worker_->wait_writable(*this);
}

void xdp_client_socket::cancel() {
  if (waiting_read_) {
    waiting_read_ = false;
    call_later(true, read_token_, false);
  }
  if (waiting_write_) {
    waiting_write_ = false;
    call_later(false, write_token_, false);
  }
}

void xdp_client_socket::close() {
  cancel();
  if (worker_ != nullptr) run_->leave(to_.source_port);
  worker_ = nullptr;
  answers_.clear();
  answer_bytes_.clear();
  next_answer_ = 0;
}

void xdp_client_socket::client_finished() noexcept {
  if (worker_ != nullptr) worker_->client_finished(to_.source_port);
}

bool xdp_client_socket::deliver(std::span<const std::uint8_t> payload, std::uint64_t received_ns) {
  try {
    const std::size_t offset = answer_bytes_.size();
    answer_bytes_.insert(answer_bytes_.end(), payload.begin(), payload.end());
    answers_.push_back({received_ns, offset, payload.size()});
  } catch (...) {  // out of memory: the answer is lost, as a full socket buffer loses one
    return false;
  }
  if (!waiting_read_) return false;
  waiting_read_ = false;
  return true;
}

void xdp_client_socket::wake_readable() {
  on_ready_(true, read_token_, true);
}

void xdp_client_socket::wake_writable() {
  if (!waiting_write_) return;
  waiting_write_ = false;
  on_ready_(false, write_token_, true);
}

int xdp_client_socket::receive(std::span<mmsghdr> messages) {
  if (worker_ == nullptr) return -EBADF;
  int n = 0;
  const receive_clock clock = receive_clock::read();
  for (mmsghdr& m : messages) {
    if (!has_answers()) break;
    const answer& a = answers_[next_answer_];
    const iovec& into = m.msg_hdr.msg_iov[0];
    const std::size_t size = std::min(a.size, into.iov_len);
    std::memcpy(into.iov_base, answer_bytes_.data() + a.offset, size);
    m.msg_len = static_cast<unsigned>(size);
    // Its receive time as the kernel's SO_TIMESTAMPNS stamp would carry it (CLOCK_REALTIME).
    msghdr& h = m.msg_hdr;
    if (h.msg_control != nullptr && h.msg_controllen >= CMSG_SPACE(sizeof(timespec))) {
      cmsghdr* c = CMSG_FIRSTHDR(&h);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_TIMESTAMPNS;
      c->cmsg_len = CMSG_LEN(sizeof(timespec));
      const std::uint64_t real = a.received_ns + clock.realtime_ahead;
      const timespec stamp{static_cast<time_t>(real / 1'000'000'000),
                           static_cast<long>(real % 1'000'000'000)};
      std::memcpy(CMSG_DATA(c), &stamp, sizeof stamp);
      h.msg_controllen = CMSG_SPACE(sizeof(timespec));
    } else {
      h.msg_controllen = 0;
    }
    ++next_answer_;
    ++n;
  }
  if (!has_answers()) {
    answers_.clear();
    answer_bytes_.clear();
    next_answer_ = 0;
  }
  return n == 0 ? -EAGAIN : n;
}

int xdp_client_socket::send(std::span<mmsghdr> messages) {
  if (worker_ == nullptr) return -EBADF;
  return worker_->send(to_, messages);
}

datagram_socket_factory make_xdp_sockets(const xdp_settings& settings) {
  auto run = std::make_shared<xdp_run>(settings);
  return [run](readiness_set& readiness, datagram_socket::ready_callback on_ready,
               syscall_counter& syscalls) -> std::unique_ptr<datagram_socket> {
    return std::make_unique<xdp_client_socket>(run, readiness, std::move(on_ready), syscalls);
  };
}

}  // namespace dnstransport::detail
