// What a kept connection's life counts (connection_life.hpp).

#include "engine/connection_life.hpp"

#include <cerrno>

#include "engine/engine.hpp"

namespace dnstransport::detail {

bool connection_life::begin(std::uint64_t now) noexcept {
  if (!client_.owner_.begin_connection_setup()) return false;
  in_setup_ = true;
  // A connection whose set-up began in the warm-up is left out of every connection figure.
  client_.begin_connection(tally, now);
  last_activity_ns = now;
  early_ = false;
  early_counted_ = false;
  connected_ = false;
  return true;
}

bool connection_life::setup_timed_out(std::uint64_t now) const noexcept {
  return setup_time(now) >= client_.plan().timeout_ns;
}

void connection_life::end_setup() noexcept {
  if (in_setup_) client_.owner_.end_connection_setup();
  in_setup_ = false;
}

void connection_life::opened() noexcept {
  connected_ = true;
  client_.connection_up();
  if (tally.counted) ++client_.connections().opened;
}

void connection_life::opened(std::uint64_t connect_latency_ns) noexcept {
  connected_ = true;
  client_.connection_up();
  if (!tally.counted) return;
  connection_counters& c = client_.connections();
  ++c.opened;
  c.connect_latency.record(connect_latency_ns);
}

void connection_life::handshake_done(std::uint64_t since, std::uint64_t now,
                                     bool resumed) noexcept {
  if (!tally.counted) return;
  connection_counters& c = client_.connections();
  c.handshake_latency.record(now - since);
  ++(resumed ? c.handshakes_resumed : c.handshakes_full);
}

bool connection_life::established(std::uint64_t now, bool early_accepted) noexcept {
  end_setup();
  last_activity_ns = now;
  if (!early_) return true;
  early_ = false;
  if (early_counted_) {
    ++(early_accepted ? client_.early_counts().accepted : client_.early_counts().rejected);
  }
  return early_accepted;
}

void connection_life::failed(const std::string& cause, const std::string& message) {
  if (tally.counted) {
    ++client_.connections().failed;
    client_.connections().record_failure(cause, message);
  }
  // Inside TLS the header goes after the handshake: a handshake the server ended never saw it.
  if (cause == "tls_closed" && !client_.plan().proxy_inside_tls) ended_by_server();
  count_failure();
}

void connection_life::failed(const char* what, int error) {
  if (tally.counted) {
    ++client_.connections().failed;
    client_.connections().record_socket_error(what, error);
  }
  if ((error == ECONNRESET || error == EPIPE) && !client_.plan().proxy_inside_tls) {
    ended_by_server();
  }
  count_failure();
}

void connection_life::ended_by_server() noexcept {
  if (tally.counted && connected_ && !tally.any_answered &&
      client_.plan().proxy_header(client_.index_) != nullptr) {
    ++client_.connections().proxy_refused;
  }
}

void connection_life::count_failure() noexcept {
  // Running to a query count, a server that fails every connection would keep the run going
  // forever: after a few failures in a row the client gives up.
  if (++failed_in_a_row_ >= max_failed_in_a_row && client_.plan().send_end_ns == UINT64_MAX) {
    client_.quota_ = 0;
  }
}

void connection_life::early_sent() noexcept {
  // Offered only when queries went early (at the end of a run none may have).
  early_counted_ = tally.counted && tally.sent > 0;
  if (early_counted_) ++client_.early_counts().offered;
}

void connection_life::closed_by_us(bool was_open, bool count) noexcept {
  if (count && was_open && tally.counted) ++client_.connections().closed_by_client;
}

void connection_life::closed_idle(bool keepalive) noexcept {
  if (!tally.counted) return;
  connection_counters& c = client_.connections();
  ++(keepalive ? c.closed_idle_keepalive : c.closed_idle);
}

void connection_life::closed_by_server(bool reset) noexcept {
  if (!tally.counted) return;
  connection_counters& c = client_.connections();
  ++(reset ? c.reset_by_server : c.closed_by_server);
  ended_by_server();
}

void connection_life::closed_protocol_error() noexcept {
  if (tally.counted) ++client_.connections().closed_protocol_error;
}

void connection_life::ended() noexcept {
  end_setup();
  client_.connection_down();
  early_ = false;
}

}  // namespace dnstransport::detail
