// Plots 4-5: latency percentiles on a logarithmic percentile axis (x = 1/(1-p), the
// "log percentile" plot of resolver benchmarking), from the merged histograms.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "report/report_detail.hpp"

namespace dnstransport::detail {

namespace {

// Twenty samples per decade of 1/(1-p), up to the rarest percentile the data can show.
std::vector<std::vector<double>> percentile_curve(const latency_histogram& h) {
  std::vector<std::vector<double>> rows;
  const double count = static_cast<double>(h.count());
  for (int step = 0;; ++step) {
    const double x = std::pow(10.0, step / 20.0);
    if (x > count) break;
    const double percentile = 100 * (1 - 1 / x);
    const double nanoseconds = std::max<double>(1, static_cast<double>(h.percentile(percentile)));
    rows.push_back({x, nanoseconds / 1e6});
  }
  return rows;
}

}  // namespace

std::string percentile_body(const std::string& title, const std::vector<latency_curve>& curves) {
  std::string data;
  std::string plot;
  double widest = 10;
  for (std::size_t i = 0; i < curves.size(); ++i) {
    const auto rows = percentile_curve(curves[i].histogram);
    if (rows.size() < 2) continue;
    widest = std::max(widest, rows.back()[0]);
    const std::string block = fmt::format("c{}", i);
    data += gnuplot_data(block, rows);
    plot += fmt::format("{}${} using 1:2 with lines lw 2 lc {}{} title {}",
                        plot.empty() ? "plot " : ", \\\n     ", block, curves[i].color,
                        curves[i].dash_type > 1 ? fmt::format(" dt {}", curves[i].dash_type) : "",
                        gnuplot_string(curves[i].title));
  }
  if (plot.empty()) return {};
  std::string tics = "'0' 1";
  const char* labels[] = {"50", "90", "99", "99.9", "99.99", "99.999", "99.9999", "99.99999"};
  double x = 2;
  for (const char* label : labels) {
    if (x > widest * 1.01) break;
    tics += fmt::format(", '{}' {}", label, gnuplot_number(x));
    x = x == 2 ? 10 : x * 10;
  }
  return data + fmt::format("set title {}\n", gnuplot_string(title)) +
         "set xlabel 'percentile (%), log scale of 1/(1-p): each step right is ten times rarer'\n"
         "set ylabel 'latency (ms, log scale)'\n"
         "set logscale xy\n" +
         fmt::format("set xtics ({})\n", tics) +
         fmt::format("set xrange [1:{}]\n", gnuplot_number(widest)) +
         "set grid xtics ytics mytics\nset key top left box opaque\n" + plot + "\n";
}

namespace {

// (4) One plot per client count, one line per transport (TCP/TLS at their longest-lived
// connections).
void add_latency_by_clients(const sweep_result& r, plot_set& into) {
  bool any = false;
  for (const unsigned clients : r.plan.clients) {
    std::vector<latency_curve> curves;
    for (const auto& transport : r.plan.transports) {
      const std::uint64_t per_connection = longest_connections(r, transport);
      for (const auto& p : r.points) {
        if (!(p.point.transport == transport) || p.point.clients != clients ||
            p.point.queries_per_connection != per_connection) {
          continue;
        }
        std::string title = sweep_transport_name(transport);
        if (traits_of(transport.transport).has_connections) {
          title += " (" + connections_label(per_connection) + ")";
        }
        if (p.summary.client_bound) title += " (client-bound)";
        curves.push_back({title, color_of(r, transport), 1, p.summary.latency});
      }
    }
    const std::string title =
        fmt::format("Latency percentiles, {} (send to answer, connection set-up excluded)",
                    counted(clients, "client"));
    std::string body = percentile_body(title, curves);
    if (body.empty()) continue;
    plot_script s;
    s.name = fmt::format("latency_{}_clients", clients);
    s.title = title;
    s.description = fmt::format(
        "Latency from sending a query to its answer with {}, all repeats merged, "
        "against the percentile: the far right is the rarest, slowest answers.",
        counted(clients, "client"));
    s.body = std::move(body);
    into.plots.push_back(std::move(s));
    any = true;
  }
  if (!any) into.skipped.push_back("latency percentiles: no answers were measured");
}

// (5) TCP connect and TLS handshake time per transport and TLS library, every point merged.
void add_connection_setup(const sweep_result& r, plot_set& into) {
  std::vector<latency_curve> curves;
  for (const auto& transport : r.plan.transports) {
    if (!traits_of(transport.transport).has_connections) continue;
    latency_curve connect{
        sweep_transport_name(transport) + ": TCP connect", color_of(r, transport), 2, {}};
    latency_curve handshake{
        sweep_transport_name(transport) + ": TLS handshake", color_of(r, transport), 1, {}};
    for (const auto& p : r.points) {
      if (!(p.point.transport == transport)) continue;
      connect.histogram.merge(p.summary.connect_latency);
      handshake.histogram.merge(p.summary.handshake_latency);
    }
    curves.push_back(std::move(connect));
    if (traits_of(transport.transport).has_tls) curves.push_back(std::move(handshake));
  }
  const std::string title = "Connection set-up: TCP connect and TLS handshake latency";
  std::string body = percentile_body(title, curves);
  if (body.empty()) {
    into.skipped.push_back(
        "connection set-up: no TCP or TLS connections were measured (UDP only, or too few)");
    return;
  }
  plot_script s;
  s.name = "connection_setup";
  s.title = title;
  s.description =
      "Time to establish a TCP connection (dashed) and to complete the TLS handshake after it "
      "(solid), per transport and TLS library, over every point of the sweep.";
  s.body = std::move(body);
  into.plots.push_back(std::move(s));
}

}  // namespace

void add_latency_plots(const sweep_result& result, plot_set& into) {
  add_latency_by_clients(result, into);
  add_connection_setup(result, into);
}

}  // namespace dnstransport::detail
