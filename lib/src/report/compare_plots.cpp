// The plots of a comparison: each server has its colour in every plot; in line plots each
// transport has its dash and point type.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "report/report_detail.hpp"

namespace dnstransport::detail {

namespace {

constexpr std::size_t point_types[] = {7, 5, 9, 11, 13, 15, 4, 6};

std::size_t index_of(const std::vector<sweep_transport>& transports,
                     const sweep_transport& transport) {
  return static_cast<std::size_t>(std::find(transports.begin(), transports.end(), transport) -
                                  transports.begin());
}

std::size_t point_type(std::size_t index) {
  return point_types[index % std::size(point_types)];
}

// "tcp (persistent connections)", "udp".
std::string series_name(const sweep_transport& transport, std::uint64_t per_connection) {
  std::string name = sweep_transport_name(transport);
  if (traits_of(transport.transport).has_connections) {
    name += " (" + connections_label(per_connection) + ")";
  }
  return name;
}

void add_qps_against_clients(const std::vector<compared_sweep>& sweeps, plot_set& into) {
  const auto transports = transports_of(sweeps);
  const auto clients = clients_of(sweeps);
  double largest = 0;
  for (const auto& s : sweeps) {
    for (const auto& p : s.result.points) largest = std::max(largest, p.summary.qps.max);
  }
  const double divisor = largest >= 10000 ? 1000 : 1;
  std::string data;
  std::string plot;
  double smallest = 0;  // the smallest mean drawn
  const double lines = static_cast<double>(sweeps.size() * transports.size());
  for (std::size_t k = 0; k < sweeps.size(); ++k) {
    const auto& r = sweeps[k].result;
    for (std::size_t t = 0; t < transports.size(); ++t) {
      const std::uint64_t per_connection = longest_connections(r, transports[t]);
      const double line = static_cast<double>(k * transports.size() + t);
      // Lines are nudged apart on the x axis so their bars do not hide each other.
      const double nudge = std::pow(2.0, 0.03 * (line - (lines - 1) / 2));
      std::vector<std::vector<double>> rows;
      for (const auto& p : r.points) {
        if (!(p.point.transport == transports[t]) ||
            p.point.queries_per_connection != per_connection || p.summary.qps.mean <= 0) {
          continue;
        }
        const auto& q = p.summary.qps;
        smallest = smallest == 0 ? q.mean : std::min(smallest, q.mean);
        rows.push_back(
            {p.point.clients * nudge, q.mean / divisor, q.min / divisor, q.max / divisor});
      }
      if (rows.empty()) continue;
      const std::string block = fmt::format("s{}t{}", k, t);
      data += gnuplot_data(block, rows);
      plot += fmt::format(
          "{}${} using 1:2:3:4 with yerrorlines lw 2 lc {} dt {} pt {} ps 1.3 title {}",
          plot.empty() ? "plot " : ", \\\n     ", block, k + 1, t + 1, point_type(t),
          gnuplot_string(sweeps[k].name + ": " + series_name(transports[t], per_connection)));
    }
  }
  if (plot.empty()) {
    into.skipped.push_back("queries/s against clients: no point received answers");
    return;
  }
  std::string tics;
  for (const unsigned c : clients) tics += (tics.empty() ? "" : ", ") + std::to_string(c);
  // Servers (or transports) 20 times apart: on a linear axis the slower ones would lie flat
  // on zero, so the axis is logarithmic.
  const bool log_y = smallest > 0 && largest / smallest > 20;
  plot_script s;
  s.name = "qps_vs_clients";
  s.title = "Throughput against the number of clients, by server and transport";
  s.description = fmt::format(
      "Answers per second (mean of the repeats; bars: slowest to fastest repeat) against the "
      "number of clients: one colour per server, one dash and point type per transport "
      "(TCP/TLS/DoH at the longest connections each server was measured with).{}",
      log_y ? " The axis of answers per second is logarithmic: the fastest line is more than 20 "
              "times the slowest."
            : "");
  s.body =
      data + fmt::format("set title {}\n", gnuplot_string(s.title)) +
      "set xlabel 'concurrent clients'\n" +
      fmt::format("set ylabel {}\n", gnuplot_string(divisor > 1 ? "answers per second (thousands)"
                                                                : "answers per second")) +
      "set logscale x 2\n" + fmt::format("set xtics ({})\n", tics) +
      fmt::format("set xrange [{}:{}]\n", gnuplot_number(clients.front() / 1.4),
                  gnuplot_number(clients.back() * 1.4)) +
      (log_y ? "set logscale y\nset yrange [*:*]\n" : "set yrange [0:*]\n") +
      "set grid\nset key below\n" + plot + "\n";
  into.plots.push_back(std::move(s));
}

// Bars grouped by server and client count; one bar per transport at its longest connections.
void add_percent_of_udp(const std::vector<compared_sweep>& sweeps, plot_set& into) {
  std::vector<sweep_transport> transports;
  for (const auto& t : transports_of(sweeps)) {
    if (t.transport != reference_transport) transports.push_back(t);
  }
  struct group {
    std::size_t sweep;
    unsigned clients;
  };
  std::vector<group> groups;
  for (std::size_t k = 0; k < sweeps.size(); ++k) {
    for (const unsigned c : clients_of(sweeps)) {
      const auto& entries = sweeps[k].result.percent_of_udp;
      if (std::any_of(entries.begin(), entries.end(), [c](const percent_of_udp_entry& e) {
            return e.clients == c && e.measurable();
          })) {
        groups.push_back({k, c});
      }
    }
  }
  if (groups.empty() || transports.empty()) {
    into.skipped.push_back(
        "TCP/TLS/DoH as % of UDP: no server has UDP and TCP, TLS or DoH points with the same "
        "client counts whose UDP point measured the server (not client-bound)");
    return;
  }
  const double width = 0.8 / static_cast<double>(transports.size());
  double largest = 100;
  std::string data;
  std::string plot;
  for (std::size_t t = 0; t < transports.size(); ++t) {
    std::vector<std::vector<double>> rows;
    for (std::size_t g = 0; g < groups.size(); ++g) {
      const auto& r = sweeps[groups[g].sweep].result;
      const std::uint64_t per_connection = longest_connections(r, transports[t]);
      for (const auto& e : r.percent_of_udp) {
        if (!(e.transport == transports[t]) || e.clients != groups[g].clients ||
            e.queries_per_connection != per_connection || !e.measurable()) {
          continue;
        }
        const double offset =
            (static_cast<double>(t) - (static_cast<double>(transports.size()) - 1) / 2) * width;
        rows.push_back({static_cast<double>(g) + offset, e.percent, e.percent_min, e.percent_max});
        largest = std::max(largest, e.percent_max);
      }
    }
    if (rows.empty()) continue;
    const std::string block = fmt::format("t{}", t);
    data += gnuplot_data(block, rows);
    plot += fmt::format(
        "{sep}${b} using 1:2 with boxes fs solid 0.8 lc {c} title {t}, \\\n"
        "     ${b} using 1:2:3:4 with yerrorbars lc rgb 'black' pt 7 ps 0.5 notitle, \\\n"
        "     ${b} using 1:4:(sprintf('%.0f', $2)) with labels offset 0,0.8 font ',9' notitle",
        fmt::arg("sep", plot.empty() ? "plot " : ", \\\n     "), fmt::arg("b", block),
        fmt::arg("c", t + 2), fmt::arg("t", gnuplot_string(sweep_transport_name(transports[t]))));
  }
  std::string tics;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    tics += fmt::format(
        "{}{} {}", g == 0 ? "" : ", ",
        gnuplot_string(fmt::format("{}, {} cl.", sweeps[groups[g].sweep].name, groups[g].clients)),
        g);
  }
  plot_script p;
  p.name = "percent_of_udp";
  p.title = "TCP, TLS and DoH throughput as a percentage of UDP, by server";
  p.description =
      "Each transport's answers per second as a percentage of the same server's UDP figure "
      "with the same number of clients, at the longest connections measured, grouped by "
      "server and client count (bars: slowest against fastest repeats).";
  p.body = data + fmt::format("set title {}\n", gnuplot_string(p.title)) +
           "set ylabel 'queries/s as % of the same server''s UDP'\n" +
           fmt::format("set xtics ({}) rotate by -25\n", tics) +
           fmt::format("set xrange [-0.6:{}]\n", gnuplot_number(groups.size() - 0.4)) +
           fmt::format("set yrange [0:{}]\n", gnuplot_number(largest * 1.1)) +
           fmt::format("set boxwidth {} absolute\n", gnuplot_number(width * 0.9)) +
           "set style fill solid border lc rgb 'gray20'\nset grid ytics\nset key top right\n" +
           "set bmargin 6\n" + plot +
           ", \\\n     100 with lines dt 2 lw 2 lc rgb 'gray30' title 'UDP = 100 %'\n";
  into.plots.push_back(std::move(p));
}

void add_amortization(const std::vector<compared_sweep>& sweeps, plot_set& into) {
  const auto clients = clients_of(sweeps);
  bool any = false;
  for (const auto& transport : transports_of(sweeps)) {
    std::vector<amortization_curve> curves;
    for (std::size_t k = 0; k < sweeps.size(); ++k) {
      for (const auto& f : sweeps[k].result.amortization) {
        if (!(f.transport == transport)) continue;
        const auto c = std::find(clients.begin(), clients.end(), f.clients) - clients.begin();
        curves.push_back({&f, fmt::format("{}, {}", sweeps[k].name, counted(f.clients, "client")),
                          k + 1, point_type(static_cast<std::size_t>(c))});
      }
    }
    if (curves.empty()) continue;
    plot_script p = amortization_plot(transport, curves);
    p.description = fmt::format(
        "{}: answers per second against queries per connection (log scale) for every server "
        "(one colour each, one point type per client count), with each server's fit "
        "T(N) = T∞·N/(N+h) (T∞, h and n90 in the legend).",
        sweep_transport_name(transport));
    into.plots.push_back(std::move(p));
    any = true;
  }
  if (!any) {
    into.skipped.push_back(
        "queries/s against queries per connection: no server has TCP, TLS or DoH measured at "
        "two or more queries-per-connection values");
  }
}

void add_latency(const std::vector<compared_sweep>& sweeps, plot_set& into) {
  const auto transports = transports_of(sweeps);
  bool any = false;
  for (const unsigned clients : clients_of(sweeps)) {
    std::vector<latency_curve> curves;
    for (std::size_t k = 0; k < sweeps.size(); ++k) {
      const auto& r = sweeps[k].result;
      for (const auto& transport : transports) {
        const std::uint64_t per_connection = longest_connections(r, transport);
        for (const auto& p : r.points) {
          if (!(p.point.transport == transport) || p.point.clients != clients ||
              p.point.queries_per_connection != per_connection) {
            continue;
          }
          curves.push_back({sweeps[k].name + ": " + series_name(transport, per_connection), k + 1,
                            index_of(transports, transport) + 1, p.summary.latency});
        }
      }
    }
    const std::string title =
        fmt::format("Latency percentiles by server, {} (send to answer, set-up excluded)",
                    counted(clients, "client"));
    std::string body = percentile_body(title, curves);
    if (body.empty()) continue;
    plot_script s;
    s.name = fmt::format("latency_{}_clients", clients);
    s.title = title;
    s.description = fmt::format(
        "Latency from query to answer with {}, all repeats merged, against the "
        "percentile: one colour per server, one dash type per transport.",
        counted(clients, "client"));
    s.body = std::move(body);
    into.plots.push_back(std::move(s));
    any = true;
  }
  if (!any) into.skipped.push_back("latency percentiles: no answers were measured");
}

}  // namespace

void add_comparison_plots(const std::vector<compared_sweep>& sweeps, plot_set& into) {
  add_qps_against_clients(sweeps, into);
  add_percent_of_udp(sweeps, into);
  add_amortization(sweeps, into);
  add_latency(sweeps, into);
  std::vector<named_sweep> sources;
  for (const auto& s : sweeps) sources.push_back({s.name, &s.result});
  add_cost_plot(sources, into);
}

}  // namespace dnstransport::detail
