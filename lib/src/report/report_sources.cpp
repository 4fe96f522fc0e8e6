// A sweep with a distinct-sources axis (sweep_plan::distinct_sources): throughput against
// the number of client addresses the server saw, as a table and a plot, and the sweep at one
// of its values for the tables and plots that compare transports, clients and connections.
#include <algorithm>
#include <cmath>
#include <tuple>

#include <fmt/format.h>

#include <dnstransport/text.hpp>

#include "report/report_detail.hpp"

namespace dnstransport::detail {

namespace {

// A line of the table and the plot: the points that differ in distinct sources only.
struct source_series {
  sweep_transport transport;
  unsigned clients = 0;
  std::uint64_t queries_per_connection = 0;
  friend bool operator==(const source_series&, const source_series&) = default;
};

std::vector<source_series> series_of(const sweep_result& r) {
  std::vector<source_series> out;
  for (const auto& p : r.points) {
    const source_series s{p.point.transport, p.point.clients, p.point.queries_per_connection};
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  }
  return out;
}

const sweep_point_result* point_at(const sweep_result& r, const source_series& s,
                                   std::uint64_t distinct) {
  for (const auto& p : r.points) {
    if (p.point.transport == s.transport && p.point.clients == s.clients &&
        p.point.queries_per_connection == s.queries_per_connection &&
        p.point.distinct_sources == distinct) {
      return &p;
    }
  }
  return nullptr;
}

std::string series_title(const source_series& s) {
  std::string title =
      fmt::format("{}, {}", sweep_transport_name(s.transport), counted(s.clients, "client"));
  if (traits_of(s.transport.transport).has_connections) {
    title += ", " + connections_label(s.queries_per_connection);
  }
  return title;
}

}  // namespace

sweep_result at_distinct_sources(const sweep_result& r, std::uint64_t distinct) {
  sweep_result one = r;
  const auto other = [distinct](const auto& e) { return e.distinct_sources != distinct; };
  std::erase_if(one.points, [distinct](const sweep_point_result& p) {
    return p.point.distinct_sources != distinct;
  });
  std::erase_if(one.percent_of_udp, other);
  std::erase_if(one.amortization, other);
  std::erase_if(one.costs, other);
  std::erase_if(one.findings, other);
  one.plan.distinct_sources = {distinct};
  return one;
}

report_table distinct_sources_table(const sweep_result& r) {
  report_table t;
  t.title = "Throughput against distinct client addresses (mean q/s over the repeats)";
  t.header = {"transport, clients, connections"};
  for (const std::uint64_t n : r.plan.distinct_sources) {
    t.header.push_back(counted(n, "source"));
  }
  bool any_bound = false;
  for (const auto& s : series_of(r)) {
    std::vector<std::string> row{series_title(s)};
    for (const std::uint64_t n : r.plan.distinct_sources) {
      const sweep_point_result* p = point_at(r, s, n);
      any_bound = any_bound || (p != nullptr && p->summary.client_bound);
      row.push_back(p == nullptr || p->repeats.empty() ? "-"
                    : p->summary.client_bound          ? with_thousands(p->summary.qps.mean) + " *"
                                                       : with_thousands(p->summary.qps.mean));
    }
    t.rows.push_back(std::move(row));
  }
  t.notes = {
      "sources = distinct client addresses the server saw (PROXY headers' claimed addresses, "
      "or source addresses bound), whatever the number of clients"};
  if (any_bound) t.notes.emplace_back(percent_bound_note);
  return t;
}

void add_distinct_sources_plot(const sweep_result& r, plot_set& into) {
  std::string data;
  std::string plot;
  double largest = 0;
  for (const auto& p : r.points) largest = std::max(largest, p.summary.qps.max);
  const double divisor = largest >= 10000 ? 1000 : 1;
  const auto series = series_of(r);
  for (std::size_t i = 0; i < series.size(); ++i) {
    std::vector<std::vector<double>> rows;
    for (const std::uint64_t n : r.plan.distinct_sources) {
      const sweep_point_result* p = point_at(r, series[i], n);
      if (p == nullptr || p->summary.qps.mean <= 0) continue;
      const auto& q = p->summary.qps;
      rows.push_back({static_cast<double>(n), q.mean / divisor, q.min / divisor, q.max / divisor});
    }
    if (rows.empty()) continue;
    const std::string block = fmt::format("s{}", i);
    data += gnuplot_data(block, rows);
    plot += fmt::format("{}${} using 1:2:3:4 with yerrorlines lw 2 pt 7 ps 1.3 lc {} title {}",
                        plot.empty() ? "plot " : ", \\\n     ", block, i + 1,
                        gnuplot_string(series_title(series[i])));
  }
  if (plot.empty()) {
    into.skipped.push_back("queries/s against distinct sources: no point received answers");
    return;
  }
  const auto [low, high] =
      std::minmax_element(r.plan.distinct_sources.begin(), r.plan.distinct_sources.end());
  plot_script s;
  s.name = "qps_vs_distinct_sources";
  s.title = "Throughput against the number of distinct client addresses";
  s.description = fmt::format(
      "Answers per second (mean of the repeats; bars from the slowest to the fastest repeat) "
      "against how many client addresses the server saw, one line per transport, client count "
      "and queries per connection: what the server's per-client state (rate limits, per-client "
      "connection limits, address lookups) does to its throughput. The other plots show the "
      "points at {}.",
      counted(r.plan.distinct_sources.back(), "distinct source"));
  s.body = data + fmt::format("set title {}\n", gnuplot_string(s.title)) +
           fmt::format("set xlabel {}\n", gnuplot_string("distinct client addresses")) +
           fmt::format(
               "set ylabel {}\n",
               gnuplot_string(fmt::format("queries answered {}, mean of the repeats; "
                                          "bars: min to max",
                                          divisor > 1 ? "(thousands per second)" : "per second"))) +
           "set logscale x 10\n" +
           fmt::format("set xrange [{}:{}]\n", gnuplot_number(static_cast<double>(*low) / 2),
                       gnuplot_number(static_cast<double>(*high) * 2)) +
           "set yrange [0:*]\nset grid\nset key bottom left box opaque\n" + plot + "\n";
  into.plots.push_back(std::move(s));
}

}  // namespace dnstransport::detail
