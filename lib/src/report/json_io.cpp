#include "report/json_io.hpp"

#include <charconv>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include <dnstransport/message.hpp>
#include <dnstransport/report.hpp>

namespace dnstransport::detail {

namespace json = boost::json;

namespace {

const json::value& at(const json::object& object, std::string_view key) {
  const auto* found = object.if_contains(key);
  if (found == nullptr) throw std::invalid_argument(fmt::format("missing key \"{}\"", key));
  return *found;
}

void pretty_into(std::string& out, const json::value& value, int depth) {
  const std::string indent(static_cast<std::size_t>(depth + 1) * 2, ' ');
  const std::string closing(static_cast<std::size_t>(depth) * 2, ' ');
  if (value.is_object()) {
    const auto& object = value.get_object();
    if (object.empty()) {
      out += "{}";
      return;
    }
    out += "{\n";
    bool first = true;
    for (const auto& [key, member] : object) {
      if (!first) out += ",\n";
      first = false;
      out += indent;
      out += json::serialize(json::value(key));
      out += ": ";
      pretty_into(out, member, depth + 1);
    }
    out += "\n" + closing + "}";
  } else if (value.is_array()) {
    const auto& array = value.get_array();
    // Arrays of scalars or short pairs (histogram buckets) stay on one line each.
    const bool flat = std::all_of(array.begin(), array.end(), [](const json::value& v) {
      return !v.is_object() && !(v.is_array() && v.get_array().size() > 4);
    });
    if (array.empty()) {
      out += "[]";
      return;
    }
    if (flat && array.size() <= 8) {
      out += json::serialize(value);
      return;
    }
    out += "[\n";
    bool first = true;
    for (const auto& element : array) {
      if (!first) out += ",\n";
      first = false;
      out += indent;
      pretty_into(out, element, depth + 1);
    }
    out += "\n" + closing + "]";
  } else {
    out += json::serialize(value);
  }
}

// A count added after the first release: files written before it lack the key.
std::uint64_t count_or_zero(const json::object& object, std::string_view key) {
  return object.contains(key) ? count_at(object, key) : 0;
}

// Likewise for a number.
double number_or_zero(const json::object& object, std::string_view key) {
  return object.contains(key) ? number_at(object, key) : 0;
}

// Every described count of a group, under its name.
template <typename Counts>
void write_counts(json::object& out, const Counts& counts) {
  for (const auto& d : count_descriptions<Counts>) out[d.name] = counts.*d.member;
}

// Every described count of a group; one the file does not have (written before it was
// counted) is zero.
template <typename Counts>
void read_counts(const json::object& o, Counts& counts) {
  for (const auto& d : count_descriptions<Counts>) counts.*d.member = count_or_zero(o, d.name);
}

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

json::object counts_to_json(const std::map<std::string, std::uint64_t>& counts) {
  json::object o;
  for (const auto& [name, n] : counts) o[name] = n;
  return o;
}

void counts_from_json(const json::object& o, std::string_view key,
                      std::map<std::string, std::uint64_t>& counts) {
  if (const auto* found = o.if_contains(key); found && found->is_object()) {
    for (const auto& [name, n] : found->get_object()) {
      counts[std::string(name)] = json::value_to<std::uint64_t>(n);
    }
  }
}

json::object quic_stats_to_json(const quic_stats& q);
json::object early_data_to_json(const early_data_stats& e);
quic_stats quic_stats_from_json(const json::object& o);

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
json::object server_stats_to_json(const process_usage& s);
json::object generator_stats_to_json(const run_result& r);
generator_stats generator_stats_from_json(const json::object& o);
json::value capture_to_json(const std::optional<capture_summary>& capture);
capture_summary capture_from_json(const json::object& o);
process_usage server_stats_from_json(const json::object& o);
json::array timeline_to_json(const std::vector<timeline_row>& rows);
std::vector<timeline_row> timeline_from_json(const json::value& value);

}  // namespace

json::array ints_to_json(const std::vector<int>& values) {
  json::array out;
  for (const int v : values) out.emplace_back(v);
  return out;
}

std::vector<int> ints_from_json(const json::object& object, std::string_view key) {
  std::vector<int> values;
  if (const auto* found = object.if_contains(key); found && found->is_array()) {
    for (const auto& v : found->get_array()) values.push_back(json::value_to<int>(v));
  }
  return values;
}

double stable(double value) {
  return std::stod(fmt::format("{:.12g}", value));
}

double number_at(const json::object& object, std::string_view key) {
  const auto& v = at(object, key);
  if (v.is_double()) return v.get_double();
  if (v.is_int64()) return static_cast<double>(v.get_int64());
  if (v.is_uint64()) return static_cast<double>(v.get_uint64());
  throw std::invalid_argument(fmt::format("key \"{}\" is not a number", key));
}

std::uint64_t count_at(const json::object& object, std::string_view key) {
  const auto& v = at(object, key);
  if (v.is_uint64()) return v.get_uint64();
  if (v.is_int64() && v.get_int64() >= 0) return static_cast<std::uint64_t>(v.get_int64());
  throw std::invalid_argument(fmt::format("key \"{}\" is not a non-negative integer", key));
}

const json::object& object_at(const json::object& object, std::string_view key) {
  const auto& v = at(object, key);
  if (!v.is_object()) throw std::invalid_argument(fmt::format("key \"{}\" is not an object", key));
  return v.get_object();
}

std::string string_at(const json::object& object, std::string_view key) {
  const auto& v = at(object, key);
  if (!v.is_string()) throw std::invalid_argument(fmt::format("key \"{}\" is not a string", key));
  return std::string(v.get_string());
}

const json::array& array_at(const json::object& object, std::string_view key) {
  const auto& v = at(object, key);
  if (!v.is_array()) throw std::invalid_argument(fmt::format("key \"{}\" is not an array", key));
  return v.get_array();
}

bool bool_at(const json::object& object, std::string_view key) {
  const auto& v = at(object, key);
  if (!v.is_bool())
    throw std::invalid_argument(fmt::format("key \"{}\" is not true or false", key));
  return v.get_bool();
}

std::string pretty(const json::value& value) {
  std::string out;
  pretty_into(out, value, 0);
  out += '\n';
  return out;
}

json::object histogram_to_json(const latency_histogram& h) {
  json::array buckets;
  h.for_each_bucket([&](std::uint64_t lowest, std::uint64_t, std::uint64_t count) {
    buckets.push_back(json::array{lowest, count});
  });
  return {{"count", h.count()},         {"min", h.min()},
          {"mean", stable(h.mean())},   {"p50", h.percentile(50)},
          {"p90", h.percentile(90)},    {"p99", h.percentile(99)},
          {"p999", h.percentile(99.9)}, {"max", h.max()},
          {"sum", stable(h.sum())},     {"histogram", std::move(buckets)}};
}

latency_histogram histogram_from_json(const json::value& value) {
  if (!value.is_object()) throw std::invalid_argument("a latency histogram is not an object");
  const auto& o = value.get_object();
  latency_histogram h;
  const auto& buckets = at(o, "histogram");
  if (!buckets.is_array()) throw std::invalid_argument("\"histogram\" is not an array");
  for (const auto& bucket : buckets.get_array()) {
    if (!bucket.is_array() || bucket.get_array().size() != 2) {
      throw std::invalid_argument("a histogram bucket is not a [lowest, count] pair");
    }
    h.restore(json::value_to<std::uint64_t>(bucket.get_array()[0]),
              json::value_to<std::uint64_t>(bucket.get_array()[1]));
  }
  if (h.count() != count_at(o, "count")) {
    throw std::invalid_argument("histogram buckets do not add up to its count");
  }
  h.restore_stats(count_at(o, "min"), count_at(o, "max"), number_at(o, "sum"));
  return h;
}

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
  json::object out{
      {"schema", run_schema},
      {"tool_version", library_version()},
      {"label", r.label},
      {"server", r.server},
      {"port", r.port},
      {"transport", transport_name(r.transport)},
      {"tls_backend", r.tls_backend},
      {"clients", r.clients},
      {"outstanding", r.outstanding},
      {"threads", r.threads},
      {"queries_per_connection", r.queries_per_connection},
      {"rate", stable(r.rate)},
      {"client_rate", stable(r.client_rate)},
      {"idle_seconds", stable(r.idle_seconds)},
      {"coalesce_us", r.coalesce_us},
      {"arrivals", arrival_mode_name(r.arrivals)},
      {"open_loop", r.open_loop()},
      {"query_set", {{"origin", r.query_origin}, {"count", r.query_count_in_set}}},
      {"capture", capture_to_json(r.capture)},
      {"queries_scheduled", r.queries_scheduled()},
      {"answered_percent", stable(r.answered_percent())},
      {"http_failures", std::move(http_failures)},
      {"quic_failures", counts_to_json(r.quic_failures)},
      {"rcodes", std::move(rcodes)},
      {"elapsed_seconds", stable(r.elapsed_seconds)},
      {"qps", stable(r.qps)},
      {"client_cpu_seconds", stable(r.client_cpu_seconds)},
      {"client_cpu_seconds_per_million", stable(per_million)},
      {"max_thread_cpu_share", stable(r.max_thread_cpu_share)},
      {"client_rss_bytes", r.client_rss_bytes},
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
  write_counts<query_counts>(out, r);
  if (traits_of(r.transport).has_tls) out["early_data"] = early_data_to_json(r.early_data);
  if (traits_of(r.transport).over_quic) out["quic"] = quic_stats_to_json(r.quic);
  if (r.edns.requested()) out["edns"] = edns_stats_to_json(r.edns, r.responses_received);
  if (r.server_usage.monitored()) out["server_usage"] = server_stats_to_json(r.server_usage);
  if (!r.ranks.empty()) {
    out["ranks"] = r.ranks.size();
    json::array members;
    for (const auto& m : r.ranks) {
      members.push_back(json::object{
          {"rank", m.rank},
          {"host", m.host},
          {"reported", m.reported},
          {"interrupted", m.interrupted},
          {"clients", m.clients},
          {"queries_sent", m.queries_sent},
          {"responses_received", m.responses_received},
          {"elapsed_seconds", stable(m.elapsed_seconds)},
          {"qps", stable(m.qps)},
          {"client_cpu_seconds", stable(m.client_cpu_seconds)},
          {"max_thread_cpu_share", stable(m.max_thread_cpu_share)},
          {"client_rss_bytes", m.client_rss_bytes},
          {"client_bound", m.client_bound},
          {"first_failure", m.first_failure},
      });
    }
    out["per_rank"] = std::move(members);
  }
  return out;
}

namespace {

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
  // Results written before labels existed have none.
  if (const auto* label = o.if_contains("label"); label != nullptr && label->is_string()) {
    r.label = label->get_string();
  }
  r.server = string_at(o, "server");
  r.port = static_cast<std::uint16_t>(count_at(o, "port"));
  const auto transport = parse_transport(string_at(o, "transport"));
  if (!transport) throw std::invalid_argument("unknown \"transport\"");
  r.transport = *transport;
  r.tls_backend = string_at(o, "tls_backend");
  r.clients = static_cast<unsigned>(count_at(o, "clients"));
  r.outstanding = static_cast<unsigned>(count_at(o, "outstanding"));
  r.threads = static_cast<unsigned>(count_at(o, "threads"));
  r.queries_per_connection = count_at(o, "queries_per_connection");
  const auto& set = object_at(o, "query_set");
  r.query_origin = string_at(set, "origin");
  r.query_count_in_set = count_at(set, "count");
  // A count the file does not have (written before it was counted) is zero.
  read_counts<query_counts>(o, r);
  // Results written before pcap input have no "capture"; null: not from a capture.
  if (const auto* capture = o.if_contains("capture"); capture != nullptr && capture->is_object()) {
    r.capture = capture_from_json(capture->get_object());
  }
  // Files from before open-loop arrivals ran closed-loop and sent every query.
  if (const auto* rate = o.if_contains("rate"); rate != nullptr && rate->is_number()) {
    r.rate = number_at(o, "rate");
  }
  r.client_rate = number_or_zero(o, "client_rate");
  r.idle_seconds = number_or_zero(o, "idle_seconds");
  // Files from before coalesced receiving: off.
  r.coalesce_us = static_cast<unsigned>(count_or_zero(o, "coalesce_us"));
  if (const auto* mode = o.if_contains("arrivals"); mode != nullptr && mode->is_string()) {
    const auto parsed = parse_arrival_mode(mode->get_string());
    if (!parsed) throw std::invalid_argument("unknown \"arrivals\"");
    r.arrivals = *parsed;
  }
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
  if (const auto* server = o.if_contains("server_usage"); server && server->is_object()) {
    r.server_usage = server_stats_from_json(server->get_object());
  }
  for (unsigned i = 0; i < r.rcodes.size(); ++i) {
    if (const auto* n = object_at(o, "rcodes").if_contains(rcode_name(i))) {
      r.rcodes[i] = json::value_to<std::uint64_t>(*n);
    }
  }
  r.elapsed_seconds = number_at(o, "elapsed_seconds");
  r.qps = number_at(o, "qps");
  r.client_cpu_seconds = number_at(o, "client_cpu_seconds");
  r.max_thread_cpu_share = number_at(o, "max_thread_cpu_share");
  // Files from before client_rss_bytes: not measured.
  if (o.contains("client_rss_bytes")) r.client_rss_bytes = count_at(o, "client_rss_bytes");
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
      rr.rank = static_cast<unsigned>(count_at(m, "rank"));
      rr.host = string_at(m, "host");
      rr.reported = bool_at(m, "reported");
      rr.interrupted = bool_at(m, "interrupted");
      rr.clients = static_cast<unsigned>(count_at(m, "clients"));
      rr.queries_sent = count_at(m, "queries_sent");
      rr.responses_received = count_at(m, "responses_received");
      rr.elapsed_seconds = number_at(m, "elapsed_seconds");
      rr.qps = number_at(m, "qps");
      rr.client_cpu_seconds = number_at(m, "client_cpu_seconds");
      rr.max_thread_cpu_share = number_at(m, "max_thread_cpu_share");
      rr.client_rss_bytes = count_at(m, "client_rss_bytes");
      rr.client_bound = bool_at(m, "client_bound");
      rr.first_failure = string_at(m, "first_failure");
      r.ranks.push_back(std::move(rr));
    }
  }
  return r;
}

}  // namespace dnstransport::detail
