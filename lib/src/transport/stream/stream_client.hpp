#pragma once
// Internal: the client of the stream transports: one driver of a client's connections over a
// byte stream (plain TCP or TLS: whichever the run's stream_connector opens), with the
// protocol on them in its session (stream_session.hpp): DNS messages with their length
// (RFC 7766, RFC 7858: dns_stream_session.hpp) or HTTP/2 (DoH, RFC 8484). The driver keeps up
// to `outstanding` queries in flight on its connection and replaces the connection after
// `queries_per_connection` queries (or when the session refuses more).
//
// stream_client_connection.cpp: the connection's life cycle (connect, handshake, early data,
// failures, the server closing, close). stream_client.cpp: readiness, reads and writes
// handed to the session, answers counted, and the transport's factories.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include <boost/asio/socket_base.hpp>

#include "engine/connection_life.hpp"
#include "engine/engine.hpp"
#include "transport/stream/message_channel.hpp"
#include "transport/stream/stream_session.hpp"
#include "transport/stream/stream_socket.hpp"
#include "transport/stream/stream_transport.hpp"
#include "transport/tls/tls_backend.hpp"

namespace dnstransport::detail {

// The driver of a client's stream connections; the protocol on them is its session
// (stream_session.hpp): DNS messages with their length, or HTTP/2 (DoH). The public calls
// below the client_base overrides are the session's way to the driver.
class stream_client final : public client_base {
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

  // The protocol on every connection of this client; set once, before start().
  void set_session(std::unique_ptr<stream_session> session) noexcept {
    session_ = std::move(session);
  }

  void start() override;
  void tick(std::uint64_t now) override;
  void abandon() override;
  void read_delayed() override;

  static constexpr unsigned max_gather = 256;  // queries per write (2 pieces each, IOV_MAX is 1024)

  // Reads one wake-up makes at most: TLS clients read ahead, so the records of a peer that
  // keeps sending could otherwise be read on without the worker's timers ever running.
  static constexpr unsigned max_reads_per_wakeup = 64;

  // For the session: the connection's stream and the output it did not take yet.
  message_channel& channel() noexcept { return channel_; }
  const stream_settings& settings() const noexcept { return transport_.settings(); }
  using client_base::connections;
  using client_base::count_stray;
  using client_base::count_unexpected;
  using client_base::counts;
  using client_base::early_counts;
  using client_base::fail_exchange;
  using client_base::lose_on_close;
  using client_base::plan;
  using client_base::send_allowance;
  slot_table& slots() noexcept { return slots_; }
  std::span<std::uint8_t> scratch() noexcept { return owner_.scratch(0); }
  // Whether the connection counts in the connection figures (its set-up began after the
  // warm-up).
  bool counted() const noexcept { return life_.tally.counted; }
  bool established() const noexcept { return state_ == conn_state::established; }
  // Queries written now go as early data (0-RTT), before the handshake is done.
  bool in_early_data() const noexcept { return life_.early() && state_ == conn_state::handshaking; }
  // Queries that may go on this connection now: the send allowance, and what is left of
  // queries_per_connection.
  std::uint64_t connection_allowance(std::uint64_t now) noexcept {
    return std::min<std::uint64_t>(send_allowance(now),
                                   life_.budget_left(settings().queries_per_connection));
  }
  // Takes the next query for this connection; the session sends it.
  slot_table::slot& next_query(std::uint64_t now) noexcept {
    slot_table::slot& s = take_slot(now);
    life_.sent(s, now);
    if (s.counted && in_early_data()) ++early_counts().queries_in_early_data;
    return s;
  }
  // Undoes next_query for a query the session could not send.
  void unsend(slot_table::slot& s) noexcept {
    return_slot(s);
    life_.unsent();
  }
  // A message read (DNS length framing): matched by its id, timed to `arrived`.
  void take_message(std::span<const std::uint8_t> message, std::uint64_t now,
                    std::uint64_t arrived) {
    count_answer(on_message(message, now, false, arrived), now, arrived);
  }
  // The answer of the query with `id`, known by its stream (DoH: sent with id 0).
  void take_answer(std::uint16_t id, std::span<const std::uint8_t> message, std::uint64_t now,
                   std::uint64_t arrived) {
    count_answer(on_answer(id, message, now, 0, arrived), now, arrived != 0 ? arrived : now);
  }
  // Waits for what a write left to do. False if the connection died.
  bool after_write(stream_io r);
  // Reading has to wait for writability (TLS).
  void wait_write() { wait(boost::asio::socket_base::wait_write); }
  // The stream holds input read ahead of the socket: read again once the worker has run
  // what is due (posted; no readiness wait would end for it).
  void read_soon();
  // In read_delayed(): read every record that came during the delay.
  bool draining() const noexcept { return draining_; }
  // The server ended the connection: EOF (or close_notify), or a reset/error.
  void server_closed(bool reset);
  // We end the connection because the server broke the protocol on it (the session counted
  // the cause); its queries in flight are lost on close.
  void close_broken();
  // A set-up that failed above TCP, counted by `cause` ("tls_certificate", "doh_no_h2").
  void fail_connection(const std::string& what, const std::string& cause,
                       const std::string& message);

 private:
  enum class conn_state { idle, connecting, handshaking, established };

  std::string handshake_name();

  // The connection has carried what it should: close it (and open the next). Only queries
  // on no connection (the session's waiting()) may be left; those go on this connection
  // unless it takes no more streams.
  bool connection_done() const noexcept {
    // (Every waiting query holds a slot: none in flight, none waiting.)
    const std::uint32_t waiting = slots_.empty() ? 0 : session_->waiting();
    return slots_.in_flight() == waiting &&
           (session_->refuses_queries() ||
            (waiting == 0 && life_.spent(settings().queries_per_connection, false)));
  }
  // Queries may go on a connection now: new ones, or ones waiting to go again.
  bool has_work(std::uint64_t now) noexcept {
    return send_allowance(now) > 0 || session_->waiting() > 0;
  }
  // The handshake is done: the session starts sending.
  void on_established(std::uint64_t now);
  // The connection's periodic work (tick, before the session's).
  void tick_connection(std::uint64_t now);

  // The connection's life cycle (stream_client_connection.cpp).
  void connect(std::uint64_t now);
  void on_connected(std::uint64_t now);
  // A deferred Fast Open connection became ready: counts it opened once established, or
  // fails it (false) when the SYN was refused.
  bool confirm_syn(std::uint64_t now);
  // The stream's own set-up above TCP (TLS); a stream without one is ready at once.
  void handshake(std::uint64_t now);
  // A connect (or socket set-up) that failed with `error`, counted by its errno name.
  void fail_connection(const std::string& what, int error);
  // TLS 1.3 0-RTT, when the stream resumes a ticket that allows it (--early-data): the first
  // queries go with the ClientHello (the session's fill_early). False when the connection
  // died doing so.
  bool send_early(std::uint64_t now);
  // The handshake (`step`) is done at `now`: counted, and the connection established (with
  // early data the server refused, the session sends it again). False when the connection
  // died doing so.
  bool finish_handshake(std::uint64_t now, const handshake_step& step);
  void connection_failed();
  // We end the connection: after queries_per_connection, at the end of the run, or on abandon.
  void close(bool count);
  // Closes the established connection (as close does, uncounted) when it has had nothing in
  // flight, nothing waiting to be written and no query due since `idle_ns` before `now`;
  // true if it did. The caller counts why (--idle: closed_idle; --honour-keepalive:
  // closed_idle_keepalive), not as closed_by_client. The next query due opens
  // a new connection.
  bool close_if_idle(std::uint64_t now, std::uint64_t idle_ns);
  void drop_socket(bool abortive = false);

  // Readiness and the queries' I/O (stream_client.cpp).
  void wait(boost::asio::socket_base::wait_type type);
  void wait_ended(bool reading, std::uint64_t generation, bool ok);
  void arm_read() { wait(boost::asio::socket_base::wait_read); }
  void on_ready();
  // After the established connection's reads: waits for readability, or with coalescing
  // (engine/read_coalescing.hpp) reads again after a delay.
  void wait_for_answers();
  // Counts an answer on the connection (answers per connection, first query + set-up).
  // (Here, not in a .cpp: the sessions' answer loops inline it.)
  void count_answer(const completion& c, std::uint64_t now, std::uint64_t arrived) noexcept {
    if (!c.matched) return;
    life_.last_activity_ns = now;
    if (c.keepalive_timeout >= 0) keepalive_timeout_ = c.keepalive_timeout;
    count_on_connection(life_.tally, c, arrived > life_.tally.started_ns ? arrived : now);
  }

  const stream_transport& transport_;
  std::unique_ptr<stream_socket> socket_;
  message_channel channel_;
  std::unique_ptr<byte_stream> spare_stream_;  // the last connection's, closed
  std::unique_ptr<tls_ticket> ticket_;
  std::unique_ptr<stream_session> session_;
  conn_state state_ = conn_state::idle;
  std::uint64_t generation_ = 0;
  // The connection's life, counted as the DoQ client counts its own (its last sign of use,
  // which close_if_idle measures from: established, a query sent, the socket ready).
  connection_life life_{*this};
  std::uint64_t handshake_started_ns_ = 0;
  std::uint64_t connections_made_ = 0;
  std::int32_t keepalive_timeout_ = -1;  // the server's last TIMEOUT (100 ms units); -1: none
  bool delay_pending_ = false;           // the worker will call read_delayed()
  bool draining_ = false;                // in read_delayed(): read every record that came
  bool read_posted_ = false;             // read_soon() is pending
  bool waiting_read_ = false;
  bool waiting_write_ = false;
  // A deferred Fast Open connection whose SYN-ACK has not come yet: it is neither opened
  // nor its connect latency known; the first readiness after it tells (confirm_syn).
  bool syn_pending_ = false;
};

}  // namespace dnstransport::detail
