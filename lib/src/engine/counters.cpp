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
  latency.merge(o.latency);
  send_lag.merge(o.send_lag);
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
  opened += o.opened;
  answered += o.answered;
  closed_by_client += o.closed_by_client;
  closed_idle_keepalive += o.closed_idle_keepalive;
  closed_idle += o.closed_idle;
  closed_by_server += o.closed_by_server;
  reset_by_server += o.reset_by_server;
  failed += o.failed;
  fastopen_data_in_syn += o.fastopen_data_in_syn;
  goaway += o.goaway;
  handshakes_full += o.handshakes_full;
  handshakes_resumed += o.handshakes_resumed;
  open_ns += o.open_ns;
  for (const auto& [cause, n] : o.failures) failures[cause] += n;
  if (first_failure.empty()) first_failure = o.first_failure;
  first_query_latency.merge(o.first_query_latency);
  connect_latency.merge(o.connect_latency);
  handshake_latency.merge(o.handshake_latency);
}

void early_data_counters::merge(const early_data_counters& o) {
  offered += o.offered;
  accepted += o.accepted;
  rejected += o.rejected;
  queries += o.queries;
  resent += o.resent;
}

void quic_counters::merge(const quic_counters& o) {
  retries += o.retries;
  version_negotiation += o.version_negotiation;
  stateless_resets += o.stateless_resets;
  streams_exhausted += o.streams_exhausted;
  stray_packets += o.stray_packets;
  for (const auto& [code, n] : o.closes) closes[code] += n;
  packets_sent += o.packets_sent;
  packets_received += o.packets_received;
  stream_packets_lost += o.stream_packets_lost;
  probe_timeouts += o.probe_timeouts;
  rtt_samples += o.rtt_samples;
  smoothed_rtt_ns_sum += o.smoothed_rtt_ns_sum;
  if (o.min_rtt_ns != 0 && (min_rtt_ns == 0 || o.min_rtt_ns < min_rtt_ns))
    min_rtt_ns = o.min_rtt_ns;
  cwnd_sum += o.cwnd_sum;
}

}  // namespace dnstransport::detail
