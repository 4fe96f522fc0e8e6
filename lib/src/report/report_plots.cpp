// Plots 1-2: queries/s against clients and TCP/TLS as % of UDP.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "report/report_detail.hpp"

namespace dnstransport::detail {

namespace {

// The y axis in thousands once the numbers get large, so tic labels stay short.
struct qps_axis {
  double divisor = 1;
  std::string label;
};

qps_axis axis_for(double largest, std::string_view what) {
  if (largest >= 10000) return {1000, fmt::format("{} (thousands per second)", what)};
  return {1, fmt::format("{} per second", what)};
}

std::string clients_tics(const std::vector<unsigned>& clients) {
  std::string tics;
  for (const unsigned c : clients) tics += (tics.empty() ? "" : ", ") + std::to_string(c);
  return "set xtics (" + tics + ")\n";
}

// (1) One line per transport (TCP/TLS at their longest-lived connections), min-max bars.
void add_qps_against_clients(const sweep_result& r, plot_set& into) {
  std::string data;
  std::string plot;
  std::vector<std::vector<double>> bound;
  std::vector<unsigned> clients;
  double largest = 0;
  for (const auto& p : r.points) largest = std::max(largest, p.summary.qps.max);
  const qps_axis axis = axis_for(largest, "queries answered");
  const auto count = static_cast<double>(r.plan.transports.size());
  for (std::size_t i = 0; i < r.plan.transports.size(); ++i) {
    const auto& transport = r.plan.transports[i];
    const std::uint64_t per_connection = longest_connections(r, transport);
    std::vector<std::vector<double>> rows;
    // Series are nudged apart on the x axis so their bars do not hide each other.
    const double nudge = std::pow(2.0, 0.04 * (static_cast<double>(i) - (count - 1) / 2));
    for (const auto& p : r.points) {
      if (!(p.point.transport == transport) || p.point.queries_per_connection != per_connection ||
          p.summary.qps.mean <= 0) {
        continue;
      }
      const auto& q = p.summary.qps;
      const double x = p.point.clients * nudge;
      rows.push_back({x, q.mean / axis.divisor, q.min / axis.divisor, q.max / axis.divisor});
      if (p.summary.client_bound) bound.push_back({x, q.mean / axis.divisor});
      if (std::find(clients.begin(), clients.end(), p.point.clients) == clients.end()) {
        clients.push_back(p.point.clients);
      }
    }
    if (rows.empty()) continue;
    const std::string block = fmt::format("t{}", i);
    data += gnuplot_data(block, rows);
    std::string title = sweep_transport_name(transport);
    if (traits_of(transport.transport).has_connections) {
      title += " (" + connections_label(per_connection) + ")";
    }
    plot += fmt::format("{}${} using 1:2:3:4 with yerrorlines lw 2 pt 7 ps 1.3 lc {} title {}",
                        plot.empty() ? "plot " : ", \\\n     ", block, color_of(r, transport),
                        gnuplot_string(title));
  }
  if (plot.empty()) {
    into.skipped.push_back("queries/s against clients: no point received answers");
    return;
  }
  if (!bound.empty()) {
    data += gnuplot_data("bound", bound);
    plot += fmt::format(", \\\n     $bound using 1:2 {}", client_bound_style);
  }
  std::sort(clients.begin(), clients.end());
  plot_script s;
  s.name = "qps_vs_clients";
  s.title = "Throughput against the number of clients";
  s.description =
      "Answers per second (mean of the repeats; bars from the slowest to the fastest repeat) "
      "against the number of concurrent clients, one line per transport.";
  s.body =
      data + fmt::format("set title {}\n", gnuplot_string(s.title)) +
      fmt::format("set xlabel {}\n",
                  gnuplot_string(fmt::format("concurrent clients (each keeps {} queries in flight)",
                                             r.plan.base.traffic.outstanding))) +
      fmt::format("set ylabel {}\n",
                  gnuplot_string(axis.label + ", mean of the repeats; bars: min to max")) +
      "set logscale x 2\n" + clients_tics(clients) +
      fmt::format("set xrange [{}:{}]\n", gnuplot_number(clients.front() / 1.4),
                  gnuplot_number(clients.back() * 1.4)) +
      "set yrange [0:*]\nset grid\nset key top left box opaque\n" + plot + "\n";
  into.plots.push_back(std::move(s));
}

// The bars of the % of UDP plot: the client counts (groups), the transports with their
// queries per connection (one bar each), the highest bar and the longest finite connection.
struct bar_groups {
  std::vector<unsigned> clients;
  std::vector<std::pair<sweep_transport, std::uint64_t>> series;
  double largest = 100;
  std::uint64_t longest_finite = 1;
};

bar_groups bar_groups_of(const sweep_result& r) {
  bar_groups g;
  for (const auto& e : r.percent_of_udp) {
    if (std::find(g.clients.begin(), g.clients.end(), e.clients) == g.clients.end()) {
      g.clients.push_back(e.clients);
    }
    const std::pair key{e.transport, e.queries_per_connection};
    if (std::find(g.series.begin(), g.series.end(), key) == g.series.end()) g.series.push_back(key);
    if (e.measurable()) g.largest = std::max(g.largest, e.percent_max);
  }
  std::sort(g.clients.begin(), g.clients.end());
  for (const auto& [transport, n] : g.series) g.longest_finite = std::max(g.longest_finite, n);
  return g;
}

// The x tics of the % of UDP bars: one group per client count, saying where UDP was
// client-bound (and so the group has no bars).
std::string client_group_tics(const sweep_result& r, const std::vector<unsigned>& clients) {
  std::string tics;
  for (std::size_t g = 0; g < clients.size(); ++g) {
    const unsigned count = clients[g];
    const bool reference_bound = std::any_of(
        r.percent_of_udp.begin(), r.percent_of_udp.end(),
        [count](const percent_of_udp_entry& e) { return e.clients == count && !e.measurable(); });
    tics += fmt::format(
        "{}{} {}", g == 0 ? "" : ", ",
        gnuplot_string(fmt::format("{}{}", counted(count, "client"),
                                   reference_bound ? " (UDP client-bound: no bars)" : "")),
        g);
  }
  return tics;
}

// (2) Grouped bars: one group per client count, one bar per TCP/TLS transport and queries per
// connection, darker for longer-lived connections.
void add_percent_of_udp(const sweep_result& r, plot_set& into) {
  if (r.percent_of_udp.empty()) {
    into.skipped.push_back(
        "% of UDP: needs UDP points and points of another transport with the same client "
        "counts");
    return;
  }
  if (std::none_of(r.percent_of_udp.begin(), r.percent_of_udp.end(),
                   [](const percent_of_udp_entry& e) { return e.measurable(); })) {
    into.skipped.push_back(
        "% of UDP: every UDP reference point was client-bound (it measured the generator, not "
        "the server), so no share of UDP can be drawn; see the throughput plot");
    return;
  }
  const bar_groups groups = bar_groups_of(r);
  const auto& [clients, series, largest, longest_finite] = groups;

  const double width = 0.8 / static_cast<double>(series.size());
  std::string data;
  std::string plot;
  std::vector<std::vector<double>> bound;
  for (std::size_t s = 0; s < series.size(); ++s) {
    const auto& [transport, per_connection] = series[s];
    const double offset =
        (static_cast<double>(s) - (static_cast<double>(series.size()) - 1) / 2) * width;
    std::vector<std::vector<double>> rows;
    for (const auto& e : r.percent_of_udp) {
      if (!(e.transport == transport) || e.queries_per_connection != per_connection ||
          !e.measurable()) {
        continue;
      }
      const auto group = std::find(clients.begin(), clients.end(), e.clients) - clients.begin();
      const double x = static_cast<double>(group) + offset;
      rows.push_back({x, e.percent, e.percent_min, e.percent_max});
      if (e.client_bound) bound.push_back({x, e.percent});
    }
    // Fill density grows with the log of the connection length; unlimited is solid.
    const double density =
        per_connection == 0
            ? 1.0
            : 0.3 + 0.6 * std::log10(static_cast<double>(per_connection)) /
                        std::max(1.0, std::log10(static_cast<double>(longest_finite)));
    const std::string block = fmt::format("s{}", s);
    data += gnuplot_data(block, rows);
    const std::string title =
        sweep_transport_name(transport) + ", " + connections_label(per_connection);
    plot += fmt::format(
        "{sep}${b} using 1:2 with boxes fs solid {d} lc {c} title {t}, \\\n"
        "     ${b} using 1:2:3:4 with yerrorbars lc rgb 'black' pt 7 ps 0.5 notitle, \\\n"
        "     ${b} using 1:4:(sprintf('%.0f', $2)) with labels offset 0,0.8 font ',9' notitle",
        fmt::arg("sep", plot.empty() ? "plot " : ", \\\n     "), fmt::arg("b", block),
        fmt::arg("d", gnuplot_number(density)), fmt::arg("c", color_of(r, transport)),
        fmt::arg("t", gnuplot_string(title)));
  }
  if (!bound.empty()) {
    data += gnuplot_data("bound", bound);
    plot += fmt::format(", \\\n     $bound using 1:2 {}", client_bound_style);
  }
  const std::string tics = client_group_tics(r, clients);
  plot_script p;
  p.name = "percent_of_udp";
  p.title = "Throughput over each transport as a percentage of UDP";
  p.description =
      "Each transport's mean answers per second as a percentage of UDP with the same number of "
      "clients (bars: slowest against fastest repeats); lighter bars are shorter-lived "
      "connections. Where UDP with that many clients was client-bound (it measured the "
      "generator), no bar is drawn.";
  p.body = data + fmt::format("set title {}\n", gnuplot_string(p.title)) +
           "set xlabel 'concurrent clients'\n" +
           fmt::format("set ylabel {}\n",
                       gnuplot_string("queries/s as % of UDP with the same clients")) +
           fmt::format("set xtics ({})\n", tics) +
           fmt::format("set xrange [-0.6:{}]\n", gnuplot_number(clients.size() - 0.4)) +
           fmt::format("set yrange [0:{}]\n", gnuplot_number(largest * 1.1)) +
           fmt::format("set boxwidth {} absolute\n", gnuplot_number(width * 0.9)) +
           "set style fill solid border lc rgb 'gray20'\nset grid ytics\nset key below\n" + plot +
           ", \\\n     100 with lines dt 2 lw 2 lc rgb 'gray30' title 'UDP = 100 %'\n";
  into.plots.push_back(std::move(p));
}

}  // namespace

std::uint64_t longest_connections(const sweep_result& r, const sweep_transport& transport) {
  std::uint64_t longest = 0;
  for (const auto& p : r.points) {
    if (!(p.point.transport == transport)) continue;
    if (p.point.queries_per_connection == 0) return 0;
    longest = std::max(longest, p.point.queries_per_connection);
  }
  return longest;
}

std::string connections_label(std::uint64_t queries_per_connection) {
  if (queries_per_connection == 0) return "persistent connections";
  return counted(queries_per_connection, "query", "queries") + "/connection";
}

std::size_t color_of(const sweep_result& r, const sweep_transport& transport) {
  const auto found = std::find(r.plan.transports.begin(), r.plan.transports.end(), transport);
  return static_cast<std::size_t>(found - r.plan.transports.begin()) + 1;
}

namespace {

// The queries per connection of a sweep's points with connections, in order, unlimited
// last: the x axis by rank.
std::vector<std::uint64_t> connection_lengths(const sweep_result& r) {
  std::vector<std::uint64_t> per_connection;
  for (const auto& p : r.points) {
    if (!traits_of(p.point.transport.transport).has_connections) continue;
    const std::uint64_t q = p.point.queries_per_connection;
    if (std::find(per_connection.begin(), per_connection.end(), q) == per_connection.end()) {
      per_connection.push_back(q);
    }
  }
  std::sort(per_connection.begin(), per_connection.end(), [](std::uint64_t a, std::uint64_t b) {
    return (a == 0 ? UINT64_MAX : a) < (b == 0 ? UINT64_MAX : b);
  });
  return per_connection;
}

std::string connection_tics(const std::vector<std::uint64_t>& per_connection) {
  std::string tics;
  for (std::size_t k = 0; k < per_connection.size(); ++k) {
    tics += fmt::format(
        "{}\"{}\" {}", k == 0 ? "" : ", ",
        per_connection[k] == 0 ? std::string("unlimited") : std::to_string(per_connection[k]),
        k + 1);
  }
  return tics;
}

}  // namespace

// (6) The server's CPU per 1,000 answers against queries per connection, one line per
// transport at the largest client count with monitored points; UDP (no connections) as a
// flat line: what TCP and TLS cost the server, not only the throughput they keep.
void add_server_cpu(const sweep_result& r, plot_set& into) {
  unsigned clients = 0;
  for (const auto& p : r.points) {
    if (p.summary.server_monitored && p.summary.server_answers > 0) {
      clients = std::max(clients, p.point.clients);
    }
  }
  if (clients == 0) {
    into.skipped.push_back(
        fmt::format("server CPU per 1,000 answers: the server was not monitored ({}, {} or a "
                    "target's pid=)",
                    setting("load_spec::monitor.pids"), setting("load_spec::monitor.cgroups")));
    return;
  }
  const std::vector<std::uint64_t> per_connection = connection_lengths(r);
  const auto rank = [&](std::uint64_t q) {
    return static_cast<double>(std::find(per_connection.begin(), per_connection.end(), q) -
                               per_connection.begin() + 1);
  };
  std::string data;
  std::string plot;
  for (std::size_t i = 0; i < r.plan.transports.size(); ++i) {
    const auto& transport = r.plan.transports[i];
    std::vector<std::vector<double>> rows;
    for (const auto& p : r.points) {
      if (!(p.point.transport == transport) || p.point.clients != clients ||
          !p.summary.server_monitored || p.summary.server_answers == 0) {
        continue;
      }
      const double ms = p.summary.server_cpu_per_1k_answers() * 1e3;
      if (traits_of(transport.transport).has_connections) {
        rows.push_back({rank(p.point.queries_per_connection), ms});
      } else if (!per_connection.empty()) {
        rows.push_back({0.5, ms});
        rows.push_back({static_cast<double>(per_connection.size()) + 0.5, ms});
      } else {
        rows.push_back({1, ms});
      }
    }
    if (rows.empty()) continue;
    std::sort(rows.begin(), rows.end());
    const std::string block = fmt::format("s{}", i);
    data += gnuplot_data(block, rows);
    const bool flat = !traits_of(transport.transport).has_connections;
    plot += fmt::format("{}${} using 1:2 with {} lw 2 pt 7 ps 1.3 lc {} title {}",
                        plot.empty() ? "plot " : ", \\\n     ", block,
                        flat ? "lines dt 2" : "linespoints", color_of(r, transport),
                        gnuplot_string(sweep_transport_name(transport)));
  }
  if (plot.empty()) {
    into.skipped.push_back("server CPU per 1,000 answers: no monitored point had answers");
    return;
  }
  const std::string tics = connection_tics(per_connection);
  plot_script s;
  s.name = "server_cpu";
  s.title = "Server CPU per 1,000 answers";
  s.description = fmt::format(
      "The monitored server's CPU time per 1,000 answers against queries per connection, one "
      "line per transport at {} clients; UDP, which has no connections, dashed across.",
      clients);
  s.body =
      data +
      fmt::format("set title {}\n",
                  gnuplot_string(fmt::format("{} ({} clients)", s.title, clients))) +
      "set xlabel 'queries per connection'\n"
      "set ylabel 'server CPU (ms) per 1,000 answers'\n" +
      (tics.empty() ? std::string("unset xtics\n") : "set xtics (" + tics + ")\n") +
      fmt::format("set xrange [0.5:{}]\n",
                  gnuplot_number(
                      static_cast<double>(std::max<std::size_t>(per_connection.size(), 1)) + 0.5)) +
      "set yrange [0:*]\nset grid\nset key top right box opaque\n" + plot + "\n";
  into.plots.push_back(std::move(s));
}

void add_throughput_plots(const sweep_result& result, plot_set& into) {
  add_qps_against_clients(result, into);
  add_percent_of_udp(result, into);
  add_server_cpu(result, into);
}

}  // namespace dnstransport::detail
