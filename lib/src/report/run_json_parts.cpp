// The parts of a run's JSON, each to its object and back: connection, 0-RTT, QUIC and
// generator counts (written and read from their descriptions), the answers' EDNS options,
// the server's usage, the timeline and the capture.
#include "report/run_json_parts.hpp"

#include <charconv>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace dnstransport::detail {

namespace json = boost::json;

namespace {

using run_field = field_description<run_result>;
// Files from before labels, open-loop rates, idle clients and coalescing lack them.
const run_field run_settings[] = {
    {"label", &run_result::label, true},
    {"server", &run_result::server},
    {"port", &run_result::port},
    {"tls_backend", &run_result::tls_backend},
    {"clients", &run_result::clients},
    {"outstanding", &run_result::outstanding},
    {"threads", &run_result::threads},
    {"queries_per_connection", &run_result::queries_per_connection},
    {"rate", &run_result::rate, true},
    {"client_rate", &run_result::client_rate, true},
    {"idle_seconds", &run_result::idle_seconds, true},
    {"coalesce_us", &run_result::coalesce_us, true},
};

// Files from before client_rss_bytes lack it: not measured.
const run_field run_figures[] = {
    {"elapsed_seconds", &run_result::elapsed_seconds},
    {"qps", &run_result::qps},
    {"client_cpu_seconds", &run_result::client_cpu_seconds},
    {"max_thread_cpu_share", &run_result::max_thread_cpu_share},
    {"client_rss_bytes", &run_result::client_rss_bytes, true},
    {"in_flight_max", &run_result::in_flight_max, true},
    {"source_addresses", &run_result::source_addresses, true},
    {"sources_per_client", &run_result::sources_per_client, true},
    {"proxy_protocol", &run_result::proxy_protocol, true},
    {"proxy_addresses", &run_result::proxy_addresses, true},
};

const field_description<rank_result> ranks[] = {
    {"rank", &rank_result::rank},
    {"host", &rank_result::host},
    {"reported", &rank_result::reported},
    {"interrupted", &rank_result::interrupted},
    {"clients", &rank_result::clients},
    {"queries_sent", &rank_result::queries_sent},
    {"responses_received", &rank_result::responses_received},
    {"elapsed_seconds", &rank_result::elapsed_seconds},
    {"qps", &rank_result::qps},
    {"client_cpu_seconds", &rank_result::client_cpu_seconds},
    {"max_thread_cpu_share", &rank_result::max_thread_cpu_share},
    {"client_rss_bytes", &rank_result::client_rss_bytes},
    {"client_bound", &rank_result::client_bound},
    {"first_failure", &rank_result::first_failure},
};

}  // namespace

const std::span<const field_description<run_result>> run_setting_fields{run_settings};
const std::span<const field_description<run_result>> run_figure_fields{run_figures};
const std::span<const field_description<rank_result>> rank_fields{ranks};

json::object connection_stats_to_json(const connection_stats& c) {
  json::object failures;
  for (const auto& [cause, n] : c.failures) failures[cause] = n;
  json::object out{{"concurrent_mean", stable(c.concurrent_mean)},
                   {"concurrent_max", c.concurrent_max},
                   {"failures", std::move(failures)},
                   {"first_failure", c.first_failure}};
  write_counts<connection_counts>(out, c);
  return out;
}

connection_stats connection_stats_from_json(const json::object& o) {
  connection_stats c;
  read_counts<connection_counts>(o, c);
  c.concurrent_mean = number_or_zero(o, "concurrent_mean");
  c.concurrent_max = count_or_zero(o, "concurrent_max");
  for (const auto& [cause, n] : object_at(o, "failures")) {
    c.failures[std::string(cause)] = json::value_to<std::uint64_t>(n);
  }
  c.first_failure = string_at(o, "first_failure");
  return c;
}

// The answers' EDNS options; present only in runs that asked for them.
json::object edns_stats_to_json(const edns_stats& e, std::uint64_t answers) {
  json::object sizes;
  for (const auto& [size, n] : e.padded_sizes) sizes[std::to_string(size)] = n;
  const double padded_percent =
      answers > 0 ? 100.0 * static_cast<double>(e.padded_answers) / static_cast<double>(answers)
                  : 0;
  return {{"keepalive", e.keepalive_sent},
          {"padding_block", e.padding_block},
          {"keepalive_answers", e.keepalive_answers},
          {"keepalive_timeout_min_seconds", stable(e.keepalive_min_seconds)},
          {"keepalive_timeout_max_seconds", stable(e.keepalive_max_seconds)},
          {"padded_answers", e.padded_answers},
          {"padded_percent", stable(padded_percent)},
          {"padded_sizes", std::move(sizes)}};
}

edns_stats edns_stats_from_json(const json::object& o) {
  edns_stats e;
  const auto& keepalive = at(o, "keepalive");
  e.keepalive_sent = keepalive.is_bool() && keepalive.get_bool();
  const std::uint64_t block = count_at(o, "padding_block");
  if (block > 0xffff) throw std::invalid_argument("\"padding_block\" over 65535");
  e.padding_block = static_cast<std::uint16_t>(block);
  e.keepalive_answers = count_at(o, "keepalive_answers");
  e.keepalive_min_seconds = number_at(o, "keepalive_timeout_min_seconds");
  e.keepalive_max_seconds = number_at(o, "keepalive_timeout_max_seconds");
  e.padded_answers = count_at(o, "padded_answers");
  for (const auto& [size, n] : object_at(o, "padded_sizes")) {
    std::uint32_t octets = 0;
    const auto [end, ec] = std::from_chars(size.data(), size.data() + size.size(), octets);
    if (ec != std::errc{} || end != size.data() + size.size()) {
      throw std::invalid_argument("\"padded_sizes\": a key is not a size in octets");
    }
    e.padded_sizes[octets] = json::value_to<std::uint64_t>(n);
  }
  return e;
}

// What the answers echoed of the queries' client subnets; present only in runs that sent one.
json::object client_subnet_to_json(const client_subnet_stats& c, std::uint64_t answers) {
  json::object scopes;
  for (const auto& [scope, n] : c.scope_prefixes) scopes[std::to_string(scope)] = n;
  const double echoed_percent =
      answers > 0 ? 100.0 * static_cast<double>(c.echoed) / static_cast<double>(answers) : 0;
  return {{"range", c.range},
          {"source_prefix", c.source_prefix},
          {"mode", c.mode},
          {"range_subnets", c.range_subnets},
          {"subnets", c.subnets},
          {"echoed", c.echoed},
          {"echoed_percent", stable(echoed_percent)},
          {"scope_prefixes", std::move(scopes)}};
}

client_subnet_stats client_subnet_from_json(const json::object& o) {
  client_subnet_stats c;
  c.range = string_at(o, "range");
  const std::uint64_t source = count_at(o, "source_prefix");
  if (source > 128) throw std::invalid_argument("\"source_prefix\" over 128");
  c.source_prefix = static_cast<unsigned>(source);
  c.mode = string_at(o, "mode");
  c.range_subnets = count_at(o, "range_subnets");
  c.subnets = count_at(o, "subnets");
  c.echoed = count_at(o, "echoed");
  for (const auto& [scope, n] : object_at(o, "scope_prefixes")) {
    unsigned prefix = 0;
    const auto [end, ec] = std::from_chars(scope.data(), scope.data() + scope.size(), prefix);
    if (ec != std::errc{} || end != scope.data() + scope.size() || prefix > 128) {
      throw std::invalid_argument("\"scope_prefixes\": a key is not a prefix length (0 to 128)");
    }
    c.scope_prefixes[prefix] = json::value_to<std::uint64_t>(n);
  }
  return c;
}

json::object server_stats_to_json(const process_usage& s) {
  json::array cgroups, exited_cgroups;
  for (const auto& c : s.cgroups) cgroups.push_back(json::string(c));
  for (const auto& c : s.exited_cgroups) exited_cgroups.push_back(json::string(c));
  return {{"pids", ints_to_json(s.pids)},
          {"cgroups", std::move(cgroups)},
          {"exited_cgroups", std::move(exited_cgroups)},
          {"command", s.command},
          {"command_pids", ints_to_json(s.command_pids)},
          {"cpu_measured", s.cpu_measured},
          {"cpu_seconds", stable(s.cpu_seconds())},
          {"cpu_user_seconds", stable(s.cpu_user_seconds)},
          {"cpu_system_seconds", stable(s.cpu_system_seconds)},
          {"cpu_per_1k_answers", stable(s.cpu_per_1k_answers)},
          {"cpu_share", stable(s.cpu_share)},
          {"rss_max_bytes", s.rss_max_bytes},
          {"fds_max", s.fds_max},
          {"threads_max", s.threads_max},
          {"connections_max", s.connections_max},
          {"samples", s.samples},
          {"exited", ints_to_json(s.exited)}};
}

process_usage server_stats_from_json(const json::object& o) {
  process_usage s;
  s.pids = ints_from_json(o, "pids");
  if (const auto* command = o.if_contains("command"); command && command->is_string()) {
    s.command = command->get_string();
  }
  s.command_pids = ints_from_json(o, "command_pids");
  for (const char* key : {"cgroups", "exited_cgroups"}) {
    const auto* list = o.if_contains(key);
    if (list == nullptr || !list->is_array()) continue;
    for (const auto& c : list->get_array()) {
      if (c.is_string()) {
        (std::string_view(key) == "cgroups" ? s.cgroups : s.exited_cgroups)
            .emplace_back(c.get_string());
      }
    }
  }
  s.cpu_user_seconds = number_at(o, "cpu_user_seconds");
  s.cpu_system_seconds = number_at(o, "cpu_system_seconds");
  s.cpu_per_1k_answers = number_at(o, "cpu_per_1k_answers");
  if (const auto* measured = o.if_contains("cpu_measured"); measured && measured->is_bool()) {
    s.cpu_measured = measured->get_bool();
  }
  s.cpu_share = number_at(o, "cpu_share");
  s.rss_max_bytes = count_at(o, "rss_max_bytes");
  s.fds_max = count_at(o, "fds_max");
  s.threads_max = count_at(o, "threads_max");
  s.connections_max = count_at(o, "connections_max");
  s.samples = count_at(o, "samples");
  s.exited = ints_from_json(o, "exited");
  return s;
}

json::array timeline_to_json(const std::vector<timeline_row>& rows) {
  json::array out;
  for (const auto& t : rows) {
    json::object row{{"start_seconds", stable(t.start_seconds)},
                     {"duration_seconds", stable(t.duration_seconds)},
                     {"sent", t.sent},
                     {"answered", t.answered},
                     {"lost", t.lost},
                     {"failed", t.failed},
                     {"not_sent", t.not_sent},
                     {"qps", stable(t.qps)},
                     {"p50_ms", stable(t.p50_ms)},
                     {"p99_ms", stable(t.p99_ms)},
                     {"connections_open", t.connections_open},
                     {"connections_opened", t.connections_opened},
                     {"handshakes", t.handshakes}};
    if (t.server_cpu_seconds >= 0) {
      row["server_cpu_seconds"] = stable(t.server_cpu_seconds);
      row["server_rss_bytes"] = t.server_rss_bytes;
    }
    out.push_back(std::move(row));
  }
  return out;
}

std::vector<timeline_row> timeline_from_json(const json::value& value) {
  std::vector<timeline_row> rows;
  if (!value.is_array()) throw std::invalid_argument("\"timeline\" is not an array");
  for (const auto& v : value.get_array()) {
    if (!v.is_object()) throw std::invalid_argument("a \"timeline\" row is not an object");
    const auto& o = v.get_object();
    timeline_row t;
    t.start_seconds = number_at(o, "start_seconds");
    t.duration_seconds = number_at(o, "duration_seconds");
    t.sent = count_at(o, "sent");
    t.answered = count_at(o, "answered");
    t.lost = count_at(o, "lost");
    t.failed = count_at(o, "failed");
    t.not_sent = count_at(o, "not_sent");
    t.qps = number_at(o, "qps");
    t.p50_ms = number_at(o, "p50_ms");
    t.p99_ms = number_at(o, "p99_ms");
    t.connections_open = count_at(o, "connections_open");
    t.connections_opened = count_at(o, "connections_opened");
    t.handshakes = count_at(o, "handshakes");
    if (o.contains("server_cpu_seconds")) {
      t.server_cpu_seconds = number_at(o, "server_cpu_seconds");
      t.server_rss_bytes = count_at(o, "server_rss_bytes");
    }
    rows.push_back(t);
  }
  return rows;
}

json::object generator_stats_to_json(const run_result& r) {
  json::object out{{"sleeps_per_answer", stable(r.sleeps_per_answer())},
                   {"wakeups_per_answer", stable(r.wakeups_per_answer())},
                   {"syscalls_per_answer", stable(r.syscalls_per_answer())}};
  write_counts(out, r.generator);
  return out;
}

generator_stats generator_stats_from_json(const json::object& o) {
  generator_stats g;
  read_counts(o, g);
  return g;
}

json::object early_data_to_json(const early_data_stats& e) {
  json::object out;
  write_counts(out, e);
  return out;
}

early_data_stats early_data_from_json(const json::object& o) {
  early_data_stats e;
  read_counts(o, e);
  return e;
}

// Results written before DoT and DoH had 0-RTT kept DoQ's figures in "quic": the connection
// counts with an "early_data_" prefix, the query counts under today's names.
early_data_stats early_data_of_older_doq(const json::object& quic) {
  early_data_stats e = early_data_from_json(quic);
  e.offered = count_or_zero(quic, "early_data_offered");
  e.accepted = count_or_zero(quic, "early_data_accepted");
  e.rejected = count_or_zero(quic, "early_data_rejected");
  return e;
}

json::object quic_stats_to_json(const quic_stats& q) {
  json::object out{{"closes", counts_to_json(q.closes)},
                   {"smoothed_rtt_ms", stable(q.smoothed_rtt_ms)},
                   {"min_rtt_ms", stable(q.min_rtt_ms)},
                   {"mean_cwnd_bytes", stable(q.mean_cwnd_bytes)}};
  write_counts<quic_counts>(out, q);
  return out;
}

quic_stats quic_stats_from_json(const json::object& o) {
  quic_stats q;
  read_counts<quic_counts>(o, q);
  counts_from_json(o, "closes", q.closes);
  q.smoothed_rtt_ms = number_at(o, "smoothed_rtt_ms");
  q.min_rtt_ms = number_at(o, "min_rtt_ms");
  q.mean_cwnd_bytes = number_at(o, "mean_cwnd_bytes");
  return q;
}

json::value capture_to_json(const std::optional<capture_summary>& capture) {
  if (!capture) return nullptr;
  const pcap_counts& n = capture->counts;
  return json::object{
      {"clients", capture->clients},
      {"queries", n.queries},
      {"span_seconds", stable(capture->span_seconds)},
      {"replay", replay_mode_name(capture->replay)},
      {"speed", stable(capture->speed)},
      {"packets", n.packets},
      {"responses", n.responses},
      {"other_dns", n.other_dns},
      {"not_dns", n.not_dns},
      {"tcp_without_data", n.tcp_without_data},
      {"fragments", n.fragments},
      {"malformed", n.malformed},
      {"tcp_incomplete", n.tcp_incomplete},
  };
}

capture_summary capture_from_json(const json::object& o) {
  capture_summary c;
  c.clients = count_at(o, "clients");
  c.counts.queries = count_at(o, "queries");
  c.span_seconds = number_at(o, "span_seconds");
  const auto replay = parse_replay_mode(string_at(o, "replay"));
  if (!replay) throw std::invalid_argument("unknown capture \"replay\"");
  c.replay = *replay;
  c.speed = number_at(o, "speed");
  c.counts.packets = count_at(o, "packets");
  c.counts.responses = count_at(o, "responses");
  c.counts.other_dns = count_at(o, "other_dns");
  c.counts.not_dns = count_at(o, "not_dns");
  c.counts.tcp_without_data = count_at(o, "tcp_without_data");
  c.counts.fragments = count_at(o, "fragments");
  c.counts.malformed = count_at(o, "malformed");
  c.counts.tcp_incomplete = count_at(o, "tcp_incomplete");
  return c;
}

}  // namespace dnstransport::detail
