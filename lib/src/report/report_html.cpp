// index.html: every plot and table of a sweep on one page.
#include <algorithm>

#include <fmt/format.h>

#include "report/report_detail.hpp"

namespace dnstransport::detail {

namespace {

constexpr std::string_view style = R"(<style>
body { font-family: sans-serif; margin: 2em auto; max-width: 1200px; padding: 0 1em; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 90%; }
th, td { border: 1px solid #bbb; padding: 2px 8px; text-align: right; white-space: nowrap; }
th { background: #eee; }
.l { text-align: left; }
.note { color: #555; font-size: 90%; margin: 0.2em 0; }
.warning { color: #9a3c00; }
figure { margin: 2em 0; }
img { max-width: 100%; border: 1px solid #ddd; }
</style>
)";

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string render_html(const report_table& t) {
  std::string out = fmt::format("<h3>{}</h3>\n<table>\n<tr>", html_escape(t.title));
  auto cell = [&t](std::string_view tag, std::size_t column, const std::string& text) {
    return fmt::format("<{0}{1}>{2}</{0}>", tag, column < t.left_columns ? " class=\"l\"" : "",
                       html_escape(text));
  };
  for (std::size_t i = 0; i < t.header.size(); ++i) out += cell("th", i, t.header[i]);
  out += "</tr>\n";
  for (const auto& row : t.rows) {
    out += "<tr>";
    for (std::size_t i = 0; i < row.size(); ++i) out += cell("td", i, row[i]);
    out += "</tr>\n";
  }
  out += "</table>\n";
  for (const auto& note : t.notes)
    out += fmt::format("<p class=\"note\">{}</p>\n", html_escape(note));
  return out;
}

std::string html_head(std::string_view title) {
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<title>{}</title>\n{}</head>\n<body>\n",
      html_escape(title), style);
}

std::string html_plots(const plot_set& plots, const index_contents& contents) {
  std::string out = "<h2>Plots</h2>\n";
  if (!contents.plot_problem.empty()) {
    out += "<p class=\"warning\">" + html_escape(contents.plot_problem) + "</p>\n";
  }
  for (const auto& p : plots.plots) {
    const bool drawn =
        std::find(contents.drawn.begin(), contents.drawn.end(), p.name) != contents.drawn.end();
    if (!drawn) {
      out += fmt::format("<p>{}: not drawn; script <a href=\"{}.gp\">{}.gp</a></p>\n",
                         html_escape(p.title), p.name, p.name);
      continue;
    }
    out += fmt::format(
        "<figure id=\"{0}\">\n<a href=\"{0}.svg\"><img src=\"{0}.png\" alt=\"{1}\"></a>\n"
        "<figcaption>{2} <a href=\"{0}.svg\">SVG</a> &middot; "
        "<a href=\"{0}.gp\">gnuplot script</a></figcaption>\n</figure>\n",
        p.name, html_escape(p.title), html_escape(p.description));
  }
  if (!plots.skipped.empty()) {
    out += "<p>Not plotted, for lack of data:</p>\n<ul>\n";
    for (const auto& s : plots.skipped) out += "<li>" + html_escape(s) + "</li>\n";
    out += "</ul>\n";
  }
  return out;
}

std::string findings_html(const sweep_result& result) {
  if (result.findings.empty()) return {};
  return "<h2>Findings</h2>\n" + findings_list_html(result);
}

std::string findings_list_html(const sweep_result& result) {
  if (result.findings.empty()) return {};
  std::string out;
  std::string target = "\n";  // no target yet
  for (const auto& f : result.findings) {
    if (const std::string series = series_name(f.target, f.distinct_sources); series != target) {
      if (target != "\n") out += "</ul>\n";
      target = series;
      if (!target.empty()) out += fmt::format("<h3>{}</h3>\n", html_escape(target));
      out += "<ul class=\"findings\">\n";
    }
    out += fmt::format("<li class=\"{}\">{}</li>\n", html_escape(f.kind), html_escape(f.text));
  }
  return out + "</ul>\n";
}

std::string render_index(const sweep_result& result, const plot_set& plots,
                         const index_contents& contents) {
  const std::string heading = sweep_heading(result);
  std::string out = html_head(fmt::format("{}, {}", heading, result.started_at)) +
                    fmt::format("<h1>{}</h1>\n<ul>\n", html_escape(heading));
  for (const auto& line : sweep_description(result)) out += "<li>" + html_escape(line) + "</li>\n";
  out += fmt::format("<li>made from {}</li>\n</ul>\n", html_escape(contents.source_name));

  out += findings_html(result);

  if (!result.warnings.empty()) {
    out += "<h2>Warnings</h2>\n<ul>\n";
    for (const auto& w : result.warnings) {
      out += "<li class=\"warning\">" + html_escape(w) + "</li>\n";
    }
    out += "</ul>\n";
  }

  out += html_plots(plots, contents);

  out += "<h2>Tables</h2>\n";
  for (const auto& table : sweep_tables(result)) out += render_html(table);

  out += "<h2>Data</h2>\n<ul>\n";
  for (const auto& file : contents.data_files) {
    out += fmt::format("<li><a href=\"{0}\">{0}</a></li>\n", html_escape(file));
  }
  out += "</ul>\n</body>\n</html>\n";
  return out;
}

}  // namespace dnstransport::detail
