// Plot 7: the cost model against what was measured, run by run.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "report/report_detail.hpp"

namespace dnstransport::detail {

namespace {

// Filled point types; the open one of each is one less (gnuplot's numbering).
constexpr std::size_t filled_points[] = {7, 5, 9, 11, 13, 15};

// A side's CPU per answer, measured and as its model predicts it (microseconds), one row per
// run that answered and measured the side's CPU.
std::vector<std::vector<double>> cost_rows(const sweep_result& r, const transport_costs& c,
                                           const cpu_cost_model& model, bool server) {
  std::vector<std::vector<double>> rows;
  for (const auto& p : r.points) {
    if (p.point.target != c.target || p.point.distinct_sources != c.distinct_sources ||
        !(p.point.transport == c.transport)) {
      continue;
    }
    for (const auto& run : p.repeats) {
      if (run.responses_received == 0) continue;
      const process_usage& u = run.server_usage;
      const double measured =
          server ? (u.monitored() && u.cpu_measured ? u.cpu_seconds() : 0) : run.client_cpu_seconds;
      if (measured <= 0) continue;
      const double answers = static_cast<double>(run.responses_received);
      rows.push_back({measured / answers * 1e6, model.predict(run) / answers * 1e6});
    }
  }
  return rows;
}

}  // namespace

void add_cost_plot(const std::vector<named_sweep>& sources, plot_set& into) {
  // The servers with costs, (source, target) in the order first met: one colour each when
  // there are several (a sweep of several targets lists their costs interleaved).
  std::vector<std::pair<std::size_t, std::string>> owners;
  for (std::size_t k = 0; k < sources.size(); ++k) {
    for (const auto& c : sources[k].result->costs) {
      const std::pair<std::size_t, std::string> owner{k, series_name(c.target, c.distinct_sources)};
      if (std::find(owners.begin(), owners.end(), owner) == owners.end()) owners.push_back(owner);
    }
  }
  std::string data;
  std::string plot;
  double low = 0;
  double high = 0;
  bool any_server = false;
  for (std::size_t k = 0; k < sources.size(); ++k) {
    const sweep_result& r = *sources[k].result;
    for (std::size_t i = 0; i < r.costs.size(); ++i) {
      const transport_costs& c = r.costs[i];
      std::string who = sources[k].name;
      const std::string series = series_name(c.target, c.distinct_sources);
      if (!series.empty()) who += (who.empty() ? "" : "/") + series;
      const auto at = std::find(r.plan.transports.begin(), r.plan.transports.end(), c.transport);
      const auto t = static_cast<std::size_t>(at - r.plan.transports.begin());
      const std::pair<std::size_t, std::string> owner{k, series};
      const auto owner_index =
          static_cast<std::size_t>(std::find(owners.begin(), owners.end(), owner) - owners.begin());
      const std::size_t color = owners.size() > 1 ? owner_index + 1 : color_of(r, c.transport);
      const std::size_t filled = filled_points[t % std::size(filled_points)];
      for (const bool server : {true, false}) {
        const auto& model = server ? c.server : c.generator;
        if (!model) continue;
        const auto rows = cost_rows(r, c, *model, server);
        if (rows.empty()) continue;
        any_server = any_server || server;
        for (const auto& row : rows) {
          for (const double v : row) {
            if (v <= 0) continue;
            low = low == 0 ? v : std::min(low, v);
            high = std::max(high, v);
          }
        }
        const std::string block = fmt::format("c{}_{}{}", k, i, server ? "s" : "g");
        data += gnuplot_data(block, rows);
        std::string title = (who.empty() ? "" : who + ": ") + sweep_transport_name(c.transport) +
                            (server ? ", server" : ", generator");
        plot += fmt::format("{}${} using 1:2 with points pt {} ps 1.3 lw 2 lc {} title {}",
                            plot.empty() ? "plot " : ", \\\n     ", block,
                            server ? filled : filled - 1, color, gnuplot_string(title));
      }
    }
  }
  if (plot.empty()) {
    into.skipped.push_back(
        "CPU per answer, cost model against measured: no transport had enough runs to fit a "
        "cost model");
    return;
  }
  // Predictions of zero (a side whose costs all fitted zero) stay off a logarithmic axis.
  const double from = low / 1.5;
  const double to = high * 1.5;
  plot_script s;
  s.name = "cost_model";
  s.title = "CPU per answer: the cost model against the measured";
  s.description = fmt::format(
      "Each run's CPU time per answer as its transport's cost model predicts it (from the run's "
      "answers, connections and handshakes) against what was measured: {}open points the "
      "generator. On the solid line the model is exact; between the dashed lines it is within "
      "15 %.",
      any_server ? "filled points the server, " : "");
  s.body = data + fmt::format("set title {}\n", gnuplot_string(s.title)) +
           "set xlabel 'measured CPU per answer (µs)'\n"
           "set ylabel 'predicted CPU per answer (µs)'\n"
           "set logscale xy\n" +
           fmt::format("set xrange [{0}:{1}]\nset yrange [{0}:{1}]\n", gnuplot_number(from),
                       gnuplot_number(to)) +
           "set grid\nset key below\n" + plot +
           ", \\\n     x with lines lw 1 lc rgb 'gray30' title 'exact'"
           ", \\\n     1.15*x with lines dt 2 lc rgb 'gray50' title '±15 %'"
           ", \\\n     0.85*x with lines dt 2 lc rgb 'gray50' notitle\n";
  into.plots.push_back(std::move(s));
}

}  // namespace dnstransport::detail
