#pragma once
// Internal: the one driver of every connection the responder accepts over TCP (TCP, TLS,
// DoH), with the protocol it runs plugged in as a server_session: DNS messages with their
// 2-octet length for TCP and TLS (server_dns_session.hpp), HTTP/2 for DoH
// (transport/doh/server_doh_session.hpp). The driver owns the connection's life: the
// socket's readiness waits, the handshake and what it counts (resumed sessions, 0-RTT
// accepted, failures, the set-up's known cost), the read / write loop (output first: no
// more is read until the stream took it, which holds back a client that sends faster than
// it reads), the end (a peer that went away, the idle timeout, the session's own end), the
// close, and the one timer a session may ask for (its rate-limited answers). The session
// turns what it reads into answers. The socket is an accepted_socket, so that a test drives
// the whole connection with no socket.

#include <cstdint>
#include <memory>
#include <span>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/socket_base.hpp>
#include <boost/asio/steady_timer.hpp>

#include "responder/server_thread.hpp"
#include "transport/stream/byte_stream.hpp"
#include "util/clock.hpp"

namespace dnstransport::detail {

class server_stream_connection;

// The protocol on a connection the responder accepted, driven by server_stream_connection.
class server_session {
 public:
  virtual ~server_session() = default;

  // The stream it runs on (the driver runs its handshake and shuts it down).
  virtual byte_stream& stream() noexcept = 0;
  // The handshake is done: starts the protocol (DoH: an HTTP/2 session and its SETTINGS).
  // False: it cannot run, and the connection closes.
  virtual bool start() = 0;
  // Reads and answers what is available now, telling the driver of each read (touch()) and
  // of an end it decided on (end_after_output()). Returns what ended the reading: want_read
  // (nothing more now), want_write (the stream must write first), closed or failed (the
  // peer went away: the connection ends once its output is written).
  virtual stream_io read() = 0;
  // Writes the output the stream has not taken yet: done when none is left, otherwise what
  // the stream asks for (closed, failed: the connection is gone).
  virtual stream_io flush() = 0;
  // Nothing more may be read now (an answer waits for its rate-limit token and answers keep
  // their order); the session's timer resumes it.
  virtual bool paused() const noexcept = 0;
  // Answers wait for their rate-limit tokens: the client waits for them, so the connection
  // is not idle.
  virtual bool holds_answers() const noexcept = 0;
  // The protocol ended by itself with nothing left to write (DoH: a GOAWAY sent and every
  // stream it left open answered).
  virtual bool finished() const noexcept = 0;
  // The connection was idle too long: ends the protocol the way it ends (DoH: GOAWAY), then
  // the driver closes once the output is written. False: there is nothing to end (DoH
  // before HTTP/2 started), close at once.
  virtual bool end_for_idle() = 0;
  // The timer the session asked for (server_stream_connection::wake_at) expired; the driver
  // steps the connection after.
  virtual void on_timer() = 0;
  // Closing, after its shutdown, the connection sends its FIN and then reads and drops what
  // comes until the peer's FIN (or a time limit) before it closes the socket: a peer that
  // still sends (HTTP/2 acknowledgements) would otherwise get a reset that can destroy the
  // last answers before it read them. False: the socket is closed at once.
  virtual bool lingers() const noexcept = 0;
  // The connection is ending: releases the stream (may be called more than once).
  virtual void ended() noexcept = 0;
};

// The socket under an accepted connection: a TCP socket (make_accepted_socket), or, in
// tests, a scripted one.
class accepted_socket {
 public:
  virtual ~accepted_socket() = default;
  // For the stream_acceptor that opens the connection's byte stream.
  virtual int native_handle() noexcept = 0;
  // Calls connection->ready(ok) once the socket is ready for `type` (ok false: the wait was
  // cancelled or failed).
  virtual void async_wait(boost::asio::socket_base::wait_type type,
                          std::shared_ptr<server_stream_connection> connection) = 0;
  // Sends our FIN (shutdown for writing); false when the socket refused it.
  virtual bool shutdown_send() noexcept = 0;
  // Reads and drops what the peer sent, using `buffer`: true when it must wait for more,
  // false once the peer's FIN (or an error) came.
  virtual bool discard_input(std::span<std::uint8_t> buffer) noexcept = 0;
  virtual void close() noexcept = 0;
};

// An accepted TCP socket, made non-blocking and without Nagle's delay (answers go at once).
std::unique_ptr<accepted_socket> make_accepted_socket(boost::asio::ip::tcp::socket socket);

// Makes the session of a connection of `transport` on its `stream`, run by `driver`.
using server_session_maker = std::unique_ptr<server_session> (*)(
    server_stream_connection& driver, std::unique_ptr<byte_stream> stream,
    transport_kind transport);

class server_stream_connection final
    : public accepted_connection,
      public std::enable_shared_from_this<server_stream_connection> {
 public:
  // `peer`: the client's address, whose answers the thread counts (server_thread::client)
  // and limits (rate_limit_per_client) unless a PROXY header claims another.
  server_stream_connection(server_thread& owner, std::unique_ptr<accepted_socket> socket,
                           const boost::asio::ip::address& peer = {});
  ~server_stream_connection() override;
  server_stream_connection(const server_stream_connection&) = delete;
  server_stream_connection& operator=(const server_stream_connection&) = delete;

  // The connection on `socket`, its stream opened by `streams`, running the session
  // `session` makes (not started: the thread adopts it).
  static std::shared_ptr<server_stream_connection> make(server_thread& owner,
                                                        std::unique_ptr<accepted_socket> socket,
                                                        stream_acceptor& streams,
                                                        server_session_maker session,
                                                        transport_kind transport,
                                                        const boost::asio::ip::address& peer = {});

  void start() override { step(); }
  void check_idle(std::uint64_t now) override;

  // For the session:
  server_thread& owner() const noexcept { return owner_; }
  accepted_socket& socket() noexcept { return *socket_; }
  // Something was read: the connection is not idle.
  void touch() noexcept { last_activity_ns_ = monotonic_ns(); }
  // The session sent `n` answers: counted for the connection's client (its peer, or the
  // address its PROXY header claimed).
  void answered(std::uint64_t n) noexcept { client_->answers += n; }
  // The limits the connection's answers are under (the responder's and its client's).
  answer_limits limits() const noexcept { return owner_.limits(*client_); }
  // Nothing more is read; the connection closes once its output is written.
  void end_after_output() noexcept { closing_ = true; }
  bool closing() const noexcept { return closing_; }
  // Waits for the socket to be writable before the next step.
  void wait_write() { wait(boost::asio::socket_base::wait_write); }
  // Calls the session's on_timer() at `due` (monotonic_ns), then steps; replaces the wait
  // set before.
  void wake_at(std::uint64_t due);

  // For the socket: a wait ended.
  void ready(bool ok);

 private:
  // What the connection does whenever its socket is ready or its timer expired.
  void step();
  // The handshake's next step (none over plain TCP): true once it is done (a resumed session
  // and accepted 0-RTT counted, server_options::cost_handshake_us spent); false while it
  // waits for the socket, or when it failed (counted, and the connection closed).
  bool handshake();
  // server_options::proxy_protocol: the PROXY header at the connection's start, taken
  // octet-exact (what follows is TLS or DNS): true once read; false while more is to come
  // (it waits) or when there was none (counted, and the connection closed).
  bool read_proxy_header();
  void read();
  // True when every output was written; otherwise it waits for the socket, or closed.
  bool flushed();
  // One wait at a time.
  void wait(boost::asio::socket_base::wait_type type);
  void finish_close();
  void linger();
  // The end: what the session holds released, the socket closed and the thread told; the
  // connection may be gone when this returns (the thread held the last reference).
  void close();

  server_thread& owner_;
  std::unique_ptr<accepted_socket> socket_;
  client_record* client_;  // the client's record in owner_.client
  std::unique_ptr<server_session> session_;
  boost::asio::steady_timer timer_;  // the session's (wake_at), then the linger's
  std::uint64_t last_activity_ns_ = 0;
  bool handshaking_ = true;
  proxy_policy proxy_ = proxy_policy::off;  // the listener's (server_options::proxy_protocol)
  bool proxy_pending_ = false;              // a PROXY header may come first, not read yet
  bool closing_ = false;                    // stop reading, flush, then close
  bool lingering_ = false;  // FIN sent: discard input until the peer's FIN, then close
  bool closed_ = false;
  bool waiting_ = false;
};

}  // namespace dnstransport::detail
