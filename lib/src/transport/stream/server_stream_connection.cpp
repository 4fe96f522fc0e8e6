// The responder's accepted connections, whatever they carry: readiness, handshake, the
// read / write loop, idleness and the end.
#include "transport/stream/server_stream_connection.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>

#include "message/proxy_header.hpp"

namespace dnstransport::detail {

namespace {

// How long a lingering connection waits for the peer's FIN after its own.
constexpr auto linger_time = std::chrono::seconds(2);

}  // namespace

server_stream_connection::server_stream_connection(server_thread& owner,
                                                   std::unique_ptr<accepted_socket> socket,
                                                   const boost::asio::ip::address& peer)
    : owner_(owner),
      socket_(std::move(socket)),
      client_(&owner.client(peer)),
      timer_(owner.io()),
      last_activity_ns_(monotonic_ns()) {}

server_stream_connection::~server_stream_connection() = default;

std::shared_ptr<server_stream_connection> server_stream_connection::make(
    server_thread& owner, std::unique_ptr<accepted_socket> socket, stream_acceptor& streams,
    server_session_maker session, transport_kind transport, const boost::asio::ip::address& peer) {
  auto connection = std::make_shared<server_stream_connection>(owner, std::move(socket), peer);
  connection->proxy_ = owner.options().proxy_protocol[transport];
  connection->proxy_pending_ = connection->proxy_ != proxy_policy::off;
  connection->session_ =
      session(*connection, streams.open(connection->socket_->native_handle()), transport);
  return connection;
}

void server_stream_connection::step() {
  if (closed_) return;
  if (lingering_) {
    linger();
    return;
  }
  if (proxy_pending_ && !read_proxy_header()) return;
  if (handshaking_) {
    if (!handshake()) return;
    if (!session_->start()) {
      close();
      return;
    }
  }
  // Output not yet written goes first: no more is read until the stream took it.
  if (!flushed()) return;
  if (!closing_) {
    // An answer waits for the rate limit: nothing more is read until the session's timer.
    if (session_->paused()) return;
    read();
    if (!flushed()) return;
  }
  if (closing_ || session_->finished()) {
    finish_close();
    return;
  }
  if (!session_->paused()) wait(boost::asio::socket_base::wait_read);
}

bool server_stream_connection::read_proxy_header() {
  // A header is at most 16 + 65535 octets; the ones clients send fit in this, and a longer
  // one is refused as invalid rather than read in pieces.
  std::array<std::uint8_t, 512> peeked{};
  const int fd = socket_->native_handle();
  const ssize_t n = ::recv(fd, peeked.data(), peeked.size(), MSG_PEEK | MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
    wait(boost::asio::socket_base::wait_read);
    return false;
  }
  const auto header = n > 0
                          ? detail::read_proxy_header({peeked.data(), static_cast<std::size_t>(n)})
                          : proxy_header_read{};
  if (header.result == proxy_header_read::outcome::incomplete &&
      static_cast<std::size_t>(n) < peeked.size()) {
    wait(boost::asio::socket_base::wait_read);
    return false;
  }
  // proxy_policy::optional: a connection that does not start with a header is the peer's.
  if (proxy_ == proxy_policy::optional && header.result == proxy_header_read::outcome::none) {
    proxy_pending_ = false;
    return true;
  }
  if (header.result != proxy_header_read::outcome::complete ||
      ::recv(fd, peeked.data(), header.length, MSG_DONTWAIT) !=
          static_cast<ssize_t>(header.length)) {
    owner_.counters.proxy_refused.fetch_add(1, std::memory_order_relaxed);
    close();
    return false;
  }
  owner_.counters.proxy_headers.fetch_add(1, std::memory_order_relaxed);
  if (!header.local) client_ = &owner_.client(header.connection.source);
  proxy_pending_ = false;
  touch();
  return true;
}

bool server_stream_connection::handshake() {
  const handshake_step step = advance_handshake(session_->stream());
  switch (step.result) {
    case handshake_step::outcome::done:
      handshaking_ = false;
      if (step.resumed) owner_.counters.tls_resumed.fetch_add(1, std::memory_order_relaxed);
      if (step.early_data_accepted) {
        owner_.counters.tls_early_data.fetch_add(1, std::memory_order_relaxed);
      }
      owner_.spend_handshake_cost();  // plain TCP: the connection's set-up
      return true;
    case handshake_step::outcome::want_read:
      wait(boost::asio::socket_base::wait_read);
      return false;
    case handshake_step::outcome::want_write:
      wait(boost::asio::socket_base::wait_write);
      return false;
    case handshake_step::outcome::failed:
      owner_.counters.tls_handshakes_failed.fetch_add(1, std::memory_order_relaxed);
      close();
      return false;
  }
  return false;
}

void server_stream_connection::read() {
  switch (session_->read()) {
    case stream_io::done:
    case stream_io::want_read:
      return;
    case stream_io::want_write:
      wait(boost::asio::socket_base::wait_write);
      return;
    case stream_io::closed:
    case stream_io::failed:
      // A TLS session that failed may still have answers to flush; a reset socket not.
      closing_ = true;
      return;
  }
}

bool server_stream_connection::flushed() {
  switch (session_->flush()) {
    case stream_io::done:
      return true;
    case stream_io::want_read:
      wait(boost::asio::socket_base::wait_read);
      return false;
    case stream_io::want_write:
      wait(boost::asio::socket_base::wait_write);
      return false;
    case stream_io::closed:
    case stream_io::failed:
      close();
      return false;
  }
  return false;
}

void server_stream_connection::wait(boost::asio::socket_base::wait_type type) {
  if (waiting_ || closed_) return;
  waiting_ = true;
  socket_->async_wait(type, shared_from_this());
}

void server_stream_connection::ready(bool ok) {
  waiting_ = false;
  if (!ok || closed_) return;
  step();
}

void server_stream_connection::wake_at(std::uint64_t due) {
  timer_.expires_after(std::chrono::nanoseconds(due - std::min(due, monotonic_ns())));
  timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (ec || self->closed_ || self->lingering_) return;
    self->session_->on_timer();
    self->step();
  });
}

void server_stream_connection::check_idle(std::uint64_t now) {
  // Answers waiting for the rate limit: the client waits for them, it is not idle.
  if (closed_ || lingering_ || session_->holds_answers()) return;
  const double timeout = owner_.options().idle_timeout_seconds;
  if (timeout <= 0 || now - last_activity_ns_ < seconds_to_ns(timeout)) return;
  if (!session_->end_for_idle()) {
    close();
    return;
  }
  closing_ = true;
  step();
}

void server_stream_connection::finish_close() {
  if (!handshaking_) session_->stream().shutdown();
  if (!session_->lingers()) {
    close();
    return;
  }
  session_->ended();
  if (!socket_->shutdown_send()) {
    close();
    return;
  }
  lingering_ = true;
  timer_.expires_after(linger_time);
  timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (!ec) self->close();
  });
  linger();
}

void server_stream_connection::linger() {
  if (socket_->discard_input(owner_.answer_scratch())) {
    wait(boost::asio::socket_base::wait_read);
  } else {
    close();  // the peer's FIN, or an error
  }
}

void server_stream_connection::close() {
  if (closed_) return;
  closed_ = true;
  timer_.cancel();
  session_->ended();
  socket_->close();
  owner_.forget(this);
}

}  // namespace dnstransport::detail
