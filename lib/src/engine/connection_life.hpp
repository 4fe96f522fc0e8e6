#pragma once
// Internal: the life of the one connection a client keeps open at a time, which the stream
// clients (TCP, TLS, DoH) and the DoQ client live and count alike: a set-up within the
// worker's budget of set-ups in flight, begun after the warm-up or not (counted or not); the
// queries it carries (the per-connection budget) and the order of their answers
// (connection_tally); opened (in the worker's gauge of open connections too), its handshake
// full or resumed; 0-RTT offered, then accepted or rejected; established; failures, after a
// few of which in a row a client running to a query count gives up; the last sign of use,
// for the idle close; closed by us, by the server, for idleness or for the server's protocol
// error; and its end. How a
// transport connects, shakes hands and closes is its own; what these steps count is here,
// once.

#include <cstdint>
#include <string>

#include "engine/connection_tally.hpp"
#include "engine/slot_table.hpp"

namespace dnstransport::detail {

class client_base;

class connection_life {
 public:
  explicit connection_life(client_base& client) noexcept : client_(client) {}
  connection_life(const connection_life&) = delete;
  connection_life& operator=(const connection_life&) = delete;

  connection_tally tally;              // of the connection open (or being set up) now
  std::uint64_t last_activity_ns = 0;  // its last sign of use

  // Begins a set-up at `now`: false, and nothing begun, when the worker has too many in
  // flight (thousands of simultaneous handshakes would only time out against any one server;
  // try again on a later tick).
  bool begin(std::uint64_t now) noexcept;
  // The time since the set-up began.
  std::uint64_t setup_time(std::uint64_t now) const noexcept { return now - tally.started_ns; }
  // The set-up has taken the run's query timeout: it counts as failed.
  bool setup_timed_out(std::uint64_t now) const noexcept;
  // The set-up is over (usable, failed or abandoned): its place in the budget is free.
  void end_setup() noexcept;

  // The connection is open (in the worker's gauge of open connections), counted as opened;
  // over TCP with its connect's latency (QUIC's is opened by its handshake: none).
  void opened() noexcept;
  void opened(std::uint64_t connect_latency_ns) noexcept;
  // Its handshake, begun at `since`, completed at `now`.
  void handshake_done(std::uint64_t since, std::uint64_t now, bool resumed) noexcept;
  // Its set-up is over at `now`: its place in the budget is free and its use begins. With
  // 0-RTT sent, `early_accepted` is the server's verdict, counted and returned (false: the
  // queries sent early must go again); true without.
  bool established(std::uint64_t now, bool early_accepted) noexcept;
  // It carries queries: failures in a row count again from none.
  void usable() noexcept { failed_in_a_row_ = 0; }

  // Its set-up failed: counted under `cause` with `message`, or under the system call `what`
  // and its errno; running to a query count, the client gives up after a few in a row.
  void failed(const std::string& cause, const std::string& message);
  void failed(const char* what, int error);

  // 0-RTT: queries may go before the handshake ends; some went (offered, once, when any did
  // on a counted connection). A connection that could not send early after all drops it.
  void early_allowed() noexcept { early_ = true; }
  void early_sent() noexcept;
  bool early() const noexcept { return early_; }
  void early_dropped() noexcept { early_ = false; }

  // A query `s` goes on it at `now` (the first on it or not; a sign of use).
  void sent(slot_table::slot& s, std::uint64_t now) noexcept {
    s.first_on_connection = tally.sent == 0;
    ++tally.sent;
    last_activity_ns = now;
  }
  // ... or did not go after all.
  void unsent() noexcept { --tally.sent; }
  // Queries the per-connection budget (`limit`, 0: none) still allows on it.
  std::uint64_t budget_left(std::uint64_t limit) const noexcept {
    return limit == 0 ? UINT64_MAX : limit - (tally.sent < limit ? tally.sent : limit);
  }
  // It has carried its budget and nothing is in flight: time for a new one.
  bool spent(std::uint64_t limit, bool in_flight) const noexcept {
    return limit != 0 && tally.sent >= limit && !in_flight;
  }
  bool idle_for(std::uint64_t now, std::uint64_t idle_ns) const noexcept {
    return now >= last_activity_ns + idle_ns;
  }

  // We close it; counted as closed by us when it had opened and `count`.
  void closed_by_us(bool was_open, bool count) noexcept;
  // We closed it for idleness (--idle), or for the idle time the server advertised in its
  // edns-tcp-keepalive option (--honour-keepalive).
  void closed_idle(bool keepalive) noexcept;
  // The server ended it: closed, or reset.
  void closed_by_server(bool reset) noexcept;
  // We closed it because the server broke the protocol on it (HTTP/2, QUIC).
  void closed_protocol_error() noexcept;
  // It is gone, however it ended: out of the set-up budget and the gauge of open
  // connections, its 0-RTT with it.
  void ended() noexcept;

  static constexpr unsigned max_failed_in_a_row = 3;

 private:
  void count_failure() noexcept;
  // The server ended the connection: counted as a refused PROXY header when it began with
  // one, had connected, and had no answer yet.
  void ended_by_server() noexcept;

  client_base& client_;
  unsigned failed_in_a_row_ = 0;  // set-ups failed since the last usable connection
  bool in_setup_ = false;         // counted in the worker's set-ups in flight
  bool early_ = false;            // queries may go (or went) before the handshake ended
  bool early_counted_ = false;    // ... with queries, on a counted connection
  bool connected_ = false;        // its TCP connect completed
};

}  // namespace dnstransport::detail
