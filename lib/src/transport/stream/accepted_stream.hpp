#pragma once
// Internal: the life of a connection the responder accepted over TCP, written once for
// server_connection (TCP, TLS) and server_doh_connection (DoH): the socket set up for answers
// (non-blocking, no Nagle), the readiness wait after which the connection's step() runs
// again, the handshake and what it counts (resumed sessions, 0-RTT accepted, failures), what
// a stream operation's outcome asks for (wait to read or write, or close), and the idle
// timeout. What a connection does between its waits (frames or HTTP/2, answers, the rate
// limit) is its own.

#include <cstdint>
#include <memory>

#include <boost/asio/ip/tcp.hpp>

#include "responder/server_thread.hpp"
#include "transport/stream/byte_stream.hpp"
#include "util/clock.hpp"

namespace dnstransport::detail {

// `Connection` is the class built on it (shared_from_this gives its shared_ptr).
template <typename Connection>
class accepted_stream : public accepted_connection,
                        public std::enable_shared_from_this<Connection> {
 public:
  void start() override { step(); }

 protected:
  accepted_stream(server_thread& owner, boost::asio::ip::tcp::socket socket)
      : owner_(owner), socket_(std::move(socket)), last_activity_ns_(monotonic_ns()) {
    boost::system::error_code ec;
    socket_.non_blocking(true, ec);
    socket_.set_option(boost::asio::ip::tcp::no_delay(true), ec);
  }

  // What the connection does whenever its socket is ready or a timer of its own expired.
  virtual void step() = 0;
  // Ends the connection: what it holds released, then close_socket().
  virtual void close() = 0;

  // Runs step() once the socket is ready for `type` (one wait at a time).
  void wait(boost::asio::socket_base::wait_type type) {
    if (waiting_ || closed_) return;
    waiting_ = true;
    socket_.async_wait(type,
                       [self = this->shared_from_this()](const boost::system::error_code& ec) {
                         accepted_stream& connection = *self;  // step() as this class declares it
                         connection.waiting_ = false;
                         if (ec || connection.closed_) return;
                         connection.step();
                       });
  }

  // What a stream operation that did not finish asks for: a wait to read or to write (true),
  // or, when the stream closed or failed, the end of the connection (false). True for done.
  bool wait_as(stream_io io) {
    switch (io) {
      case stream_io::done:
        return true;
      case stream_io::want_read:
        wait(boost::asio::socket_base::wait_read);
        return true;
      case stream_io::want_write:
        wait(boost::asio::socket_base::wait_write);
        return true;
      case stream_io::closed:
      case stream_io::failed:
        close();
        return false;
    }
    return true;
  }

  // The handshake's next step (none over plain TCP): true once it is done (a resumed session
  // and accepted 0-RTT counted, server_options::cost_handshake_us spent); false while it waits for
  // the socket, or when it failed (counted, and the connection closed).
  bool handshake(byte_stream& stream) {
    const stream_io io = stream.handshake();
    if (io == stream_io::done) {
      handshaking_ = false;
      if (const tls_connection* tls = stream.tls()) {
        if (tls->resumed()) owner_.counters.tls_resumed.fetch_add(1, std::memory_order_relaxed);
        if (tls->early_data() == early_data_status::accepted) {
          owner_.counters.tls_early_data.fetch_add(1, std::memory_order_relaxed);
        }
      }
      owner_.spend_handshake_cost();  // plain TCP: the connection's set-up
      return true;
    }
    if (io == stream_io::closed || io == stream_io::failed) {
      owner_.counters.tls_handshakes_failed.fetch_add(1, std::memory_order_relaxed);
    }
    wait_as(io);
    return false;
  }

  // The responder has an idle timeout and nothing happened on the connection for that long.
  bool idle_past_timeout(std::uint64_t now) const {
    const double timeout = owner_.options().idle_timeout_seconds;
    return timeout > 0 && !closed_ && now - last_activity_ns_ >= seconds_to_ns(timeout);
  }

  // The last of close(): the socket closed and the thread told; the connection may be gone
  // when this returns (the thread held the last reference).
  void close_socket() {
    boost::system::error_code ec;
    socket_.close(ec);
    owner_.forget(this);
  }

  server_thread& owner_;
  boost::asio::ip::tcp::socket socket_;
  std::uint64_t last_activity_ns_ = 0;
  bool handshaking_ = true;
  bool closing_ = false;  // stop reading, flush, then close
  bool closed_ = false;
  bool waiting_ = false;
};

}  // namespace dnstransport::detail
