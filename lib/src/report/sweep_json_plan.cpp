// The sweep document's plan, target and machine sections.
#include "report/sweep_json.hpp"

#include <stdexcept>

#include <fmt/format.h>

#include "report/json_io.hpp"

namespace dnstransport::detail {

namespace json = boost::json;

namespace {

json::array strings_to_json(const std::vector<std::string>& values) {
  json::array out;
  for (const auto& v : values) out.emplace_back(v);
  return out;
}

std::vector<std::string> strings_from_json(const json::array& values) {
  std::vector<std::string> out;
  for (const auto& v : values) out.push_back(json::value_to<std::string>(v));
  return out;
}

json::value version_to_json(const std::optional<tls_version>& version) {
  if (!version) return nullptr;
  return json::string(tls_version_name(*version));
}

std::optional<tls_version> version_from_json(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return std::nullopt;
  const auto version = v->is_string() ? parse_tls_version(v->get_string()) : std::nullopt;
  if (!version) throw std::invalid_argument(fmt::format("key \"{}\" is not a TLS version", key));
  return version;
}

json::object tls_to_json(const tls_client_options& t) {
  return {{"backend", tls_backend_name(t.backend)},
          {"min_version", version_to_json(t.min_version)},
          {"max_version", version_to_json(t.max_version)},
          {"server_name", t.server_name},
          {"alpn", strings_to_json(t.alpn)},
          {"verify", t.verify},
          {"ca_file", t.ca_file.string()},
          {"priority", t.priority},
          {"resume", t.resume}};
}

tls_client_options tls_from_json(const json::object& o) {
  tls_client_options t;
  const auto backend = parse_tls_backend(string_at(o, "backend"));
  if (!backend) throw std::invalid_argument("unknown TLS \"backend\"");
  t.backend = *backend;
  t.min_version = version_from_json(o, "min_version");
  t.max_version = version_from_json(o, "max_version");
  t.server_name = string_at(o, "server_name");
  t.alpn = strings_from_json(array_at(o, "alpn"));
  t.verify = bool_at(o, "verify");
  t.ca_file = string_at(o, "ca_file");
  t.priority = string_at(o, "priority");
  t.resume = bool_at(o, "resume");
  return t;
}

// What is monitored, from a load's options or a target (monitor_pids, monitor_cgroups,
// monitor_command; older files may lack the last two).
monitor_settings monitor_settings_from_json(const json::object& o) {
  monitor_settings m;
  m.pids = ints_from_json(o, "monitor_pids");
  if (const auto* cgroups = o.if_contains("monitor_cgroups"); cgroups && cgroups->is_array()) {
    m.cgroups = strings_from_json(cgroups->get_array());
  }
  if (const auto* command = o.if_contains("monitor_command"); command && command->is_string()) {
    m.command = command->get_string();
  }
  return m;
}

json::object options_to_json(const load_spec& s) {
  return {
      {"outstanding", s.traffic.outstanding},
      {"count", s.traffic.count},
      {"timeout_seconds", stable(s.traffic.timeout_seconds)},
      {"warmup_seconds", stable(s.traffic.warmup_seconds)},
      {"rate", stable(s.traffic.rate)},
      {"client_rate", stable(s.traffic.client_rate)},
      {"idle_seconds", stable(s.connections.idle_seconds)},
      {"coalesce_us",
       s.generator.coalesce_us ? json::value(*s.generator.coalesce_us) : json::value("auto")},
      {"arrivals", arrival_mode_name(s.traffic.arrivals)},
      {"interval_seconds", stable(s.output.interval_seconds)},
      {"threads", s.generator.threads},
      {"cpus", ints_to_json(s.generator.cpus)},
      {"monitor_pids", ints_to_json(s.monitor.pids)},
      {"monitor_cgroups", strings_to_json(s.monitor.cgroups)},
      {"monitor_command", s.monitor.command},
      {"close", s.connections.close == close_mode::rst ? "rst" : "fin"},
      {"tcp_nodelay", s.connections.tcp_nodelay},
      {"tcp_fastopen", s.connections.tcp_fastopen},
      {"sources", strings_to_json(s.connections.sources)},
      {"source_mode", source_mode_name(s.connections.source_mode)},
      {"gather_writes", s.generator.gather_writes},
      {"tls", tls_to_json(s.tls)},
      {"doh", {{"path", s.target.doh_path}, {"method", doh_method_name(s.target.doh_request)}}}};
}

void options_from_json(const json::object& o, load_spec& s) {
  s.traffic.outstanding = static_cast<unsigned>(count_at(o, "outstanding"));
  s.traffic.count = count_at(o, "count");
  s.traffic.timeout_seconds = number_at(o, "timeout_seconds");
  s.traffic.warmup_seconds = number_at(o, "warmup_seconds");
  s.traffic.rate = number_at(o, "rate");
  // Files from before per-client rates and idle connections had neither.
  if (o.contains("client_rate")) s.traffic.client_rate = number_at(o, "client_rate");
  if (o.contains("idle_seconds")) s.connections.idle_seconds = number_at(o, "idle_seconds");
  // "auto": on where queries leave on a schedule (load.hpp). Files from before coalesced
  // receiving ran without it.
  if (const auto* c = o.if_contains("coalesce_us");
      c != nullptr && c->is_string() && c->get_string() == "auto") {
    s.generator.coalesce_us.reset();
  } else {
    s.generator.coalesce_us =
        o.contains("coalesce_us") ? static_cast<unsigned>(count_at(o, "coalesce_us")) : 0;
  }
  if (const auto* mode = o.if_contains("arrivals"); mode != nullptr && mode->is_string()) {
    s.traffic.arrivals = parse_arrival_mode(mode->get_string()).value_or(arrival_mode::constant);
  }
  if (o.contains("interval_seconds")) s.output.interval_seconds = number_at(o, "interval_seconds");
  s.generator.threads = static_cast<unsigned>(count_at(o, "threads"));
  s.generator.cpus.clear();
  for (const auto& c : array_at(o, "cpus")) s.generator.cpus.push_back(json::value_to<int>(c));
  s.monitor = monitor_settings_from_json(o);
  s.connections.close = string_at(o, "close") == "rst" ? close_mode::rst : close_mode::fin;
  s.connections.tcp_nodelay = bool_at(o, "tcp_nodelay");
  s.connections.tcp_fastopen = bool_at(o, "tcp_fastopen");
  s.connections.sources = strings_from_json(array_at(o, "sources"));
  // Files from before source ranges took the addresses in turn, as auto does with few.
  if (const auto* mode = o.if_contains("source_mode"); mode != nullptr && mode->is_string()) {
    s.connections.source_mode =
        parse_source_mode(mode->get_string()).value_or(source_mode::automatic);
  }
  s.generator.gather_writes = bool_at(o, "gather_writes");
  s.tls = tls_from_json(object_at(o, "tls"));
  if (const auto* doh = o.if_contains("doh"); doh != nullptr && doh->is_object()) {
    s.target.doh_path = string_at(doh->get_object(), "path");
    s.target.doh_request =
        parse_doh_method(string_at(doh->get_object(), "method")).value_or(doh_method::post);
  }
}

}  // namespace

void put_transport(json::object& into, const sweep_transport& transport) {
  into["transport"] = transport_name(transport.transport);
  into["tls_backend"] = transport.backend ? tls_backend_name(*transport.backend) : "";
  into["label"] = sweep_transport_name(transport);
}

sweep_transport transport_from_json(const json::object& from) {
  sweep_transport t{read_transport(string_at(from, "transport")), std::nullopt};
  if (traits_of(t.transport).has_tls) {
    t.backend = parse_tls_backend(string_at(from, "tls_backend"));
    if (!t.backend) throw std::invalid_argument("unknown \"tls_backend\"");
  }
  return t;
}

json::object plan_to_json(const sweep_result& result) {
  const sweep_plan& p = result.plan;
  json::array transports;
  for (const auto& t : p.transports) transports.emplace_back(sweep_transport_name(t));
  json::array clients;
  for (const unsigned c : p.clients) clients.emplace_back(c);
  json::array per_connection;
  for (const std::uint64_t n : p.queries_per_connection) per_connection.emplace_back(n);
  json::array distinct;
  for (const std::uint64_t n : p.distinct_sources) distinct.emplace_back(n);
  return {{"transports", std::move(transports)},
          {"clients", std::move(clients)},
          {"queries_per_connection", std::move(per_connection)},
          {"distinct_sources", std::move(distinct)},
          {"repeats", p.repeats},
          {"duration_seconds", stable(p.duration_seconds)},
          {"pause_seconds", stable(p.pause_seconds)},
          {"planned_points", result.planned_points},
          {"queries", {{"origin", result.query_origin}, {"count", result.query_count}}},
          {"options", options_to_json(p.base)},
          {"search", p.search ? json::value(search_criteria_to_json(p.search_criteria))
                              : json::value(nullptr)}};
}

void plan_from_json(const json::object& o, sweep_result& result) {
  sweep_plan& p = result.plan;
  p.transports.clear();
  for (const auto& t : array_at(o, "transports")) {
    const auto name = json::value_to<std::string>(t);
    read_transport(name.substr(0, name.find('-')));  // a program's own: known from its name
    p.transports.push_back(parse_sweep_transports(name, tls_backend::openssl).front());
  }
  p.clients.clear();
  for (const auto& c : array_at(o, "clients")) p.clients.push_back(json::value_to<unsigned>(c));
  p.queries_per_connection.clear();
  for (const auto& n : array_at(o, "queries_per_connection")) {
    p.queries_per_connection.push_back(json::value_to<std::uint64_t>(n));
  }
  // Files from before the distinct-sources axis had none.
  p.distinct_sources.clear();
  if (o.contains("distinct_sources")) {
    for (const auto& n : array_at(o, "distinct_sources")) {
      p.distinct_sources.push_back(json::value_to<std::uint64_t>(n));
    }
  }
  p.repeats = static_cast<unsigned>(count_at(o, "repeats"));
  p.duration_seconds = number_at(o, "duration_seconds");
  p.pause_seconds = number_at(o, "pause_seconds");
  result.planned_points = count_at(o, "planned_points");
  const auto& queries = object_at(o, "queries");
  result.query_origin = string_at(queries, "origin");
  result.query_count = count_at(queries, "count");
  options_from_json(object_at(o, "options"), p.base);
  // Sweeps written before sweep --search have no key.
  if (const auto* search = o.if_contains("search"); search != nullptr && search->is_object()) {
    p.search = true;
    p.search_criteria = search_criteria_from_json(search->get_object());
  }
}

namespace {

json::object ports_to_json(const sweep_ports& ports) {
  json::object out;
  for (const auto& traits : all_transports()) out[traits.name] = ports[traits.kind];
  return out;
}

// A transport missing from the file (DoH and DoQ in files older than them) keeps its
// default port.
void ports_from_json(const json::object& o, sweep_ports& ports) {
  for (const auto& traits : all_transports()) {
    if (o.contains(traits.name)) {
      const std::uint64_t port = count_at(o, traits.name);
      if (port > 65535) {
        throw std::invalid_argument(fmt::format("port {} of {} is not a port", port, traits.name));
      }
      ports[traits.kind] = static_cast<std::uint16_t>(port);
    }
  }
}

}  // namespace

json::object target_to_json(const sweep_plan& plan) {
  return {{"server", plan.base.target.server},
          {"ports", ports_to_json(plan.ports)},
          {"description", plan.target_description}};
}

void target_from_json(const json::object& o, sweep_plan& plan) {
  plan.base.target.server = string_at(o, "server");
  ports_from_json(object_at(o, "ports"), plan.ports);
  plan.target_description = string_at(o, "description");
}

json::array targets_to_json(const sweep_plan& plan) {
  json::array out;
  for (const auto& t : plan.targets) {
    out.emplace_back(json::object{{"name", t.name},
                                  {"server", t.server},
                                  {"ports", ports_to_json(t.ports)},
                                  {"monitor_pids", ints_to_json(t.monitor.pids)},
                                  {"monitor_cgroups", strings_to_json(t.monitor.cgroups)},
                                  {"monitor_command", t.monitor.command},
                                  {"description", t.description}});
  }
  return out;
}

void targets_from_json(const json::value& targets, sweep_plan& plan) {
  if (!targets.is_array()) throw std::invalid_argument("key \"targets\" is not an array");
  for (const auto& value : targets.get_array()) {
    if (!value.is_object()) throw std::invalid_argument("a target is not an object");
    const auto& o = value.get_object();
    sweep_target t;
    t.name = string_at(o, "name");
    t.server = string_at(o, "server");
    ports_from_json(object_at(o, "ports"), t.ports);
    t.monitor = monitor_settings_from_json(o);
    t.description = string_at(o, "description");
    plan.targets.push_back(std::move(t));
  }
}

json::object machine_to_json(const machine_info& m) {
  return {{"cpus", m.cpus}, {"cpu_model", m.cpu_model}, {"kernel", m.kernel}};
}

machine_info machine_from_json(const json::object& o) {
  machine_info m;
  m.cpus = static_cast<unsigned>(count_at(o, "cpus"));
  m.cpu_model = string_at(o, "cpu_model");
  m.kernel = string_at(o, "kernel");
  return m;
}

}  // namespace dnstransport::detail
