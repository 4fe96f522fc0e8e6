// Plot 3: queries/s against queries per connection on a log axis, measured with min-max bars,
// the fitted model T_inf * N / (N + h) and the simple model T_inf * N / (N + 1), one plot per
// TCP/TLS transport and one colour per client count.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "report/report_detail.hpp"

namespace dnstransport::detail {

namespace {

// Decades up to the right edge, the last one labelled 'unlimited' when that was measured.
std::string x_tics(double last_decade, bool unlimited) {
  std::string tics;
  for (double decade = 1; decade <= last_decade * 1.01; decade *= 10) {
    if (!tics.empty()) tics += ", ";
    const bool last = decade * 10 > last_decade * 1.01;
    tics += last && unlimited ? "'unlimited' " + gnuplot_number(decade) : gnuplot_number(decade);
  }
  return "set xtics (" + tics + ")\n";
}

}  // namespace

namespace {

// The plot's axes: where 'unlimited' is drawn, the largest value, the unit of the y axis.
struct amortization_axes {
  bool unlimited = false;
  double largest = 0;
  double unlimited_x = 1;
  double divisor = 1;
  std::string unit;
};

amortization_axes axes_of(const std::vector<amortization_curve>& curves) {
  amortization_axes axes;
  std::vector<std::uint64_t> finite;
  for (const auto& c : curves) {
    for (const auto& s : c.fit->samples) {
      axes.largest = std::max({axes.largest, s.measured_max, s.model_qps});
      if (s.queries_per_connection == 0) {
        axes.unlimited = true;
      } else if (std::find(finite.begin(), finite.end(), s.queries_per_connection) ==
                 finite.end()) {
        finite.push_back(s.queries_per_connection);
      }
    }
  }
  // The axis ends at a decade beyond both the longest finite connection and 100 h, where
  // every fitted curve is within 1 % of T_inf; unlimited is drawn there.
  double reach = static_cast<double>(*std::max_element(finite.begin(), finite.end())) * 10;
  for (const auto& c : curves) reach = std::max(reach, 100 * c.fit->model.h);
  axes.unlimited_x = std::pow(10.0, std::ceil(std::log10(reach)));
  axes.divisor = axes.largest >= 10000 ? 1000 : 1;
  axes.unit = axes.divisor > 1 ? "k queries/s" : "queries/s";
  return axes;
}

// The gnuplot pieces of the curves: functions, data blocks, plot clauses, and the points
// marked client-bound or departing from the fit.
struct amortization_lines {
  std::string functions;
  std::string data;
  std::string plot;
  std::vector<std::vector<double>> bound;
  std::vector<std::vector<double>> departing;
};

void add_curve(std::size_t k, const amortization_curve& curve, const amortization_axes& axes,
               amortization_lines& out) {
  const auto& f = *curve.fit;
  const double t_inf = f.model.t_inf / axes.divisor;
  out.functions += fmt::format(
      "fit{k}(x) = {t} * x / (x + {h})\nsimple{k}(x) = {t} * x / (x + 1)\n", fmt::arg("k", k),
      fmt::arg("t", gnuplot_number(t_inf)), fmt::arg("h", gnuplot_number(f.model.h)));
  std::vector<std::vector<double>> rows;
  for (const auto& s : f.samples) {
    const double x = s.queries_per_connection == 0 ? axes.unlimited_x
                                                   : static_cast<double>(s.queries_per_connection);
    const double y = s.measured_qps / axes.divisor;
    rows.push_back({x, y, s.measured_min / axes.divisor, s.measured_max / axes.divisor});
    if (s.client_bound) out.bound.push_back({x, y});
    if (std::fabs(s.deviation) > amortization_departure_tolerance) out.departing.push_back({x, y});
  }
  const std::string block = fmt::format("m{}", k);
  out.data += gnuplot_data(block, rows);
  // The curve's name is quoted for enhanced text; the rest carries markup (T_{∞}) and
  // only numbers.
  const std::string who = gnuplot_string(curve.who);
  const std::string bare = who.substr(1, who.size() - 2);
  const auto short_number = [](double v) {
    return v < 100 ? fmt::format("{:.3g}", v) : fmt::format("{:.0f}", v);
  };
  out.plot += fmt::format(
      "{sep}${block} using 1:2:3:4 with yerrorbars pt {pt} ps 1.3 lc {c} title '{who}: "
      "measured', "
      "\\\n     fit{k}(x) with lines lw 2 lc {c} title '{who}: fit, T_{{∞}} = {t} {unit}, h = "
      "{h}, n_{{90}} = {n90}'",
      fmt::arg("sep", out.plot.empty() ? "plot " : ", \\\n     "), fmt::arg("block", block),
      fmt::arg("c", curve.color), fmt::arg("pt", curve.point_type), fmt::arg("who", bare),
      fmt::arg("k", k), fmt::arg("t", fmt::format("{:.4g}", t_inf)), fmt::arg("unit", axes.unit),
      fmt::arg("h", short_number(f.model.h)), fmt::arg("n90", short_number(f.n90)));
  if (curve.simple_model) {
    out.plot += fmt::format(
        ", \\\n     simple{}(x) with lines lw 1.5 dt 2 lc {} title '{}: simple model (h = 1)'", k,
        curve.color, bare);
  }
}

}  // namespace

plot_script amortization_plot(const sweep_transport& transport,
                              const std::vector<amortization_curve>& curves) {
  const amortization_axes axes = axes_of(curves);
  amortization_lines lines;
  for (std::size_t k = 0; k < curves.size(); ++k) add_curve(k, curves[k], axes, lines);
  std::string data = lines.data;
  std::string plot = lines.plot;
  if (!lines.departing.empty()) {
    data += gnuplot_data("departing", lines.departing);
    plot += fmt::format(
        ", \\\n     $departing using 1:2 with points pt 4 ps 2.5 lw 2 lc rgb 'red' title "
        "'more than {:.0f} % off the fit'",
        amortization_departure_tolerance * 100);
  }
  if (!lines.bound.empty()) {
    data += gnuplot_data("bound", lines.bound);
    plot += fmt::format(", \\\n     $bound using 1:2 {}", client_bound_style);
  }
  const std::string name = sweep_transport_name(transport);
  plot_script p;
  p.name = "amortization_" + name;
  p.title = name + ": throughput against queries per connection (set-up amortization)";
  p.description = fmt::format(
      "{}: answers per second against the number of queries each connection carries before "
      "it is replaced (log scale), with the fitted model T(N) = T∞·N/(N+h) (solid) and the "
      "simple model T∞·N/(N+1) in which a set-up costs one query (dashed).",
      name);
  p.body = data + lines.functions + fmt::format("set title {}\n", gnuplot_string(p.title)) +
           fmt::format(
               "set xlabel {}\n",
               gnuplot_string("queries per connection (log scale)" +
                              std::string(axes.unlimited ? "; unlimited = never replaced" : ""))) +
           fmt::format("set ylabel {}\n",
                       gnuplot_string(fmt::format("answers per second{}, mean; bars: min to max",
                                                  axes.divisor > 1 ? " (thousands)" : ""))) +
           "set logscale x\n" + x_tics(axes.unlimited_x, axes.unlimited) +
           fmt::format("set xrange [0.7:{}]\n", gnuplot_number(axes.unlimited_x * 1.5)) +
           fmt::format("set yrange [0:{}]\n", gnuplot_number(axes.largest / axes.divisor * 1.15)) +
           "set samples 400\nset grid\nset key below\nset rmargin 8\n" + plot + "\n";
  return p;
}

void add_amortization_plots(const sweep_result& result, plot_set& into) {
  bool any = false;
  for (const auto& transport : result.plan.transports) {
    std::vector<amortization_curve> curves;
    for (const auto& f : result.amortization) {
      if (!(f.transport == transport)) continue;
      curves.push_back({&f, counted(f.clients, "client"), curves.size() + 1});
    }
    if (curves.empty()) continue;
    into.plots.push_back(amortization_plot(transport, curves));
    any = true;
  }
  if (!any) {
    into.skipped.push_back(fmt::format(
        "queries/s against queries per connection: needs TCP or TLS measured at two or more "
        "queries-per-connection values (see {} amortization)",
        setting("apply_preset::name")));
  }
}

}  // namespace dnstransport::detail
