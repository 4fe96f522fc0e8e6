// The sweep JSON document: written whole, read back for `report`.
#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include <dnstransport/error.hpp>
#include <dnstransport/report.hpp>

#include "report/json_io.hpp"
#include "report/sweep_json.hpp"

namespace dnstransport {

namespace json = boost::json;

namespace {

using detail::stable;

json::object latency_summary(const latency_histogram& h) {
  return {{"count", h.count()},         {"min", h.min()},          {"mean", stable(h.mean())},
          {"p50", h.percentile(50)},    {"p90", h.percentile(90)}, {"p99", h.percentile(99)},
          {"p999", h.percentile(99.9)}, {"max", h.max()}};
}

json::object summary_to_json(const point_summary& s) {
  json::object o{{"qps",
                  {{"mean", stable(s.qps.mean)},
                   {"median", stable(s.qps.median)},
                   {"min", stable(s.qps.min)},
                   {"max", stable(s.qps.max)},
                   {"stddev", stable(s.qps.stddev)},
                   {"spread", stable(s.qps.spread)}}},
                 {"latency_ns", latency_summary(s.latency)},
                 {"first_query_latency_ns", latency_summary(s.first_query_latency)},
                 {"connect_latency_ns", latency_summary(s.connect_latency)},
                 {"handshake_latency_ns", latency_summary(s.handshake_latency)},
                 {"queries_sent", s.queries_sent},
                 {"responses_received", s.responses_received},
                 {"lost", s.lost},
                 {"connections_opened", s.connections_opened},
                 {"connections_failed", s.connections_failed},
                 {"max_thread_cpu_share", stable(s.max_thread_cpu_share)}};
  if (s.server_monitored) {
    o["server_cpu_seconds"] = stable(s.server_cpu_seconds);
    o["server_answers"] = s.server_answers;
    o["server_cpu_per_1k_answers"] = stable(s.server_cpu_per_1k_answers());
  }
  return o;
}

// "target": the point's server in a sweep of several; left out with one server.
// "distinct_sources": the point's, in a sweep with that axis; left out without.
void put_target(json::object& into, const std::string& target, std::uint64_t distinct_sources) {
  if (!target.empty()) into["target"] = target;
  if (distinct_sources != 0) into["distinct_sources"] = distinct_sources;
}

std::string target_of(const json::object& o) {
  const auto* target = o.if_contains("target");
  return target != nullptr && target->is_string() ? std::string(target->get_string()) : "";
}

json::object point_to_json(const sweep_point_result& p, bool with_repeats) {
  json::object o;
  put_target(o, p.point.target, p.point.distinct_sources);
  detail::put_transport(o, p.point.transport);
  o["clients"] = p.point.clients;
  o["queries_per_connection"] = p.point.queries_per_connection;
  o["client_bound"] = p.summary.client_bound;
  o["summary"] = summary_to_json(p.summary);
  if (p.search) {
    o["search"] = {{"max_rate", detail::stable(p.search->max_rate)},
                   {"failed_rate", detail::stable(p.search->failed_rate)},
                   {"end_reason", p.search->end_reason},
                   {"steps", p.search->steps}};
  }
  if (!with_repeats) return o;
  json::array repeats;
  for (const auto& r : p.repeats) repeats.emplace_back(detail::run_result_to_json(r));
  o["repeats"] = std::move(repeats);
  return o;
}

json::object percent_to_json(const percent_of_udp_entry& e) {
  json::object o;
  put_target(o, e.target, e.distinct_sources);
  detail::put_transport(o, e.transport);
  o["clients"] = e.clients;
  o["queries_per_connection"] = e.queries_per_connection;
  o["percent"] = stable(e.percent);
  o["percent_min"] = stable(e.percent_min);
  o["percent_max"] = stable(e.percent_max);
  o["client_bound"] = e.client_bound;
  o["reference_client_bound"] = e.reference_client_bound;
  return o;
}

json::object fit_to_json(const amortization_fit& f) {
  json::object o;
  put_target(o, f.target, f.distinct_sources);
  detail::put_transport(o, f.transport);
  o["clients"] = f.clients;
  o["t_inf"] = stable(f.model.t_inf);
  o["h"] = stable(f.model.h);
  o["n50"] = stable(f.n50);
  o["n90"] = stable(f.n90);
  o["n99"] = stable(f.n99);
  o["residual"] = stable(f.model.residual);
  o["simple_model"] = {{"h", 1}, {"residual", stable(f.simple_residual)}};
  json::array samples;
  for (const auto& s : f.samples) {
    samples.emplace_back(json::object{{"queries_per_connection", s.queries_per_connection},
                                      {"measured_qps", stable(s.measured_qps)},
                                      {"measured_min", stable(s.measured_min)},
                                      {"measured_max", stable(s.measured_max)},
                                      {"model_qps", stable(s.model_qps)},
                                      {"simple_model_qps", stable(s.simple_model_qps)},
                                      {"deviation", stable(s.deviation)},
                                      {"client_bound", s.client_bound}});
  }
  o["samples"] = std::move(samples);
  json::array departures;
  for (const auto n : f.departures) departures.emplace_back(n);
  o["departures"] = std::move(departures);
  o["departure_tolerance"] = amortization_departure_tolerance;
  return o;
}

json::value unit_cost_to_json(const unit_cost& c) {
  if (!c.fitted) return nullptr;
  return json::object{{"value", stable(c.value)}, {"low", stable(c.low)}, {"high", stable(c.high)}};
}

json::value cpu_model_to_json(const std::optional<cpu_cost_model>& m) {
  if (!m) return nullptr;
  return json::object{{"answer_seconds", unit_cost_to_json(m->per_answer)},
                      {"tcp_connection_seconds", unit_cost_to_json(m->per_connection)},
                      {"full_handshake_seconds", unit_cost_to_json(m->per_full_handshake)},
                      {"resumed_handshake_seconds", unit_cost_to_json(m->per_resumed_handshake)},
                      {"relative_error", stable(m->relative_error)},
                      {"largest_error", stable(m->largest_error)},
                      {"runs", m->runs}};
}

json::object costs_to_json(const transport_costs& c) {
  json::object o;
  put_target(o, c.target, c.distinct_sources);
  detail::put_transport(o, c.transport);
  o["server"] = cpu_model_to_json(c.server);
  o["generator"] = cpu_model_to_json(c.generator);
  o["server_bytes_per_connection"] = unit_cost_to_json(c.server_bytes_per_connection);
  o["n50"] = stable(c.n50);
  o["n90"] = stable(c.n90);
  o["n99"] = stable(c.n99);
  return o;
}

sweep_point_result point_from_json(const json::value& value) {
  if (!value.is_object()) throw std::invalid_argument("a point is not an object");
  const auto& o = value.get_object();
  sweep_point_result p;
  p.point.target = target_of(o);
  if (o.contains("distinct_sources")) {
    p.point.distinct_sources = detail::count_at(o, "distinct_sources");
  }
  p.point.transport = detail::transport_from_json(o);
  p.point.clients = static_cast<unsigned>(detail::count_at(o, "clients"));
  p.point.queries_per_connection = detail::count_at(o, "queries_per_connection");
  for (const auto& r : detail::array_at(o, "repeats")) {
    p.repeats.push_back(detail::run_result_from_json_value(r));
  }
  p.summary = summarize(p.repeats);
  if (const auto* search = o.if_contains("search"); search != nullptr && search->is_object()) {
    const auto& so = search->get_object();
    p.search = point_search{detail::number_at(so, "max_rate"), detail::number_at(so, "failed_rate"),
                            detail::string_at(so, "end_reason"),
                            static_cast<unsigned>(detail::count_at(so, "steps"))};
  }
  return p;
}

// Checks the schema tag and says what the file is when it is not a sweep of this version.
void check_schema(const json::value& value) {
  const auto* o = value.if_object();
  const auto* schema = o != nullptr ? o->if_contains("schema") : nullptr;
  if (schema == nullptr || !schema->is_string()) {
    throw std::invalid_argument(
        "not a dnstransport sweep result (no \"schema\" key); `report` reads the JSON written "
        "by `dnstransport sweep`");
  }
  const std::string_view tag = schema->get_string();
  if (tag == sweep_schema) return;
  if (tag == run_schema) {
    throw std::invalid_argument(fmt::format(
        "this is the result of a single run ({}), not of a sweep ({}); `report` reads the JSON "
        "written by `dnstransport sweep`",
        tag, sweep_schema));
  }
  if (tag.starts_with("dnstransport.sweep/")) {
    throw std::invalid_argument(fmt::format(
        "schema \"{}\" is another version of the sweep format; this dnstransport ({}) reads "
        "\"{}\": use the dnstransport version that wrote the file",
        tag, library_version(), sweep_schema));
  }
  throw std::invalid_argument(
      fmt::format("schema \"{}\" is not a dnstransport sweep result (\"{}\")", tag, sweep_schema));
}

}  // namespace

namespace detail {

void put_results(json::object& into, const sweep_result& r, bool with_repeats) {
  json::array points;
  for (const auto& p : r.points) points.emplace_back(point_to_json(p, with_repeats));
  json::array percent;
  for (const auto& e : r.percent_of_udp) percent.emplace_back(percent_to_json(e));
  json::array fits;
  for (const auto& f : r.amortization) fits.emplace_back(fit_to_json(f));
  json::array costs;
  for (const auto& c : r.costs) costs.emplace_back(costs_to_json(c));
  json::array warnings;
  for (const auto& w : r.warnings) {
    warnings.emplace_back(naming_settings(w, r.plan.base.output.setting_name));
  }
  json::array findings;
  for (const auto& f : r.findings) {
    json::object o;
    put_target(o, f.target, f.distinct_sources);
    o["kind"] = f.kind;
    o["text"] = f.text;
    findings.emplace_back(std::move(o));
  }
  into["points"] = std::move(points);
  into["percent_of_udp"] = std::move(percent);
  into["amortization"] = std::move(fits);
  into["costs"] = std::move(costs);
  into["warnings"] = std::move(warnings);
  into["findings"] = std::move(findings);
}

}  // namespace detail

std::string to_json(const sweep_result& r) {
  json::object document{
      {"schema", sweep_schema},
      {"label", r.plan.base.output.label},
      {"tool_version", r.tool_version},
      {"library_version", library_version()},
      {"started_at", r.started_at},
      {"elapsed_seconds", stable(r.elapsed_seconds)},
      {"interrupted", r.interrupted},
      {"command_line", r.plan.command_line},
      {"target", detail::target_to_json(r.plan)},
      {"targets", detail::targets_to_json(r.plan)},
      {"machine", detail::machine_to_json(r.machine)},
      {"plan", detail::plan_to_json(r)},
      {"thresholds",
       {{"client_bound_cpu_share", client_bound_cpu_share},
        {"spread_warning", spread_warning_threshold},
        {"amortization_departure_tolerance", amortization_departure_tolerance}}},
  };
  detail::put_results(document, r, true);
  return detail::pretty(document);
}

sweep_result sweep_result_from_json(std::string_view text, std::string_view source_name) {
  boost::system::error_code ec;
  const auto value = json::parse(text, ec);
  if (ec) throw setup_error(fmt::format("{}: not valid JSON: {}", source_name, ec.message()));
  try {
    check_schema(value);
    const auto& o = value.get_object();
    sweep_result r;
    r.tool_version = detail::string_at(o, "tool_version");
    r.started_at = detail::string_at(o, "started_at");
    r.elapsed_seconds = detail::number_at(o, "elapsed_seconds");
    const auto* interrupted = o.if_contains("interrupted");
    r.interrupted = interrupted != nullptr && interrupted->is_bool() && interrupted->get_bool();
    r.plan.command_line = detail::string_at(o, "command_line");
    detail::target_from_json(detail::object_at(o, "target"), r.plan);
    if (const auto* targets = o.if_contains("targets"); targets != nullptr) {
      detail::targets_from_json(*targets, r.plan);
    }
    r.machine = detail::machine_from_json(detail::object_at(o, "machine"));
    detail::plan_from_json(detail::object_at(o, "plan"), r);
    // Sweeps written before labels existed have none.
    if (const auto* label = o.if_contains("label"); label != nullptr && label->is_string()) {
      r.plan.base.output.label = label->get_string();
    }
    for (const auto& p : detail::array_at(o, "points")) {
      r.points.push_back(point_from_json(p));
      const std::string& target = r.points.back().point.target;
      const bool known = std::any_of(r.plan.targets.begin(), r.plan.targets.end(),
                                     [&target](const sweep_target& t) { return t.name == target; });
      if (known != !target.empty() || (target.empty() && !r.plan.targets.empty())) {
        throw std::invalid_argument(fmt::format(
            "point {} names a target that is not in \"targets\"", describe(r.points.back().point)));
      }
    }
    // The points are the measurement; percent of UDP, fits and warnings follow from them.
    derive_results(r);
    return r;
  } catch (const std::exception& e) {
    throw setup_error(fmt::format("{}: {}", source_name, e.what()));
  }
}

}  // namespace dnstransport
