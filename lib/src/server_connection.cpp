#include "server_connection.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "clock.hpp"
#include "responder.hpp"

namespace dnstransport::detail {

namespace {
// Stop reading while this much is waiting to be written: back-pressure on a client that
// sends faster than it reads.
constexpr std::size_t max_pending_output = 1 << 20;
}  // namespace

stream_connection::stream_connection(server_thread& owner, boost::asio::ip::tcp::socket socket,
                                     bool tls)
    : owner_(owner), socket_(std::move(socket)) {
  boost::system::error_code ec;
  socket_.non_blocking(true, ec);
  socket_.set_option(boost::asio::ip::tcp::no_delay(true), ec);
  if (tls) {
    tls_ = owner_.tls()->accept(socket_.native_handle());
    handshaking_ = true;
  }
  last_activity_ns_ = monotonic_ns();
}

void stream_connection::start() {
  step();
}

void stream_connection::wait(boost::asio::socket_base::wait_type type) {
  if (waiting_ || closed_) return;
  waiting_ = true;
  socket_.async_wait(type, [self = shared_from_this()](const boost::system::error_code& ec) {
    self->waiting_ = false;
    if (ec || self->closed_) return;
    self->step();
  });
}

void stream_connection::step() {
  if (closed_) return;
  if (handshaking_) {
    do_handshake();
    if (handshaking_ || closed_) return;
  }
  // Write what is pending first; while it does not drain, wait for the socket to take it.
  if (written_ < out_.size()) {
    if (!flush()) return;
    if (written_ < out_.size()) {
      if (out_.size() - written_ >= max_pending_output || tls_) {
        // TLS must retry the same write before anything else; plain TCP keeps reading
        // until the backlog is large.
        return;
      }
    }
  }
  if (closing_) {
    if (written_ >= out_.size()) finish_close();
    return;
  }
  if (!read_some()) return;
  answer_buffered();
  if (!flush()) return;
  if (closing_ && written_ >= out_.size()) {
    finish_close();
    return;
  }
  if (!waiting_)
    wait(written_ < out_.size() && tls_ ? boost::asio::socket_base::wait_write
                                        : boost::asio::socket_base::wait_read);
}

void stream_connection::do_handshake() {
  switch (tls_->handshake()) {
    case tls_io::done:
      handshaking_ = false;
      if (tls_->resumed()) owner_.counters.tls_resumed.fetch_add(1, std::memory_order_relaxed);
      return;
    case tls_io::want_read:
      wait(boost::asio::socket_base::wait_read);
      return;
    case tls_io::want_write:
      wait(boost::asio::socket_base::wait_write);
      return;
    case tls_io::closed:
    case tls_io::error:
      owner_.counters.tls_handshakes_failed.fetch_add(1, std::memory_order_relaxed);
      close();
      return;
  }
}

bool stream_connection::read_some() {
  for (;;) {
    auto space = reader_.prepare();
    std::size_t n = 0;
    if (tls_) {
      switch (tls_->read(space.data(), space.size(), n)) {
        case tls_io::done:
          break;
        case tls_io::want_read:
          return true;
        case tls_io::want_write:
          wait(boost::asio::socket_base::wait_write);
          return true;
        case tls_io::closed:
        case tls_io::error:
          closing_ = true;
          return true;
      }
    } else {
      const ssize_t r = ::recv(socket_.native_handle(), space.data(), space.size(), 0);
      if (r < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
        close();
        return false;
      }
      if (r == 0) {
        closing_ = true;
        return true;
      }
      n = static_cast<std::size_t>(r);
    }
    reader_.commit(n);
    last_activity_ns_ = monotonic_ns();
    if (n < space.size() && !(tls_ && tls_->pending() > 0)) return true;
  }
}

void stream_connection::answer_buffered() {
  const server_options& options = owner_.options();
  auto& counter = tls_ ? owner_.counters.tls_queries : owner_.counters.tcp_queries;
  const std::size_t batch_start = out_.size();
  std::vector<std::pair<std::size_t, std::size_t>> order;  // only used for reverse order
  std::span<const std::uint8_t> message;
  std::uint64_t answered_now = 0;
  for (;;) {
    if (options.close_after_queries != 0 && answered_ >= options.close_after_queries) {
      closing_ = true;
      break;
    }
    const auto r = reader_.next(message);
    if (r == frame_reader::result::need_more) break;
    if (r == frame_reader::result::zero_length) {
      owner_.counters.malformed_queries.fetch_add(1, std::memory_order_relaxed);
      closing_ = true;
      break;
    }
    const auto scratch = owner_.answer_scratch();
    const std::size_t size = build_answer(message, options.mode, scratch);
    if (size == 0) {
      owner_.counters.malformed_queries.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    const std::size_t at = out_.size();
    out_.resize(at + 2 + size);
    out_[at] = static_cast<std::uint8_t>(size >> 8);
    out_[at + 1] = static_cast<std::uint8_t>(size);
    std::memcpy(&out_[at + 2], scratch.data(), size);
    if (options.reverse_order) order.emplace_back(at, 2 + size);
    ++answered_;
    ++answered_now;
  }
  counter.fetch_add(answered_now, std::memory_order_relaxed);
  if (options.reverse_order && order.size() > 1) {
    std::vector<std::uint8_t> reversed;
    reversed.reserve(out_.size() - batch_start);
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      reversed.insert(reversed.end(), out_.begin() + static_cast<std::ptrdiff_t>(it->first),
                      out_.begin() + static_cast<std::ptrdiff_t>(it->first + it->second));
    }
    std::copy(reversed.begin(), reversed.end(),
              out_.begin() + static_cast<std::ptrdiff_t>(batch_start));
  }
}

bool stream_connection::flush() {
  while (written_ < out_.size()) {
    const std::uint8_t* data = out_.data() + written_;
    const std::size_t size = out_.size() - written_;
    std::size_t n = 0;
    if (tls_) {
      switch (tls_->write(data, size, n)) {
        case tls_io::done:
          break;
        case tls_io::want_read:
          wait(boost::asio::socket_base::wait_read);
          return true;
        case tls_io::want_write:
          wait(boost::asio::socket_base::wait_write);
          return true;
        case tls_io::closed:
        case tls_io::error:
          close();
          return false;
      }
    } else {
      const ssize_t r = ::send(socket_.native_handle(), data, size, MSG_NOSIGNAL);
      if (r < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
          wait(boost::asio::socket_base::wait_write);
          return true;
        }
        close();
        return false;
      }
      n = static_cast<std::size_t>(r);
    }
    written_ += n;
  }
  out_.clear();
  written_ = 0;
  return true;
}

void stream_connection::check_idle(std::uint64_t now) {
  const double timeout = owner_.options().idle_timeout_seconds;
  if (timeout <= 0 || closed_) return;
  if (now - last_activity_ns_ >= seconds_to_ns(timeout)) {
    closing_ = true;
    step();
  }
}

void stream_connection::finish_close() {
  if (tls_ && !handshaking_) tls_->shutdown();
  close();
}

void stream_connection::close() {
  if (closed_) return;
  closed_ = true;
  boost::system::error_code ec;
  socket_.close(ec);
  owner_.forget(this);
}

}  // namespace dnstransport::detail
