// write_comparison_report: the comparison's tables, CSV, overlay plots and index.html.
#include <sstream>

#include <fmt/format.h>

#include <dnstransport/error.hpp>
#include <dnstransport/report.hpp>
#include <dnstransport/text.hpp>

#include "report/report_detail.hpp"

namespace dnstransport {

namespace {

std::string csv_field(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// Every sweep's point rows, each led by the server's name.
std::string comparison_csv(const std::vector<compared_sweep>& sweeps) {
  std::string out;
  for (const auto& s : sweeps) {
    std::istringstream rows(to_csv(s.result));
    std::string line;
    std::getline(rows, line);
    if (out.empty()) out = "server," + line + "\n";
    while (std::getline(rows, line)) out += csv_field(s.name) + "," + line + "\n";
  }
  return out;
}

std::string render_comparison_index(const std::vector<compared_sweep>& sweeps,
                                    const detail::plot_set& plots,
                                    const detail::index_contents& contents) {
  using detail::html_escape;
  std::string names;
  for (const auto& s : sweeps) names += (names.empty() ? "" : ", ") + s.name;
  const std::string heading = detail::comparison_heading(sweeps);
  std::string out = detail::html_head("dnstransport comparison: " + names) +
                    fmt::format("<h1>DNS servers compared: {}</h1>\n", html_escape(heading));
  // The findings first, each server's under its name; then how it was measured, folded.
  std::string findings;
  for (const auto& s : sweeps) {
    if (s.result.findings.empty()) continue;
    findings += fmt::format("<h3>{}, {}</h3>\n", html_escape(s.name),
                            html_escape(detail::transports_heading(s.result))) +
                detail::findings_list_html(s.result);
  }
  const auto across = detail::comparison_findings(sweeps);
  if (!across.empty()) {
    findings += "<h3>Across servers</h3>\n<ul class=\"findings\">\n";
    for (const auto& line : across) {
      findings += fmt::format("<li class=\"apart\">{}</li>\n", html_escape(line));
    }
    findings += "</ul>\n";
  }
  if (!findings.empty()) out += "<h2>Findings</h2>\n" + findings;
  std::string notes;
  out += "<details><summary>How it was measured</summary>\n<ul>\n";
  for (const auto& line : detail::comparison_description(sweeps)) {
    if (line.starts_with("note: ")) {
      notes += fmt::format("<li class=\"warning\">{}</li>\n", html_escape(line));
    } else {
      out += fmt::format("<li>{}</li>\n", html_escape(line));
    }
  }
  out += "</ul>\n</details>\n";
  if (!notes.empty()) out += "<ul>\n" + notes + "</ul>\n";
  const auto missing = missing_points(sweeps);
  if (!missing.empty()) {
    // One line folded over the list: servers measured over different transports or grids
    // (as the demo's) are drawn where measured, which the plots show anyway.
    out += fmt::format(
        "<details><summary>Not measured everywhere (drawn where measured): {}</summary>\n<ul>\n",
        counted(missing.size(), "gap"));
    for (const auto& line : missing) out += "<li>" + html_escape(line) + "</li>\n";
    out += "</ul>\n</details>\n";
  }
  out += detail::html_plots(plots, contents);
  out += "<h2>Tables</h2>\n";
  for (const auto& table : detail::comparison_tables(sweeps)) out += detail::render_html(table);
  for (const auto& s : sweeps) {
    if (s.result.warnings.empty()) continue;
    out += fmt::format("<h3>Warnings for {}</h3>\n<ul>\n", html_escape(s.name));
    for (const auto& w : s.result.warnings) {
      out += "<li class=\"warning\">" + html_escape(w) + "</li>\n";
    }
    out += "</ul>\n";
  }
  out += "<h2>Data</h2>\n<ul>\n";
  for (const auto& file : contents.data_files) {
    out += fmt::format("<li><a href=\"{0}\">{0}</a></li>\n", html_escape(file));
  }
  out += "</ul>\n</body>\n</html>\n";
  return out;
}

}  // namespace

report_output write_comparison_report(const std::vector<compared_sweep>& sweeps,
                                      const std::filesystem::path& directory,
                                      const setting_namer& name_of) {
  detail::make_directory(directory);
  report_output output;
  detail::write_text(directory / "tables.txt", format_comparison(sweeps, name_of), output.files);
  detail::write_text(directory / "comparison.csv", comparison_csv(sweeps), output.files);
  detail::write_text(directory / "comparison.json", comparison_to_json(sweeps), output.files);

  detail::plot_set plots;
  detail::add_comparison_plots(sweeps, plots);
  std::string sources;
  for (const auto& s : sweeps) sources += (sources.empty() ? "" : ", ") + s.source;
  detail::index_contents contents;
  contents.source_name = sources;
  contents.data_files = {"tables.txt", "comparison.csv", "comparison.json"};
  detail::draw_plots(plots, directory, sources, output, contents.drawn, name_of);
  contents.plot_problem = output.plot_problem;
  output.index = directory / "index.html";
  detail::write_text(output.index,
                     naming_settings(render_comparison_index(sweeps, plots, contents), name_of),
                     output.files);
  return output;
}

}  // namespace dnstransport
