#include "engine/counters.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "util/socket_util.hpp"

namespace dnstransport::detail {

void query_counters::merge(const query_counters& o) {
  static_cast<query_counts&>(*this) += o;
  for (const auto& [cause, n] : o.http_failures) http_failures[cause] += n;
  for (const auto& [cause, n] : o.quic_failures) quic_failures[cause] += n;
  for (std::size_t i = 0; i < rcodes.size(); ++i) rcodes[i] += o.rcodes[i];
  keepalive_answers += o.keepalive_answers;
  keepalive_min = std::min(keepalive_min, o.keepalive_min);
  keepalive_max = std::max(keepalive_max, o.keepalive_max);
  padded_answers += o.padded_answers;
  for (const auto& [size, n] : o.padded_sizes) padded_sizes[size] += n;
  client_subnet_echoed += o.client_subnet_echoed;
  for (std::size_t i = 0; i < client_subnet_scopes.size(); ++i) {
    client_subnet_scopes[i] += o.client_subnet_scopes[i];
  }
  latency.merge(o.latency);
  send_lag.merge(o.send_lag);
  in_flight_max = std::max(in_flight_max, o.in_flight_max);
}

void connection_counters::record_failure(const std::string& cause, const std::string& message) {
  ++failures[cause];
  if (first_failure.empty()) first_failure = message;
}

void connection_counters::record_socket_error(const char* what, int error) {
  const std::string name = errno_name(error);
  record_failure(name, fmt::format("{}: {} ({})", what, std::strerror(error), name));
}

void connection_counters::merge(const connection_counters& o) {
  add_counts<connection_counts>(*this, o);
  handshakes_full += o.handshakes_full;
  handshakes_resumed += o.handshakes_resumed;
  open_ns += o.open_ns;
  for (const auto& [cause, n] : o.failures) failures[cause] += n;
  if (first_failure.empty()) first_failure = o.first_failure;
  first_query_latency.merge(o.first_query_latency);
  connect_latency.merge(o.connect_latency);
  handshake_latency.merge(o.handshake_latency);
}

void quic_counters::merge(const quic_counters& o) {
  add_counts<quic_counts>(*this, o);
  for (const auto& [code, n] : o.closes) closes[code] += n;
  smoothed_rtt_ns_sum += o.smoothed_rtt_ns_sum;
  if (o.min_rtt_ns != 0 && (min_rtt_ns == 0 || o.min_rtt_ns < min_rtt_ns))
    min_rtt_ns = o.min_rtt_ns;
  cwnd_sum += o.cwnd_sum;
}

}  // namespace dnstransport::detail
