#include "transport/doh/server_doh_connection.hpp"

#include <nghttp2/nghttp2.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "util/clock.hpp"

namespace dnstransport::detail {

namespace {

// TLS records carry at most 16 KiB; one read takes one record.
constexpr std::size_t read_size = 16384;
// How much HTTP/2 output is gathered from nghttp2 before it is handed to the stream.
constexpr std::size_t write_batch = 65536;
// How long a closing connection waits for the peer's FIN after its own.
constexpr auto linger_time = std::chrono::seconds(2);

}  // namespace

server_doh_connection::server_doh_connection(server_thread& owner,
                                             boost::asio::ip::tcp::socket socket,
                                             stream_acceptor& streams)
    : accepted_stream(owner, std::move(socket)),
      linger_timer_(owner.io()),
      rate_timer_(owner.io()),
      in_(read_size) {
  stream_ = streams.open(socket_.native_handle());
}

server_doh_connection::~server_doh_connection() {
  if (session_ != nullptr) nghttp2_session_del(session_);
}

void server_doh_connection::step() {
  if (closed_) return;
  if (lingering_) {
    linger();
    return;
  }
  if (handshaking_) {
    if (!handshake(*stream_)) return;
    if (!start_session()) {
      close();
      return;
    }
  }
  // Output not yet written goes first: no more is read until the stream took it.
  if (!flush() || written_ < out_.size()) return;
  if (!closing_) {
    if (!read_requests()) return;
    if (!flush() || written_ < out_.size()) return;
  }
  // The session ends when the peer went away, or once a GOAWAY was sent and every stream
  // it left open is answered.
  if (closing_ ||
      (nghttp2_session_want_read(session_) == 0 && nghttp2_session_want_write(session_) == 0)) {
    finish_close();
    return;
  }
  wait(boost::asio::socket_base::wait_read);
}

bool server_doh_connection::read_requests() {
  for (;;) {
    std::size_t n = 0;
    switch (stream_->read(in_, n)) {
      case stream_io::done:
        break;
      case stream_io::want_read:
        return true;
      case stream_io::want_write:
        wait(boost::asio::socket_base::wait_write);
        return true;
      case stream_io::closed:
      case stream_io::failed:
        closing_ = true;
        return true;
    }
    last_activity_ns_ = monotonic_ns();
    if (nghttp2_session_mem_recv(session_, in_.data(), n) < 0) {
      // Not HTTP/2 (no client preface) or a fatal session error: send what nghttp2 queued.
      closing_ = true;
      return true;
    }
    if (n < in_.size() && !stream_->has_buffered_input()) return true;
  }
}

bool server_doh_connection::flush() {
  for (;;) {
    if (written_ == out_.size()) {
      out_.clear();
      written_ = 0;
      while (session_ != nullptr && out_.size() < write_batch) {
        const std::uint8_t* data = nullptr;
        const ssize_t n = nghttp2_session_mem_send(session_, &data);
        if (n < 0) {
          close();
          return false;
        }
        if (n == 0) break;
        out_.insert(out_.end(), data, data + n);
      }
      if (out_.empty()) return true;
    }
    const iovec piece{out_.data() + written_, out_.size() - written_};
    std::size_t n = 0;
    const stream_io io = stream_->write({&piece, 1}, n);
    if (io != stream_io::done) return wait_as(io);
    written_ += n;
  }
}

void server_doh_connection::check_idle(std::uint64_t now) {
  // Answers waiting for the rate limit: the client waits for them, it is not idle.
  if (lingering_ || !delayed_.empty() || !idle_past_timeout(now)) return;
  if (session_ == nullptr) {
    close();
    return;
  }
  // GOAWAY (NO_ERROR), then close once it is written.
  if (!goaway_) {
    goaway_ = true;
    goaway_last_stream_ = nghttp2_session_get_last_proc_stream_id(session_);
    nghttp2_session_terminate_session(session_, NGHTTP2_NO_ERROR);
  }
  closing_ = true;
  step();
}

// Closing a socket with unread input resets the connection, and a reset can destroy the
// last answers before the peer read them: the peer still sends HTTP/2 frames (SETTINGS
// acknowledgements, WINDOW_UPDATE) while they arrive. So the connection sends its FIN, then
// reads and drops whatever comes until the peer's FIN (or linger_time), and only then closes.
void server_doh_connection::finish_close() {
  if (!handshaking_) stream_->shutdown();
  stream_.reset();
  boost::system::error_code ec;
  socket_.shutdown(boost::asio::ip::tcp::socket::shutdown_send, ec);
  if (ec) {
    close();
    return;
  }
  lingering_ = true;
  linger_timer_.expires_after(linger_time);
  linger_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& e) {
    if (!e) self->close();
  });
  linger();
}

void server_doh_connection::linger() {
  for (;;) {
    const ssize_t n = ::recv(socket_.native_handle(), in_.data(), in_.size(), MSG_DONTWAIT);
    if (n > 0) continue;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      wait(boost::asio::socket_base::wait_read);
      return;
    }
    close();  // the peer's FIN, or an error
    return;
  }
}

void server_doh_connection::close() {
  if (closed_) return;
  closed_ = true;
  linger_timer_.cancel();
  rate_timer_.cancel();
  stream_.reset();
  close_socket();
}

}  // namespace dnstransport::detail
