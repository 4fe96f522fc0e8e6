// The sweep's tables, as cells and as text, and the header saying what was run.
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <dnstransport/report.hpp>
#include <dnstransport/text.hpp>

#include "report/report_detail.hpp"

namespace dnstransport {

namespace detail {

namespace {

std::string duration_cell(std::uint64_t nanoseconds, std::uint64_t count) {
  return count == 0 ? "-" : format_duration(static_cast<double>(nanoseconds));
}

std::string per_connection_cell(const sweep_point& p) {
  return !traits_of(p.transport.transport).has_connections
             ? "-"
             : queries_per_connection_name(p.queries_per_connection);
}

report_table points_table(const sweep_result& r) {
  report_table t;
  t.title = "Points (queries/s over the repeats; latency over all repeats)";
  t.header = {"transport", "clients", "q/conn", "runs",    "mean q/s", "median", "min",
              "max",       "stddev",  "spread", "p50 lat", "p99 lat",  "lost",   "client-bound"};
  const bool monitored = std::any_of(r.points.begin(), r.points.end(),
                                     [](const auto& p) { return p.summary.server_monitored; });
  if (monitored) t.header.push_back("server CPU/1k");
  // With a distinct-sources axis, each point's, after its queries per connection.
  const bool distinct = !r.plan.distinct_sources.empty();
  if (distinct) t.header.insert(t.header.begin() + 3, "sources");
  t.left_columns = 1;
  for (const auto& p : r.points) {
    const auto& s = p.summary;
    const auto& q = s.qps;
    const std::string lost = s.queries_sent == 0
                                 ? "-"
                                 : fmt::format("{:.2f} %", 100.0 * static_cast<double>(s.lost) /
                                                               static_cast<double>(s.queries_sent));
    t.rows.push_back(
        {sweep_transport_name(p.point.transport), std::to_string(p.point.clients),
         per_connection_cell(p.point), std::to_string(p.repeats.size()), with_thousands(q.mean),
         with_thousands(q.median), with_thousands(q.min), with_thousands(q.max),
         with_thousands(q.stddev), fmt::format("{:.1f} %", q.spread * 100),
         duration_cell(s.latency.percentile(50), s.latency.count()),
         duration_cell(s.latency.percentile(99), s.latency.count()), lost,
         s.client_bound ? fmt::format("yes ({:.0f} %)", s.max_thread_cpu_share * 100) : ""});
    if (distinct) {
      t.rows.back().insert(t.rows.back().begin() + 3, with_commas(p.point.distinct_sources));
    }
    if (monitored) {
      t.rows.back().push_back(s.server_monitored && s.server_answers > 0
                                  ? fmt::format("{:.2f} ms", s.server_cpu_per_1k_answers() * 1e3)
                                  : "-");
    }
  }
  t.notes = {fmt::format(
      "spread = (max - min) / median; client-bound = a worker thread of this generator used "
      "{:.0f} % of a CPU or more, so the figure measures the generator, not the server",
      client_bound_cpu_share * 100)};
  if (monitored) {
    t.notes.push_back(
        "server CPU/1k = CPU time (user + system) of the monitored server processes per 1,000 "
        "answers");
  }
  return t;
}

}  // namespace

std::string percent_cell(const percent_of_udp_entry& e, bool with_range) {
  if (!e.measurable()) return "UDP client-bound";
  const std::string range =
      with_range ? fmt::format(" ({:.0f}-{:.0f})", e.percent_min, e.percent_max) : "";
  return fmt::format("{:.1f} %{}{}", e.percent, range, e.client_bound ? " *" : "");
}

namespace {

// One row per (transport, queries per connection), one column per client count.
report_table percent_table(const sweep_result& r) {
  report_table t;
  t.title = "TCP, TLS and DoH throughput as % of UDP with the same number of clients";
  std::vector<unsigned> clients;
  std::vector<std::pair<sweep_transport, std::uint64_t>> series;
  for (const auto& e : r.percent_of_udp) {
    if (std::find(clients.begin(), clients.end(), e.clients) == clients.end()) {
      clients.push_back(e.clients);
    }
    const std::pair key{e.transport, e.queries_per_connection};
    if (std::find(series.begin(), series.end(), key) == series.end()) series.push_back(key);
  }
  t.header = {"transport", "q/conn"};
  for (const unsigned c : clients) t.header.push_back(counted(c, "client"));
  t.left_columns = 2;
  for (const auto& key : series) {
    // Plain variables, not a structured binding: clang 14 (the fuzz build) cannot capture one.
    const auto transport = key.first;
    const auto per_connection = key.second;
    std::vector<std::string> row{sweep_transport_name(transport),
                                 queries_per_connection_name(per_connection)};
    for (const unsigned c : clients) {
      const auto found = std::find_if(r.percent_of_udp.begin(), r.percent_of_udp.end(),
                                      [&](const percent_of_udp_entry& e) {
                                        return e.transport == transport && e.clients == c &&
                                               e.queries_per_connection == per_connection;
                                      });
      row.push_back(found == r.percent_of_udp.end() ? "-" : percent_cell(*found, true));
    }
    t.rows.push_back(std::move(row));
  }
  t.notes = {"in brackets: lowest to highest, from the slowest and fastest repeats of both",
             std::string(percent_bound_note), std::string(percent_reference_note)};
  return t;
}

report_table fits_table(const sweep_result& r) {
  report_table t;
  t.title = "Handshake amortization: T(N) = T_inf * N / (N + h), N = queries per connection";
  t.header = {"transport", "clients", "T_inf q/s", "h",         "N for 50 %",
              "90 %",      "99 %",    "fit error", "h=1 error", "departs at"};
  t.left_columns = 1;
  for (const auto& f : r.amortization) {
    std::vector<std::string> departs;
    for (const auto n : f.departures) departs.push_back(queries_per_connection_name(n));
    t.rows.push_back({sweep_transport_name(f.transport), std::to_string(f.clients),
                      with_thousands(f.model.t_inf), fitted(f.model.h), fitted(f.n50),
                      fitted(f.n90), fitted(f.n99), fmt::format("{:.1f} %", f.model.residual * 100),
                      fmt::format("{:.1f} %", f.simple_residual * 100),
                      departs.empty() ? "-" : fmt::format("{}", fmt::join(departs, ", "))});
  }
  t.notes = {
      "h = connection set-up cost in queries (T reaches 50 % of T_inf at N = h, 90 % at 9 h, "
      "99 % at 99 h); 'unlimited' points measure T_inf directly",
      "fit error = relative RMS of measured against fitted; h=1 error = the same for the simple "
      "model T_inf * N / (N + 1), where a set-up costs one query",
      fmt::format("departs at = queries per connection where the measurement is more than {:.0f} "
                  "% off the fitted model",
                  amortization_departure_tolerance * 100)};
  return t;
}

std::string cost_cell(const unit_cost& c, double scale, const char* unit) {
  if (!c.fitted) return "-";
  return fmt::format("{} {} ({}-{})", fitted(c.value * scale), unit, fitted(c.low * scale),
                     fitted(c.high * scale));
}

report_table samples_table(const sweep_result& r) {
  report_table t;
  t.title = "Amortization: measured against the models";
  t.header = {"transport", "clients", "q/conn",      "measured q/s", "min-max",
              "fit q/s",   "h=1 q/s", "meas vs fit", "client-bound"};
  t.left_columns = 1;
  for (const auto& f : r.amortization) {
    for (const auto& s : f.samples) {
      t.rows.push_back(
          {sweep_transport_name(f.transport), std::to_string(f.clients),
           queries_per_connection_name(s.queries_per_connection), with_thousands(s.measured_qps),
           fmt::format("{}-{}", with_thousands(s.measured_min), with_thousands(s.measured_max)),
           with_thousands(s.model_qps), with_thousands(s.simple_model_qps),
           fmt::format("{:+.1f} %", s.deviation * 100), s.client_bound ? "yes" : ""});
    }
  }
  return t;
}

}  // namespace

std::string fitted(double value) {
  if (value < 10) return fmt::format("{:.2f}", value);
  if (value < 100) return fmt::format("{:.1f}", value);
  return with_thousands(value);
}

// "UDP, TCP, TLS, HTTPS and QUIC": what each transport carries DNS over (its long name
// without "DNS over "; a short name would read "DNS over DoQ").
std::string transports_list(const sweep_result& r) {
  constexpr std::string_view dns_over = "DNS over ";
  std::vector<std::string> transports;
  for (const auto& t : r.plan.transports) {
    std::string_view carrier = traits_of(t.transport).long_name;
    if (carrier.starts_with(dns_over)) carrier.remove_prefix(dns_over.size());
    const std::string name(carrier);
    if (std::find(transports.begin(), transports.end(), name) == transports.end()) {
      transports.push_back(name);
    }
  }
  return and_list(transports);
}

std::string transports_heading(const sweep_result& r) {
  return fmt::format("DNS over {}", transports_list(r));
}

std::string sweep_heading(const sweep_result& r) {
  std::vector<std::string> targets;
  for (const auto& t : r.plan.targets) targets.push_back(t.name);
  if (targets.empty()) {
    const std::string& label = r.plan.base.output.label;
    const std::string& server = r.plan.base.target.server;
    targets.push_back(!label.empty() ? fmt::format("{} ({})", label, server)
                      : r.plan.target_description.empty()
                          ? server
                          : fmt::format("{} ({})", server, r.plan.target_description));
  }
  return fmt::format("{}: {}", transports_heading(r), and_list(targets));
}

std::string findings_text(const sweep_result& r, std::string_view name) {
  if (r.findings.empty()) return {};
  std::string out = fmt::format(
      "\nFindings: {}\n",
      name.empty() ? sweep_heading(r) : fmt::format("{}, {}", name, transports_heading(r)));
  std::string target;
  for (const auto& f : r.findings) {
    if (const std::string series = series_name(f.target, f.distinct_sources); series != target) {
      target = series;
      out += fmt::format("  {}\n", target);
    }
    out += fmt::format("{}- {}\n", target.empty() ? "  " : "    ", f.text);
  }
  return out;
}

std::vector<std::string> sweep_description(const sweep_result& r) {
  const sweep_plan& p = r.plan;
  std::vector<std::string> transports;
  std::vector<std::string> ports;
  for (const auto& t : p.transports) {
    transports.push_back(sweep_transport_name(t));
    const std::string port =
        fmt::format("{} {}", transport_name(t.transport), p.ports[t.transport]);
    if (std::find(ports.begin(), ports.end(), port) == ports.end()) ports.push_back(port);
  }
  std::vector<std::string> clients;
  for (const unsigned c : p.clients) clients.push_back(std::to_string(c));
  std::vector<std::string> per_connection;
  for (const auto n : p.queries_per_connection) {
    per_connection.push_back(queries_per_connection_name(n));
  }
  std::vector<std::string> lines;
  if (!p.base.output.label.empty()) lines.push_back("label: " + p.base.output.label);
  lines.push_back(fmt::format("dnstransport {} sweep started {}, took {:.1f} s{}", r.tool_version,
                              r.started_at, r.elapsed_seconds,
                              r.interrupted ? " (interrupted)" : ""));
  lines.push_back(fmt::format("target: {}{}, ports {}", p.base.target.server,
                              p.target_description.empty() ? "" : " (" + p.target_description + ")",
                              fmt::join(ports, ", ")));
  lines.push_back(fmt::format("machine: {} CPUs{}, {}", r.machine.cpus,
                              r.machine.cpu_model.empty() ? "" : " (" + r.machine.cpu_model + ")",
                              r.machine.kernel));
  const std::string run_length = p.base.traffic.count != 0
                                     ? fmt::format("{} queries", p.base.traffic.count)
                                     : fmt::format("{:g} s", p.duration_seconds);
  lines.push_back(fmt::format(
      "grid: transports {} x clients {} x queries/connection {} (tcp/tls) = {} points, {} "
      "of {} each, {:g} s pause",
      fmt::join(transports, ", "), fmt::join(clients, ", "), fmt::join(per_connection, ", "),
      r.planned_points, counted(p.repeats, "run"), run_length, p.pause_seconds));
  lines.push_back(
      fmt::format("each run: {} outstanding per client, {}, timeout {:g} s, warm-up {:g} s, "
                  "queries: {} ({})",
                  p.base.traffic.outstanding, counted(p.base.generator.threads, "thread"),
                  p.base.traffic.timeout_seconds, p.base.traffic.warmup_seconds, r.query_origin,
                  r.query_count));
  if (p.search) {
    const search_spec& c = p.search_criteria;
    lines.push_back(fmt::format(
        "measured by search: each point's q/s is the highest rate answered in full (at least "
        "{:g} % of scheduled queries answered{}), {} arrivals, steps of {} repeated {} times at "
        "the edge, precision {:g} %; so TCP/TLS as % of UDP compares lossless rates",
        c.min_answered_percent,
        c.max_p99_ms > 0 ? fmt::format(", p99 within {:g} ms", c.max_p99_ms) : std::string(),
        arrival_mode_name(p.base.traffic.arrivals), run_length, p.repeats, c.precision * 100));
  }
  if (!p.command_line.empty()) lines.push_back("command: " + p.command_line);
  return lines;
}

report_table costs_table(const std::vector<named_sweep>& sources) {
  report_table t;
  t.title = "Cost model: CPU per answer, connection and handshake (95 % interval over the runs)";
  t.header = {"transport",          "side",        "per answer", "per TCP connection",
              "per full handshake", "per resumed", "fit error",  "runs",
              "memory/connection",  "N for 50 %",  "90 %",       "99 %"};
  t.left_columns = 2;
  for (const auto& [who, r] : sources) {
    for (const auto& c : r->costs) {
      std::string name = who;
      if (const std::string series = series_name(c.target, c.distinct_sources); !series.empty()) {
        name += (name.empty() ? "" : "/") + series;
      }
      name += (name.empty() ? "" : ": ") + sweep_transport_name(c.transport);
      auto add = [&](const char* side, const cpu_cost_model& m, bool server) {
        t.rows.push_back(
            {name, side, cost_cell(m.per_answer, 1e6, "us"), cost_cell(m.per_connection, 1e6, "us"),
             cost_cell(m.per_full_handshake, 1e6, "us"),
             cost_cell(m.per_resumed_handshake, 1e6, "us"),
             fmt::format("{:.1f} %", m.relative_error * 100), std::to_string(m.runs),
             server ? cost_cell(c.server_bytes_per_connection, 1.0 / 1024, "KiB") : "",
             server && c.n50 > 0 ? fitted(c.n50) : "", server && c.n90 > 0 ? fitted(c.n90) : "",
             server && c.n99 > 0 ? fitted(c.n99) : ""});
      };
      if (c.server) add("server", *c.server, true);
      if (c.generator) add("generator", *c.generator, false);
    }
  }
  t.notes = {
      "least squares over every run of the transport with costs that cannot be negative: CPU = "
      "answers x per answer + connections x per connection + handshakes x per handshake; a TLS or "
      "QUIC handshake includes its connection's set-up",
      "server: the server's CPU where the sweep monitored it (its processes, cgroups or monitor "
      "command); generator: this tool's own; fit error = relative RMS of the model against the "
      "runs",
      "N for 50/90/99 %: queries per connection at which the server's costs give 50/90/99 % of "
      "the throughput of persistent connections (set-up cost / answer cost x 1, 9, 99)"};
  return t;
}

std::vector<report_table> sweep_tables(const sweep_result& r) {
  std::vector<report_table> tables{points_table(r)};
  // With a distinct-sources axis, its own table, then the others at each of its values.
  if (r.plan.distinct_sources.size() > 1) tables.push_back(distinct_sources_table(r));
  for (const std::uint64_t n : r.plan.distinct_sources.size() > 1 ? r.plan.distinct_sources
                                                                  : std::vector<std::uint64_t>{0}) {
    const sweep_result one = n == 0 ? sweep_result{} : at_distinct_sources(r, n);
    const sweep_result& of = n == 0 ? r : one;
    std::vector<report_table> derived;
    if (!of.percent_of_udp.empty()) derived.push_back(percent_table(of));
    if (!of.amortization.empty()) {
      derived.push_back(fits_table(of));
      derived.push_back(samples_table(of));
    }
    if (!of.costs.empty()) derived.push_back(costs_table({{"", &of}}));
    for (auto& t : derived) {
      if (n != 0) t.title += ", at " + counted(n, "distinct source");
      tables.push_back(std::move(t));
    }
  }
  return tables;
}

std::string render_text(const report_table& t) {
  std::vector<std::size_t> widths(t.header.size(), 0);
  auto measure = [&widths](const std::vector<std::string>& row) {
    for (std::size_t i = 0; i < row.size() && i < widths.size(); ++i) {
      widths[i] = std::max(widths[i], row[i].size());
    }
  };
  measure(t.header);
  for (const auto& row : t.rows) measure(row);
  auto line = [&](const std::vector<std::string>& row) {
    std::string out = " ";
    for (std::size_t i = 0; i < row.size() && i < widths.size(); ++i) {
      out += i < t.left_columns ? fmt::format(" {:<{}}", row[i], widths[i])
                                : fmt::format(" {:>{}}", row[i], widths[i]);
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = t.title + "\n" + line(t.header);
  for (const auto& row : t.rows) out += line(row);
  for (const auto& note : t.notes) out += "  (" + note + ")\n";
  return out;
}

}  // namespace detail

std::string format_tables(const sweep_result& result, const setting_namer& name_of) {
  if (!result.plan.targets.empty()) {
    return format_comparison(comparison_of({{"", result}}), name_of);
  }
  std::string out;
  for (const auto& line : detail::sweep_description(result)) out += fmt::format("{}\n", line);
  for (const auto& table : detail::sweep_tables(result)) {
    out += fmt::format("\n{}", detail::render_text(table));
  }
  if (!result.warnings.empty()) {
    out += "\nWarnings\n";
    for (const auto& w : result.warnings) out += fmt::format("  - {}\n", w);
  }
  out += detail::findings_text(result);
  return naming_settings(out, name_of);
}

}  // namespace dnstransport
