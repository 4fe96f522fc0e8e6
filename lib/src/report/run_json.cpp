// A run's result as JSON (the run document, and each repeat of a sweep's points) and back:
// what was run, the counts of every group (written and read from their descriptions), the
// histograms, timeline, server usage and per-rank figures. Files written by older versions
// read with what they lack as zero.
#include "report/json_io.hpp"
#include "report/run_json_parts.hpp"

#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include <dnstransport/error.hpp>
#include <dnstransport/message.hpp>
#include <dnstransport/report.hpp>

namespace dnstransport::detail {

namespace json = boost::json;

json::object run_result_to_json(const run_result& r) {
  json::object rcodes;
  json::object http_failures;
  for (const auto& [cause, n] : r.http_failures) http_failures[cause] = n;
  for (unsigned i = 0; i < r.rcodes.size(); ++i) {
    if (r.rcodes[i] != 0) rcodes[rcode_name(i)] = r.rcodes[i];
  }
  json::array warnings;
  for (const auto& w : r.warnings) warnings.push_back(json::string(w));
  const double per_million =
      r.responses_received > 0
          ? r.client_cpu_seconds * 1e6 / static_cast<double>(r.responses_received)
          : 0;
  // What was run first, then what it measured.
  json::object out{{"schema", run_schema}, {"tool_version", library_version()}};
  write_fields(out, r, run_setting_fields);
  json::object measured{
      {"transport", transport_name(r.transport)},
      {"arrivals", arrival_mode_name(r.arrivals)},
      {"open_loop", r.open_loop()},
      {"query_set", {{"origin", r.query_origin}, {"count", r.query_count_in_set}}},
      {"capture", capture_to_json(r.capture)},
      {"queries_scheduled", r.queries_scheduled()},
      {"answered_percent", stable(r.answered_percent())},
      {"http_failures", std::move(http_failures)},
      {"quic_failures", counts_to_json(r.quic_failures)},
      {"rcodes", std::move(rcodes)},
      {"client_cpu_seconds_per_million", stable(per_million)},
      {"generator", generator_stats_to_json(r)},
      {"interrupted", r.interrupted},
      {"latency_ns", histogram_to_json(r.latency)},
      {"send_lag_ns", histogram_to_json(r.send_lag)},
      {"first_query_latency_ns", histogram_to_json(r.first_query_latency)},
      {"connect_latency_ns", histogram_to_json(r.connect_latency)},
      {"handshake_latency_ns", histogram_to_json(r.handshake_latency)},
      {"connections", connection_stats_to_json(r.connections)},
      {"handshakes", {{"full", r.handshakes_full}, {"resumed", r.handshakes_resumed}}},
      {"queries_per_connection_achieved", stable(r.queries_per_connection_achieved())},
      {"connections_per_second", stable(r.connections_per_second())},
      {"handshakes_per_query", stable(r.handshakes_per_query())},
      {"interval_seconds", stable(r.interval_seconds)},
      {"timeline", timeline_to_json(r.timeline)},
      {"warnings", std::move(warnings)},
  };
  for (auto& field : measured) out.emplace(field.key(), std::move(field.value()));
  write_fields(out, r, run_figure_fields);
  write_counts<query_counts>(out, r);
  if (traits_of(r.transport).has_tls) out["early_data"] = early_data_to_json(r.early_data);
  if (traits_of(r.transport).over_quic) out["quic"] = quic_stats_to_json(r.quic);
  if (r.edns.requested()) out["edns"] = edns_stats_to_json(r.edns, r.responses_received);
  if (r.client_subnet.requested()) {
    out["client_subnet"] = client_subnet_to_json(r.client_subnet, r.responses_received);
  }
  if (r.server_usage.monitored()) out["server_usage"] = server_stats_to_json(r.server_usage);
  if (!r.ranks.empty()) {
    out["ranks"] = r.ranks.size();
    json::array members;
    for (const auto& m : r.ranks) {
      json::object member;
      write_fields(member, m, rank_fields);
      members.push_back(std::move(member));
    }
    out["per_rank"] = std::move(members);
  }
  return out;
}

namespace {

// The run's settings: what was run, on which queries, on what schedule.
void read_settings(const json::object& o, run_result& r) {
  read_fields(o, r, run_setting_fields);
  read_fields(o, r, run_figure_fields);
  r.transport = read_transport(string_at(o, "transport"));
  const auto& set = object_at(o, "query_set");
  r.query_origin = string_at(set, "origin");
  r.query_count_in_set = count_at(set, "count");
  // A count the file does not have (written before it was counted) is zero.
  read_counts<query_counts>(o, r);
  // Results written before pcap input have no "capture"; null: not from a capture.
  if (const auto* capture = o.if_contains("capture"); capture != nullptr && capture->is_object()) {
    r.capture = capture_from_json(capture->get_object());
  }
  if (const auto* mode = o.if_contains("arrivals"); mode != nullptr && mode->is_string()) {
    const auto parsed = parse_arrival_mode(mode->get_string());
    if (!parsed) throw std::invalid_argument("unknown \"arrivals\"");
    r.arrivals = *parsed;
  }
}

// What the run measured beyond the counts: failures by cause, the groups of figures,
// histograms, timeline, connections, warnings and the ranks.
void read_measured(const json::object& o, run_result& r) {
  if (const auto* failures = o.if_contains("http_failures"); failures && failures->is_object()) {
    for (const auto& [cause, n] : failures->get_object()) {
      r.http_failures[std::string(cause)] = json::value_to<std::uint64_t>(n);
    }
  }
  counts_from_json(o, "quic_failures", r.quic_failures);
  if (const auto* quic = o.if_contains("quic"); quic && quic->is_object()) {
    r.quic = quic_stats_from_json(quic->get_object());
    r.early_data = early_data_of_older_doq(quic->get_object());
  }
  if (const auto* early = o.if_contains("early_data"); early && early->is_object()) {
    r.early_data = early_data_from_json(early->get_object());
  }
  if (const auto* edns = o.if_contains("edns"); edns && edns->is_object()) {
    r.edns = edns_stats_from_json(edns->get_object());
  }
  if (const auto* subnet = o.if_contains("client_subnet"); subnet && subnet->is_object()) {
    r.client_subnet = client_subnet_from_json(subnet->get_object());
  }
  if (const auto* server = o.if_contains("server_usage"); server && server->is_object()) {
    r.server_usage = server_stats_from_json(server->get_object());
  }
  for (unsigned i = 0; i < r.rcodes.size(); ++i) {
    if (const auto* n = object_at(o, "rcodes").if_contains(rcode_name(i))) {
      r.rcodes[i] = json::value_to<std::uint64_t>(*n);
    }
  }
  // Results written before the generator counted its own I/O have none: zero.
  if (const auto* generator = o.if_contains("generator"); generator && generator->is_object()) {
    r.generator = generator_stats_from_json(generator->get_object());
  }
  const auto& interrupted = at(o, "interrupted");
  r.interrupted = interrupted.is_bool() && interrupted.get_bool();
  r.latency = histogram_from_json(at(o, "latency_ns"));
  if (o.contains("send_lag_ns")) r.send_lag = histogram_from_json(at(o, "send_lag_ns"));
  if (o.contains("timeline")) {
    r.interval_seconds = number_at(o, "interval_seconds");
    r.timeline = timeline_from_json(at(o, "timeline"));
  }
  r.first_query_latency = histogram_from_json(at(o, "first_query_latency_ns"));
  r.connect_latency = histogram_from_json(at(o, "connect_latency_ns"));
  r.handshake_latency = histogram_from_json(at(o, "handshake_latency_ns"));
  r.connections = connection_stats_from_json(object_at(o, "connections"));
  // Files from before connections.answered: every answer rode on a counted connection.
  if (!object_at(o, "connections").contains("answered")) {
    r.connections.answered = r.responses_received;
  }
  const auto& handshakes = object_at(o, "handshakes");
  r.handshakes_full = count_at(handshakes, "full");
  r.handshakes_resumed = count_at(handshakes, "resumed");
  const auto& warnings = at(o, "warnings");
  if (warnings.is_array()) {
    for (const auto& w : warnings.get_array()) {
      if (w.is_string()) r.warnings.emplace_back(w.get_string());
    }
  }
  if (o.contains("per_rank")) {
    for (const auto& v : array_at(o, "per_rank")) {
      if (!v.is_object()) throw std::invalid_argument("a \"per_rank\" entry is not an object");
      const auto& m = v.get_object();
      rank_result rr;
      read_fields(m, rr, rank_fields);
      r.ranks.push_back(std::move(rr));
    }
  }
}

}  // namespace

run_result run_result_from_json_value(const json::value& value) {
  if (!value.is_object()) throw std::invalid_argument("the document is not a JSON object");
  const auto& o = value.get_object();
  const auto* schema = o.if_contains("schema");
  if (schema == nullptr || !schema->is_string()) {
    throw std::invalid_argument("no \"schema\" key: not a dnstransport run result");
  }
  if (schema->get_string() != run_schema) {
    throw std::invalid_argument(fmt::format("schema \"{}\" is not the supported \"{}\"",
                                            std::string_view(schema->get_string()), run_schema));
  }
  run_result r;
  read_settings(o, r);
  read_measured(o, r);
  return r;
}

}  // namespace dnstransport::detail

namespace dnstransport {

std::string to_json(const run_result& result) {
  return detail::pretty(detail::run_result_to_json(result));
}

run_result run_result_from_json(std::string_view text, std::string_view source_name) {
  boost::system::error_code ec;
  const auto value = boost::json::parse(text, ec);
  if (ec) throw setup_error(fmt::format("{}: not valid JSON: {}", source_name, ec.message()));
  try {
    return detail::run_result_from_json_value(value);
  } catch (const std::exception& e) {
    throw setup_error(fmt::format("{}: {}", source_name, e.what()));
  }
}

}  // namespace dnstransport
