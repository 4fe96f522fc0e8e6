#include "stream_peer.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <thread>

namespace dnstransport::hostile {

namespace {

// Long enough not to spin, short enough that a stopping responder is noticed at once.
constexpr milliseconds poll_slice{10};

std::optional<std::chrono::steady_clock::time_point> deadline_after(microseconds wait) {
  if (wait < microseconds::zero()) return std::nullopt;
  return std::chrono::steady_clock::now() + wait;
}

}  // namespace

stream_peer::stream_peer(int fd, const std::atomic<bool>& stop, std::atomic<std::uint64_t>& queries,
                         detail::tls_server_context* tls)
    : fd_(fd), stop_(stop), queries_(queries), tls_context_(tls) {
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
  // Every write goes out at once, as a scripted misbehaviour needs (and no Nagle delay
  // against the client's delayed ACKs distorts the timing).
  const int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

stream_peer::~stream_peer() {
  close();
}

bool stream_peer::wait_for(short events, std::optional<time_point> deadline) {
  for (;;) {
    if (gone()) return false;
    std::chrono::nanoseconds slice = poll_slice;
    if (deadline) {
      const auto left = *deadline - std::chrono::steady_clock::now();
      if (left <= std::chrono::nanoseconds::zero()) return false;
      slice = std::min(slice, left);
    }
    pollfd p{fd_, events, 0};
    const timespec limit = to_timespec(slice);
    const int n = ::ppoll(&p, 1, &limit, nullptr);
    if (n > 0) {
      // An error or hang-up is reported as ready: the next call says what happened.
      return true;
    }
    if (n < 0 && errno != EINTR) {
      gone_ = true;
      return false;
    }
  }
}

bool stream_peer::handshake() {
  if (tls_context_ == nullptr) return true;
  tls_ = tls_context_->accept(fd_);
  for (;;) {
    const detail::tls_io io = tls_->handshake();
    if (io == detail::tls_io::done) return true;
    if (!await_tls(io, std::nullopt)) return false;
  }
}

bool stream_peer::await_tls(detail::tls_io io, std::optional<time_point> deadline) {
  switch (io) {
    case detail::tls_io::want_read:
      return wait_for(POLLIN, deadline);
    case detail::tls_io::want_write:
      return wait_for(POLLOUT, deadline);
    case detail::tls_io::done:
      return true;
    case detail::tls_io::closed:
    case detail::tls_io::error:
      break;
  }
  gone_ = true;
  return false;
}

std::size_t stream_peer::read_into(std::span<std::uint8_t> space,
                                   std::optional<time_point> deadline) {
  for (;;) {
    if (gone()) return 0;
    if (tls_) {
      std::size_t n = 0;
      const detail::tls_io io = tls_->read(space.data(), space.size(), n);
      if (io == detail::tls_io::done) return n;
      if (!await_tls(io, deadline)) return 0;
      continue;
    }
    const ssize_t n = ::recv(fd_, space.data(), space.size(), 0);
    if (n > 0) return static_cast<std::size_t>(n);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!wait_for(POLLIN, deadline)) return 0;
      continue;
    }
    gone_ = true;
    return 0;
  }
}

bool stream_peer::fill(std::optional<time_point> deadline) {
  const std::size_t n = read_into(reader_.prepare(), deadline);
  reader_.commit(n);
  return n > 0;
}

std::optional<bytes> stream_peer::read_message(microseconds wait) {
  const auto deadline = deadline_after(wait);
  for (;;) {
    std::span<const std::uint8_t> message;
    switch (reader_.next(message)) {
      case detail::frame_reader::result::message:
        query_number_ = queries_.fetch_add(1, std::memory_order_relaxed);
        return bytes(message.begin(), message.end());
      case detail::frame_reader::result::zero_length:
        gone_ = true;
        return std::nullopt;
      case detail::frame_reader::result::need_more:
        break;
    }
    if (!fill(deadline)) return std::nullopt;
  }
}

bytes stream_peer::read_some(std::size_t max, microseconds wait) {
  bytes data(max);
  data.resize(read_into(data, deadline_after(wait)));
  return data;
}

bool stream_peer::write(std::span<const std::uint8_t> data) {
  if (!tls_) return write_raw(data);
  while (!data.empty()) {
    if (gone()) return false;
    std::size_t n = 0;
    const detail::tls_io io = tls_->write(data.data(), data.size(), n);
    if (io == detail::tls_io::done) {
      data = data.subspan(n);
    } else if (!await_tls(io, std::nullopt)) {
      return false;
    }
  }
  return true;
}

bool stream_peer::write_message(std::span<const std::uint8_t> message) {
  bytes framed;
  framed.reserve(message.size() + 2);
  framed.push_back(static_cast<std::uint8_t>(message.size() >> 8));
  framed.push_back(static_cast<std::uint8_t>(message.size()));
  framed.insert(framed.end(), message.begin(), message.end());
  return write(framed);
}

bool stream_peer::write_raw(std::span<const std::uint8_t> data) {
  while (!data.empty()) {
    if (gone()) return false;
    const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (n >= 0) {
      data = data.subspan(static_cast<std::size_t>(n));
      continue;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!wait_for(POLLOUT, std::nullopt)) return false;
      continue;
    }
    gone_ = true;
    return false;
  }
  return true;
}

void stream_peer::close() {
  if (fd_ < 0) return;
  if (tls_ && !gone_) tls_->shutdown();
  // Unread input would turn the close into a reset.
  std::uint8_t sink[4096];
  while (::recv(fd_, sink, sizeof sink, MSG_DONTWAIT) > 0) {
  }
  tls_.reset();
  ::close(fd_);
  fd_ = -1;
  gone_ = true;
}

void stream_peer::reset() {
  if (fd_ < 0) return;
  const linger abortive{1, 0};
  ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &abortive, sizeof abortive);
  tls_.reset();
  ::close(fd_);
  fd_ = -1;
  gone_ = true;
}

void stream_peer::shutdown_write() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_WR);
}

void stream_peer::hold(microseconds wait) {
  const auto deadline = deadline_after(wait);
  while (!gone()) {
    if (!wait_for(POLLRDHUP, deadline)) return;
    pollfd p{fd_, POLLRDHUP, 0};
    if (::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0) {
      gone_ = true;
    }
  }
}

void stream_peer::discard_until_gone() {
  std::uint8_t sink[4096];
  while (read_into(sink, std::nullopt) > 0) {
  }
}

void stream_peer::pause(microseconds how_long) {
  const auto end = std::chrono::steady_clock::now() + how_long;
  while (!stop_.load(std::memory_order_relaxed)) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= end) return;
    std::this_thread::sleep_for(std::min<std::chrono::nanoseconds>(end - now, poll_slice));
  }
}

}  // namespace dnstransport::hostile
