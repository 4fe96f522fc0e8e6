// What a kept connection's life counts (connection_life.hpp).

#include "engine/connection_life.hpp"

#include "engine/engine.hpp"

namespace dnstransport::detail {

bool connection_life::begin(std::uint64_t now) noexcept {
  if (!client_.owner_.begin_connection_setup()) return false;
  in_setup_ = true;
  client_.begin_connection(tally, now);
  last_activity_ns = now;
  early_ = false;
  early_counted_ = false;
  return true;
}

void connection_life::end_setup() noexcept {
  if (in_setup_) client_.owner_.end_connection_setup();
  in_setup_ = false;
}

void connection_life::opened(std::uint64_t now, bool connect_latency) noexcept {
  if (!tally.counted) return;
  connection_counters& c = client_.connections();
  ++c.opened;
  if (connect_latency) c.connect_latency.record(now - tally.started_ns);
}

void connection_life::handshake_done(std::uint64_t since, std::uint64_t now,
                                     bool resumed) noexcept {
  if (!tally.counted) return;
  connection_counters& c = client_.connections();
  c.handshake_latency.record(now - since);
  ++(resumed ? c.handshakes_resumed : c.handshakes_full);
}

void connection_life::failed(const std::string& cause, const std::string& message) {
  if (tally.counted) {
    ++client_.connections().failed;
    client_.connections().record_failure(cause, message);
  }
  count_failure();
}

void connection_life::failed(const char* what, int error) {
  if (tally.counted) {
    ++client_.connections().failed;
    client_.connections().record_socket_error(what, error);
  }
  count_failure();
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

bool connection_life::early_judged(bool accepted) noexcept {
  early_ = false;
  if (early_counted_)
    ++(accepted ? client_.early_counts().accepted : client_.early_counts().rejected);
  return accepted;
}

void connection_life::closed_by_us(bool was_open, bool count) noexcept {
  if (count && was_open && tally.counted) ++client_.connections().closed_by_client;
}

}  // namespace dnstransport::detail
