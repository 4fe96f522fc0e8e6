#pragma once
// Internal: the stream transport's client: DNS over a byte stream (plain TCP, RFC 7766, or
// TLS, RFC 7858: whichever the run's stream_connector opens). A client keeps up to
// `outstanding` queries in flight on its connection, matches answers by id in any order, and
// replaces the connection after `queries_per_connection` queries. All ready queries go out as
// one gathered write of [length+id][rest] pieces: plain TCP sends them without a copy, TLS
// joins them once.
//
// stream_client_connection.cpp: the connection's life cycle (connect, handshake, failures,
// the server closing, close). stream_client.cpp: readiness and the queries' I/O (fill, write,
// read, take answers) and the transport's factories.

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include <boost/asio/socket_base.hpp>

#include "engine/engine.hpp"
#include "message/framing.hpp"
#include "transport/stream/message_channel.hpp"
#include "transport/stream/stream_socket.hpp"
#include "transport/stream/stream_transport.hpp"
#include "transport/tls/tls_backend.hpp"

namespace dnstransport::detail {

// DoH (transport/doh) derives from it: the same connection life cycle, another protocol on
// the established stream (the virtual hooks below).
class stream_client : public client_base {
 public:
  stream_client(worker& owner, unsigned index, std::uint64_t quota,
                const stream_transport& transport)
      : client_base(owner, index, quota),
        transport_(transport),
        socket_(transport.make_socket(
            owner.readiness(),
            [this](bool readable, std::uint64_t generation, bool ok) {
              wait_ended(readable, generation, ok);
            },
            owner.syscalls())) {}

  void start() override;
  void tick(std::uint64_t now) override;
  void abandon() override;
  void read_delayed() override;

 protected:
  static constexpr unsigned max_gather = 256;  // queries per write (2 pieces each, IOV_MAX is 1024)

  // Reads one wake-up makes at most: TLS clients read ahead, so the records of a peer that
  // keeps sending could otherwise be read on without the worker's timers ever running.
  static constexpr unsigned max_reads_per_wakeup = 64;

  // Running to a query count, connects/handshakes failed in a row before a client gives up.
  static constexpr unsigned max_failed_in_a_row = 3;

  enum class conn_state { idle, connecting, handshaking, established };

  const stream_settings& settings() const noexcept { return transport_.settings(); }
  std::string handshake_name();

  // The protocol on the established stream: DNS messages with their length (here), or
  // HTTP/2 (DoH). established(): the handshake is done; start sending (and reset
  // failed_in_a_row_ once the connection is usable).
  virtual void established(std::uint64_t now);
  // Reads and processes everything available (answers are timed as each read returns).
  // False when the connection is gone.
  virtual bool read_available();
  virtual void fill(std::uint64_t now);
  // Sends pending output. False when the connection is gone.
  virtual bool flush();
  // The connection has carried what it should: close it (and open the next).
  virtual bool connection_done() const noexcept {
    const std::uint64_t limit = settings().queries_per_connection;
    return limit != 0 && tally_.sent >= limit && slots_.empty();
  }
  // The connection is gone (closed, reset, failed): drop what belonged to it.
  virtual void connection_ended() noexcept {}

  // The connection's life cycle (stream_client_connection.cpp).
  void connect(std::uint64_t now);
  void on_connected(std::uint64_t now);
  // A deferred Fast Open connection became ready: counts it opened once established, or
  // fails it (false) when the SYN was refused.
  bool confirm_syn(std::uint64_t now);
  // The stream's own set-up above TCP (TLS); a stream without one is ready at once.
  void handshake(std::uint64_t now);
  // TLS 1.3 0-RTT, when the stream resumes a ticket that allows it (--early-data): the first
  // queries go with the ClientHello, at most `room` octets of them (fill_early; DoH sends
  // its own). Once the handshake is done, early_data_judged counts what the server made of
  // them and, when it refused them, sends them again. Each is false when the connection died
  // doing so.
  bool send_early(std::uint64_t now);
  virtual bool fill_early(std::uint64_t now, std::size_t room);
  bool early_data_judged(std::uint64_t now);
  virtual bool resend_in_flight(std::uint64_t now);
  // A connect (or socket set-up) that failed with `error`, counted by its errno name.
  void fail_connection(const std::string& what, int error);
  // A handshake that failed, counted by the stream's cause ("tls_certificate").
  void fail_connection(const std::string& what, const std::string& cause,
                       const std::string& message);
  void connection_failed();
  // The server ended the connection: EOF (or close_notify), or a reset/error.
  void server_closed(bool reset);
  // We end the connection: after queries_per_connection, at the end of the run, or on abandon.
  void close(bool count);
  // Closes the established connection (as close does, uncounted) when it has had nothing in
  // flight, nothing waiting to be written and no query due since `idle_ns` before `now`;
  // true if it did. The caller counts why (--idle: closed_idle; --honour-keepalive:
  // closed_idle_keepalive), not as closed_by_client. The next query due opens
  // a new connection.
  bool close_if_idle(std::uint64_t now, std::uint64_t idle_ns);
  void end_setup() noexcept;
  void drop_socket(bool abortive = false);

  // Readiness and the queries' I/O (stream_client.cpp).
  void wait(boost::asio::socket_base::wait_type type);
  void wait_ended(bool reading, std::uint64_t generation, bool ok);
  void arm_read() { wait(boost::asio::socket_base::wait_read); }
  // After the established connection's reads: waits for readability, or with coalescing
  // (run_plan::coalesce_ns) reads again after a delay (at most the plan's, and at most 1/20
  // of the answers' recent latency) when the reads brought answers while many are in
  // flight.
  void wait_for_answers();
  // The stream holds input read ahead of the socket: read again once the worker has run
  // what is due (posted; no readiness wait would end for it).
  void read_soon();
  void on_ready();
  // The messages read so far; `arrived`: when the newest of them came, by the kernel's
  // stamp (`now` where the stream has none).
  bool take_messages(std::uint64_t now, std::uint64_t arrived);
  // Counts an answer on the connection (answers per connection, first query + set-up).
  void count_answer(const completion& c, std::uint64_t now, std::uint64_t arrived);
  slot_table::slot& next_query(std::uint64_t now);
  // Writes `batch` queries in one gathered write; the channel keeps what the stream did not
  // take. False if the connection died.
  bool write_queries(std::uint64_t now, unsigned batch);
  // Waits for what a write left to do. False if the connection died.
  bool after_write(stream_io r);

  const stream_transport& transport_;
  std::unique_ptr<stream_socket> socket_;
  message_channel channel_;
  std::unique_ptr<byte_stream> spare_stream_;  // the last connection's, closed
  std::unique_ptr<tls_ticket> ticket_;
  std::array<std::array<std::uint8_t, frame_prefix_size + 2>, max_gather> heads_{};
  conn_state state_ = conn_state::idle;
  std::uint64_t generation_ = 0;
  connection_tally tally_;
  std::uint64_t handshake_started_ns_ = 0;
  // The connection's last sign of use: established, a query sent, the socket ready (an
  // answer read). close_if_idle measures from it.
  std::uint64_t last_activity_ns_ = 0;
  std::uint64_t connections_made_ = 0;
  std::int32_t keepalive_timeout_ = -1;  // the server's last TIMEOUT (100 ms units); -1: none
  // Coalescing: messages taken since the last wake-up, and a low estimate of the answers'
  // latency (follows a lower latency at once, a higher one slowly).
  unsigned taken_since_wakeup_ = 0;
  std::uint64_t latency_low_ns_ = 0;
  bool delay_pending_ = false;  // the worker will call read_delayed()
  bool draining_ = false;       // in read_delayed(): read every record that came
  bool read_posted_ = false;    // read_soon() is pending
  bool waiting_read_ = false;
  bool waiting_write_ = false;
  bool in_setup_ = false;       // counted in the worker's set-ups in flight
  bool early_ = false;          // early data went on this connection, not judged yet
  bool early_counted_ = false;  // ... with queries, on a counted connection
  // A deferred Fast Open connection whose SYN-ACK has not come yet: it is neither opened
  // nor its connect latency known; the first readiness after it tells (confirm_syn).
  bool syn_pending_ = false;
  std::uint64_t syn_sent_ns_ = 0;  // when the write that sent that SYN returned

  unsigned failed_in_a_row_ = 0;  // connects/handshakes failed since the last success
};

}  // namespace dnstransport::detail
