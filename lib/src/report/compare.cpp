// Comparisons of several sweeps: what each lacks, their descriptions and tables (comparison_of,
// which names them, is in compare_sweeps.cpp).
#include <algorithm>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <dnstransport/report.hpp>
#include <dnstransport/text.hpp>

#include "report/report_detail.hpp"

namespace dnstransport {

namespace {

std::string clients_name(unsigned clients) {
  return counted(clients, "client");
}

bool has_transport(const sweep_result& r, const sweep_transport& transport) {
  return std::any_of(r.points.begin(), r.points.end(),
                     [&](const sweep_point_result& p) { return p.point.transport == transport; });
}

const sweep_point_result* point_at(const sweep_result& r, const sweep_point& point) {
  for (const auto& p : r.points) {
    if (p.point == point) return &p;
  }
  return nullptr;
}

}  // namespace

std::vector<std::string> missing_points(const std::vector<compared_sweep>& sweeps) {
  std::vector<sweep_point> every;
  for (const auto& s : sweeps) {
    for (const auto& p : s.result.points) {
      if (std::find(every.begin(), every.end(), p.point) == every.end()) every.push_back(p.point);
    }
  }
  std::vector<std::string> lines;
  for (const auto& s : sweeps) {
    for (const auto& transport : detail::transports_of(sweeps)) {
      const std::string name = sweep_transport_name(transport);
      if (!has_transport(s.result, transport)) {
        std::vector<std::string> others;
        for (const auto& o : sweeps) {
          if (has_transport(o.result, transport)) others.push_back(o.name);
        }
        lines.push_back(fmt::format("{}: no {} points (measured for {})", s.name, name,
                                    fmt::join(others, ", ")));
        continue;
      }
      std::vector<std::string> cells;
      for (const auto& p : every) {
        if (!(p.transport == transport) || point_at(s.result, p) != nullptr) continue;
        cells.push_back(traits_of(transport.transport).has_connections
                            ? fmt::format("{}, {}", clients_name(p.clients),
                                          detail::connections_label(p.queries_per_connection))
                            : clients_name(p.clients));
      }
      if (!cells.empty()) {
        lines.push_back(
            fmt::format("{}: {} not measured with {}", s.name, name, fmt::join(cells, "; ")));
      }
    }
  }
  return lines;
}

namespace detail {

std::vector<sweep_transport> transports_of(const std::vector<compared_sweep>& sweeps) {
  std::vector<sweep_transport> out;
  for (const auto& s : sweeps) {
    for (const auto& p : s.result.points) {
      if (std::find(out.begin(), out.end(), p.point.transport) == out.end()) {
        out.push_back(p.point.transport);
      }
    }
  }
  return out;
}

std::vector<unsigned> clients_of(const std::vector<compared_sweep>& sweeps) {
  std::vector<unsigned> out;
  for (const auto& s : sweeps) {
    for (const auto& p : s.result.points) {
      if (std::find(out.begin(), out.end(), p.point.clients) == out.end()) {
        out.push_back(p.point.clients);
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string comparison_heading(const std::vector<compared_sweep>& sweeps) {
  std::string out;
  for (std::size_t i = 0; i < sweeps.size(); ++i) {
    const std::string transports = transports_list(sweeps[i].result);
    out += fmt::format("{}{} over {}", i == 0 ? "" : "; ", sweeps[i].name, transports);
  }
  return out;
}

std::vector<std::string> comparison_description(const std::vector<compared_sweep>& sweeps) {
  std::vector<std::string> lines;
  std::vector<std::string> machines;
  std::vector<std::string> versions;
  for (const auto& s : sweeps) {
    lines.push_back(s.source.empty() ? s.name + ":"
                                     : fmt::format("{} (from {}):", s.name, s.source));
    for (const auto& line : sweep_description(s.result)) lines.push_back("  " + line);
    const auto& m = s.result.machine;
    const std::string machine = fmt::format("{} CPUs, {}, {}", m.cpus, m.cpu_model, m.kernel);
    if (std::find(machines.begin(), machines.end(), machine) == machines.end()) {
      machines.push_back(machine);
    }
    if (std::find(versions.begin(), versions.end(), s.result.tool_version) == versions.end()) {
      versions.push_back(s.result.tool_version);
    }
  }
  if (machines.size() > 1) {
    lines.push_back(
        "note: these sweeps ran on different machines (see each one's machine line): a "
        "difference may be the machines', not the servers'");
  }
  if (versions.size() > 1) {
    lines.push_back(fmt::format(
        "note: these sweeps were written by different dnstransport versions ({}): compare with "
        "care",
        fmt::join(versions, ", ")));
  }
  return lines;
}

namespace {

const percent_of_udp_entry* percent_at(const sweep_result& r, const sweep_transport& transport,
                                       unsigned clients, std::uint64_t per_connection) {
  for (const auto& e : r.percent_of_udp) {
    if (e.transport == transport && e.clients == clients &&
        e.queries_per_connection == per_connection) {
      return &e;
    }
  }
  return nullptr;
}

// The fit of `transport` with the most clients; nullptr when there is none.
const amortization_fit* widest_fit(const sweep_result& r, const sweep_transport& transport) {
  const amortization_fit* widest = nullptr;
  for (const auto& f : r.amortization) {
    if (f.transport == transport && (widest == nullptr || f.clients > widest->clients)) {
      widest = &f;
    }
  }
  return widest;
}

bool any_monitored(const std::vector<compared_sweep>& sweeps) {
  for (const auto& s : sweeps) {
    for (const auto& p : s.result.points) {
      if (p.summary.server_monitored) return true;
    }
  }
  return false;
}

// Server CPU per 1,000 answers over the monitored points of one transport and queries per
// connection (every client count); "-" when none was monitored.
std::string server_cpu_cell(const sweep_result& r, const sweep_transport& transport,
                            std::uint64_t per_connection) {
  double cpu = 0;
  std::uint64_t answers = 0;
  for (const auto& p : r.points) {
    if (!(p.point.transport == transport) || !p.summary.server_monitored) continue;
    if (traits_of(transport.transport).has_connections &&
        p.point.queries_per_connection != per_connection) {
      continue;
    }
    cpu += p.summary.server_cpu_seconds;
    answers += p.summary.server_answers;
  }
  if (answers == 0) return "-";
  return fmt::format("{:.2f} ms", cpu * 1e6 / static_cast<double>(answers));
}

// One row per server and transport: UDP queries/s, the others' % of UDP at their longest
// connections, and the set-up cost from the fit with the most clients.
report_table comparison_table(const std::vector<compared_sweep>& sweeps) {
  report_table t;
  t.title = "Comparison: UDP queries/s, the other transports as % of UDP with the same clients";
  const auto clients = clients_of(sweeps);
  t.header = {"server", "transport", "q/conn"};
  for (const unsigned c : clients) t.header.push_back(clients_name(c));
  for (const char* column : {"fit clients", "h", "n90"}) t.header.push_back(column);
  const bool monitored = any_monitored(sweeps);
  if (monitored) t.header.push_back("server CPU/1k");
  t.left_columns = 3;
  for (const auto& s : sweeps) {
    for (const auto& transport : transports_of(sweeps)) {
      if (!has_transport(s.result, transport)) continue;
      const bool udp = transport.transport == reference_transport;
      const std::uint64_t per_connection = longest_connections(s.result, transport);
      std::vector<std::string> row{s.name, sweep_transport_name(transport),
                                   udp ? "-" : queries_per_connection_name(per_connection)};
      for (const unsigned c : clients) {
        const auto* p = point_at(s.result, {transport, c, per_connection});
        if (p == nullptr) {
          row.push_back("-");
        } else if (udp) {
          row.push_back(with_thousands(p->summary.qps.mean) +
                        (p->summary.client_bound ? " *" : ""));
        } else {
          const auto* e = percent_at(s.result, transport, c, per_connection);
          row.push_back(e == nullptr ? "-" : percent_cell(*e, false));
        }
      }
      const auto* fit = widest_fit(s.result, transport);
      if (fit == nullptr) {
        row.insert(row.end(), {"-", "-", "-"});
      } else {
        row.insert(row.end(),
                   {std::to_string(fit->clients), fitted(fit->model.h), fitted(fit->n90)});
      }
      if (monitored) row.push_back(server_cpu_cell(s.result, transport, per_connection));
      t.rows.push_back(std::move(row));
    }
  }
  t.notes = {
      "udp rows: answers per second (mean of the repeats); other rows: % of that server's UDP "
      "figure with the same clients, at the longest connections measured (q/conn)",
      "h, n90: the amortization fit with the most clients (set-up cost in queries; 90 % of "
      "T_inf at n90 queries per connection); '-' where it was not measured",
      "* client-bound: the figure measures the generator, not the server",
      std::string(percent_reference_note),
      monitored ? "server CPU/1k: the server's CPU time per 1,000 answers over that row's "
                  "points (all client counts), where its processes were monitored; '-' where "
                  "they were not"
                : fmt::format("server CPU per answer was not measured: give {} PID (or a {} "
                              "its pid=PID) on the server's machine",
                              setting("load_spec::monitor.pids"), setting("sweep_plan::targets"))};
  return t;
}

// One row per transport and queries per connection, one column per server: what an answer
// cost the server's CPU.
report_table server_cpu_by_server(const std::vector<compared_sweep>& sweeps) {
  report_table t;
  t.title = "Server CPU per 1,000 answers, by transport and queries per connection";
  t.header = {"transport", "q/conn"};
  for (const auto& s : sweeps) t.header.push_back(s.name);
  t.left_columns = 2;
  if (!any_monitored(sweeps)) return t;
  for (const auto& transport : transports_of(sweeps)) {
    std::vector<std::uint64_t> values;
    for (const auto& s : sweeps) {
      for (const auto& p : s.result.points) {
        if (p.point.transport == transport &&
            std::find(values.begin(), values.end(), p.point.queries_per_connection) ==
                values.end()) {
          values.push_back(p.point.queries_per_connection);
        }
      }
    }
    // From one query per connection to persistent connections.
    std::sort(values.begin(), values.end(), [](std::uint64_t a, std::uint64_t b) {
      return std::pair{a == 0, a} < std::pair{b == 0, b};
    });
    const bool connections = traits_of(transport.transport).has_connections;
    for (const std::uint64_t per_connection : values) {
      std::vector<std::string> row{sweep_transport_name(transport),
                                   connections ? queries_per_connection_name(per_connection) : "-"};
      for (const auto& s : sweeps) {
        row.push_back(server_cpu_cell(s.result, transport, per_connection));
      }
      t.rows.push_back(std::move(row));
      if (!connections) break;
    }
  }
  t.notes = {
      "CPU time (user + system) of the monitored server processes, per 1,000 answers, "
      "over the points of every client count; - not monitored or not measured"};
  return t;
}

// One row per transport, queries per connection and clients; one column per server.
report_table percent_side_by_side(const std::vector<compared_sweep>& sweeps) {
  report_table t;
  t.title = "TCP, TLS and DoH as % of UDP, every queries-per-connection value, by server";
  t.header = {"transport", "q/conn", "clients"};
  for (const auto& s : sweeps) t.header.push_back(s.name);
  t.left_columns = 2;
  std::vector<std::tuple<sweep_transport, std::uint64_t, unsigned>> keys;
  for (const auto& s : sweeps) {
    for (const auto& e : s.result.percent_of_udp) {
      const std::tuple key{e.transport, e.queries_per_connection, e.clients};
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
    }
  }
  // Transports in the order they were first measured, connections from the shortest to
  // unlimited, then clients.
  const auto transports = transports_of(sweeps);
  const auto order = [&transports](const auto& key) {
    const auto& [transport, per_connection, clients] = key;
    return std::tuple{
        std::find(transports.begin(), transports.end(), transport) - transports.begin(),
        per_connection == 0, per_connection, clients};
  };
  std::stable_sort(keys.begin(), keys.end(),
                   [&order](const auto& a, const auto& b) { return order(a) < order(b); });
  for (const auto& [transport, per_connection, clients] : keys) {
    std::vector<std::string> row{sweep_transport_name(transport),
                                 queries_per_connection_name(per_connection),
                                 std::to_string(clients)};
    for (const auto& s : sweeps) {
      const auto* e = percent_at(s.result, transport, clients, per_connection);
      row.push_back(e == nullptr ? "-" : percent_cell(*e, true));
    }
    t.rows.push_back(std::move(row));
  }
  t.notes = {"in brackets: lowest to highest, from the slowest and fastest repeats",
             std::string(percent_bound_note), std::string(percent_reference_note),
             "- not measured for this server"};
  return t;
}

report_table fits_by_server(const std::vector<compared_sweep>& sweeps) {
  report_table t;
  t.title = "Handshake amortization by server: T(N) = T_inf * N / (N + h)";
  t.header = {"transport", "server", "clients", "T_inf q/s", "h", "n90", "n99", "fit error"};
  t.left_columns = 2;
  for (const auto& transport : transports_of(sweeps)) {
    for (const unsigned c : clients_of(sweeps)) {
      for (const auto& s : sweeps) {
        for (const auto& f : s.result.amortization) {
          if (!(f.transport == transport) || f.clients != c) continue;
          t.rows.push_back({sweep_transport_name(transport), s.name, std::to_string(c),
                            with_thousands(f.model.t_inf), fitted(f.model.h), fitted(f.n90),
                            fitted(f.n99), fmt::format("{:.1f} %", f.model.residual * 100)});
        }
      }
    }
  }
  return t;
}

}  // namespace

std::vector<report_table> comparison_tables(const std::vector<compared_sweep>& sweeps) {
  std::vector<report_table> tables{comparison_table(sweeps)};
  const auto side_by_side = percent_side_by_side(sweeps);
  if (!side_by_side.rows.empty()) tables.push_back(side_by_side);
  const auto fits = fits_by_server(sweeps);
  if (!fits.rows.empty()) tables.push_back(fits);
  const auto cpu = server_cpu_by_server(sweeps);
  if (!cpu.rows.empty()) tables.push_back(cpu);
  std::vector<named_sweep> sources;
  for (const auto& s : sweeps) sources.push_back({s.name, &s.result});
  auto costs = costs_table(sources);
  if (!costs.rows.empty()) tables.push_back(std::move(costs));
  return tables;
}

}  // namespace detail

std::string format_comparison(const std::vector<compared_sweep>& sweeps,
                              const setting_namer& name_of) {
  std::string out = fmt::format("Comparison of {} sweeps: {}\n", sweeps.size(),
                                detail::comparison_heading(sweeps));
  for (const auto& line : detail::comparison_description(sweeps)) out += line + "\n";
  for (const auto& table : detail::comparison_tables(sweeps)) {
    out += "\n" + detail::render_text(table);
  }
  const auto missing = missing_points(sweeps);
  if (!missing.empty()) {
    out += "\nNot measured everywhere (drawn where measured)\n";
    for (const auto& line : missing) out += "  - " + line + "\n";
  }
  for (const auto& s : sweeps) {
    if (s.result.warnings.empty()) continue;
    out += fmt::format("\nWarnings for {}\n", s.name);
    for (const auto& w : s.result.warnings) out += "  - " + w + "\n";
  }
  for (const auto& s : sweeps) out += detail::findings_text(s.result, s.name);
  const auto across = detail::comparison_findings(sweeps);
  if (!across.empty()) out += "\nFindings across servers\n";
  for (const auto& line : across) out += "  - " + line + "\n";
  return naming_settings(out, name_of);
}

}  // namespace dnstransport
