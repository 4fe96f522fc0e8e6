// write_report: tables, CSV, gnuplot scripts, PNG/SVG plots and index.html in one directory.
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include <dnstransport/error.hpp>

#include "report/report_detail.hpp"

namespace dnstransport {

namespace detail {

namespace {

bool non_empty_file(const std::filesystem::path& path) {
  std::error_code ec;
  return std::filesystem::file_size(path, ec) > 0 && !ec;
}

}  // namespace

void make_directory(const std::filesystem::path& directory) {
  std::error_code ec;
  std::filesystem::create_directories(directory, ec);
  if (ec) {
    throw setup_error(
        fmt::format("cannot create directory \"{}\": {}", directory.string(), ec.message()));
  }
}

void write_text(const std::filesystem::path& path, const std::string& text,
                std::vector<std::filesystem::path>& written) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    throw setup_error(fmt::format("cannot write \"{}\": {}", path.string(), std::strerror(errno)));
  }
  written.push_back(path);
}

void draw_plots(const plot_set& plots, const std::filesystem::path& directory,
                std::string_view source_name, report_output& output,
                std::vector<std::string>& drawn, const setting_namer& name_of) {
  for (const auto& s : plots.skipped) output.skipped_plots.push_back(naming_settings(s, name_of));
  for (const auto& p : plots.plots) {
    write_text(directory / (p.name + ".gp"), gnuplot_file(p, source_name), output.files);
  }
  const auto gnuplot = find_program("gnuplot");
  if (gnuplot.empty()) {
    output.plot_problem = fmt::format(
        "gnuplot is not installed, so no PNG or SVG plots were drawn. Install it with "
        "`apt-get install gnuplot-nox` and run `dnstransport report` again, or draw them with "
        "`gnuplot NAME.gp` in {}.",
        directory.string());
    return;
  }
  for (const auto& p : plots.plots) {
    const std::string problem = run_gnuplot(gnuplot, directory, p.name + ".gp");
    const auto png = directory / (p.name + ".png");
    const auto svg = directory / (p.name + ".svg");
    if (problem.empty() && non_empty_file(png) && non_empty_file(svg)) {
      drawn.push_back(p.name);
      output.files.push_back(png);
      output.files.push_back(svg);
    } else if (output.plot_problem.empty()) {
      output.plot_problem =
          problem.empty() ? fmt::format("gnuplot did not write {}.png and {}.svg", p.name, p.name)
                          : problem;
    }
  }
}

}  // namespace detail

report_output write_report(const sweep_result& result, const std::filesystem::path& directory,
                           std::string_view source_name, const setting_namer& name_of) {
  if (!result.plan.targets.empty()) {
    return write_comparison_report(comparison_of({{std::string(source_name), result}}), directory,
                                   name_of);
  }
  detail::make_directory(directory);
  report_output output;
  auto& files = output.files;
  detail::write_text(directory / "tables.txt", format_tables(result, name_of), files);
  detail::write_text(directory / "points.csv", to_csv(result), files);
  detail::write_text(directory / "percent_of_udp.csv", detail::percent_of_udp_csv(result), files);
  detail::write_text(directory / "amortization.csv", detail::amortization_csv(result), files);

  detail::plot_set plots;
  // With a distinct-sources axis: its plot first, the others at its last value.
  const bool distinct = result.plan.distinct_sources.size() > 1;
  const sweep_result one =
      distinct ? detail::at_distinct_sources(result, result.plan.distinct_sources.back())
               : sweep_result{};
  const sweep_result& shown = distinct ? one : result;
  if (distinct) detail::add_distinct_sources_plot(result, plots);
  detail::add_throughput_plots(shown, plots);
  detail::add_amortization_plots(shown, plots);
  detail::add_latency_plots(shown, plots);
  detail::add_cost_plot({{"", &shown}}, plots);

  detail::index_contents contents;
  contents.source_name = std::string(source_name);
  contents.data_files = {"tables.txt", "points.csv", "percent_of_udp.csv", "amortization.csv"};
  // Link the sweep's JSON when it sits in the report directory (as `tools/dev demo` does).
  const std::filesystem::path source(source_name);
  std::error_code same_ec;
  if (std::filesystem::equivalent(source, directory / source.filename(), same_ec)) {
    contents.data_files.push_back(source.filename().string());
  }
  detail::draw_plots(plots, directory, source_name, output, contents.drawn, name_of);
  contents.plot_problem = output.plot_problem;
  output.index = directory / "index.html";
  detail::write_text(
      output.index, naming_settings(detail::render_index(result, plots, contents), name_of), files);
  return output;
}

}  // namespace dnstransport
