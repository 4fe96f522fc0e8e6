// A search's JSON, table and plot; a run's timeline report.
#include <cstring>

#include <fmt/format.h>

#include <dnstransport/error.hpp>
#include <dnstransport/report.hpp>
#include <dnstransport/text.hpp>

#include "report/json_io.hpp"
#include "report/report_detail.hpp"

namespace dnstransport {

namespace json = boost::json;

namespace detail {

json::object search_criteria_to_json(const search_spec& c) {
  return {{"min_answered_percent", detail::stable(c.min_answered_percent)},
          {"max_p99_ms", detail::stable(c.max_p99_ms)},
          {"start_rate", detail::stable(c.start_rate)},
          {"max_rate", detail::stable(c.max_rate)},
          {"step_seconds", detail::stable(c.step_seconds)},
          {"settle_seconds", detail::stable(c.settle_seconds)},
          {"repeats", c.repeats},
          {"precision", detail::stable(c.precision)},
          {"max_time_seconds", detail::stable(c.max_time_seconds)},
          {"arrivals", arrival_mode_name(c.load.traffic.arrivals)}};
}

search_spec search_criteria_from_json(const json::object& o) {
  search_spec c;
  c.min_answered_percent = detail::number_at(o, "min_answered_percent");
  c.max_p99_ms = detail::number_at(o, "max_p99_ms");
  c.start_rate = detail::number_at(o, "start_rate");
  c.max_rate = detail::number_at(o, "max_rate");
  c.step_seconds = detail::number_at(o, "step_seconds");
  c.settle_seconds = detail::number_at(o, "settle_seconds");
  c.repeats = static_cast<unsigned>(detail::count_at(o, "repeats"));
  c.precision = detail::number_at(o, "precision");
  c.max_time_seconds = detail::number_at(o, "max_time_seconds");
  const auto mode = parse_arrival_mode(detail::string_at(o, "arrivals"));
  if (!mode) throw std::invalid_argument("unknown \"arrivals\"");
  c.load.traffic.arrivals = *mode;
  return c;
}

}  // namespace detail

namespace {

using detail::bool_at;
using detail::count_at;
using detail::number_at;
using detail::stable;
using detail::string_at;

std::string rate_text(double rate) {
  return with_thousands(rate);
}

// The load every step ran, in words, from the first step's result.
std::string load_description(const search_result& r) {
  if (r.steps.empty()) return "no step was run";
  const run_result& run = r.steps.front().run;
  std::string transport(transport_name(run.transport));
  if (!run.tls_backend.empty()) transport += " (" + run.tls_backend + ")";
  std::string per_connection;
  if (traits_of(run.transport).has_connections) {
    per_connection = run.queries_per_connection == 0
                         ? ", persistent connections"
                         : fmt::format(", {} queries per connection", run.queries_per_connection);
  }
  return fmt::format("{}{} to {}:{}, {} x {} outstanding{}, {} arrivals, {:g} s per step",
                     run.label.empty() ? "" : run.label + ": ", transport, run.server, run.port,
                     counted(run.clients, "client"), run.outstanding, per_connection,
                     arrival_mode_name(run.arrivals), r.criteria.step_seconds);
}

std::string criteria_text(const search_spec& c) {
  std::string text = fmt::format("answered >= {:g} % of scheduled queries", c.min_answered_percent);
  if (c.max_p99_ms > 0) text += fmt::format(" and p99 <= {:g} ms", c.max_p99_ms);
  return text;
}

}  // namespace

std::string to_json(const search_result& r) {
  json::array steps;
  for (const auto& s : r.steps) {
    steps.push_back(json::object{{"index", s.index},
                                 {"phase", search_phase_name(s.phase)},
                                 {"repeat", s.repeat},
                                 {"rate", stable(s.rate)},
                                 {"answered_percent", stable(s.answered_percent)},
                                 {"qps", stable(s.qps)},
                                 {"p50_ms", stable(s.p50_ms)},
                                 {"p99_ms", stable(s.p99_ms)},
                                 {"scheduled", s.scheduled},
                                 {"answered", s.answered},
                                 {"lost", s.lost},
                                 {"not_sent", s.not_sent},
                                 {"client_cpu_share", stable(s.client_cpu_share)},
                                 {"passed", s.passed},
                                 {"verdict", s.verdict},
                                 {"run", detail::run_result_to_json(s.run)}});
  }
  const json::object out{{"schema", search_schema},
                         {"tool_version", library_version()},
                         {"criteria", detail::search_criteria_to_json(r.criteria)},
                         {"max_rate", stable(r.max_rate)},
                         {"failed_rate", stable(r.failed_rate)},
                         {"end_reason", r.end_reason},
                         {"interrupted", r.interrupted},
                         {"elapsed_seconds", stable(r.elapsed_seconds)},
                         {"steps", std::move(steps)}};
  return detail::pretty(out);
}

search_result search_result_from_json(std::string_view text, std::string_view source_name) {
  boost::system::error_code ec;
  const auto value = json::parse(text, ec);
  if (ec) throw setup_error(fmt::format("{}: not valid JSON: {}", source_name, ec.message()));
  try {
    if (!value.is_object()) throw std::invalid_argument("the document is not a JSON object");
    const auto& o = value.get_object();
    const auto* schema = o.if_contains("schema");
    if (schema == nullptr || !schema->is_string()) {
      throw std::invalid_argument("no \"schema\" key: not a dnstransport search result");
    }
    if (schema->get_string() != search_schema) {
      throw std::invalid_argument(fmt::format("schema \"{}\" is not the supported \"{}\"",
                                              std::string_view(schema->get_string()),
                                              search_schema));
    }
    search_result r;
    r.criteria = detail::search_criteria_from_json(detail::object_at(o, "criteria"));
    r.max_rate = number_at(o, "max_rate");
    r.failed_rate = number_at(o, "failed_rate");
    r.end_reason = string_at(o, "end_reason");
    r.interrupted = bool_at(o, "interrupted");
    r.elapsed_seconds = number_at(o, "elapsed_seconds");
    for (const auto& v : detail::array_at(o, "steps")) {
      if (!v.is_object()) throw std::invalid_argument("a step is not an object");
      const auto& so = v.get_object();
      search_step s;
      s.index = static_cast<unsigned>(count_at(so, "index"));
      s.phase = string_at(so, "phase") == "bisect" ? search_phase::bisect : search_phase::ramp;
      s.repeat = static_cast<unsigned>(count_at(so, "repeat"));
      s.rate = number_at(so, "rate");
      s.answered_percent = number_at(so, "answered_percent");
      s.qps = number_at(so, "qps");
      s.p50_ms = number_at(so, "p50_ms");
      s.p99_ms = number_at(so, "p99_ms");
      s.scheduled = count_at(so, "scheduled");
      s.answered = count_at(so, "answered");
      s.lost = count_at(so, "lost");
      s.not_sent = count_at(so, "not_sent");
      s.client_cpu_share = number_at(so, "client_cpu_share");
      s.passed = bool_at(so, "passed");
      s.verdict = string_at(so, "verdict");
      s.run = detail::run_result_from_json_value(detail::object_at(so, "run"));
      r.steps.push_back(std::move(s));
    }
    return r;
  } catch (const std::exception& e) {
    throw setup_error(fmt::format("{}: {}", source_name, e.what()));
  }
}

std::string schema_of(std::string_view text) {
  boost::system::error_code ec;
  const auto value = json::parse(text, ec);
  if (ec || !value.is_object()) return {};
  const auto* schema = value.get_object().if_contains("schema");
  return schema != nullptr && schema->is_string() ? std::string(schema->get_string()) : "";
}

std::string format_search(const search_result& r, const setting_namer& name_of) {
  detail::report_table t;
  t.title = "Search for the highest rate answered in full: " + load_description(r);
  t.header = {"step",     "phase", "offered q/s", "answered q/s", "answered %",
              "not sent", "lost",  "p50 ms",      "p99 ms",       "verdict"};
  t.left_columns = 2;
  for (const auto& s : r.steps) {
    t.rows.push_back({std::to_string(s.index + 1),
                      fmt::format("{}{}", search_phase_name(s.phase),
                                  s.repeat > 0 ? fmt::format(" #{}", s.repeat + 1) : ""),
                      rate_text(s.rate), rate_text(s.qps),
                      fmt::format("{:.2f}", s.answered_percent),
                      with_thousands(static_cast<double>(s.not_sent)),
                      with_thousands(static_cast<double>(s.lost)), fmt::format("{:.3f}", s.p50_ms),
                      fmt::format("{:.3f}", s.p99_ms), s.verdict});
  }
  t.notes.push_back("pass: " + criteria_text(r.criteria) +
                    "; latency from each query's scheduled send time");
  std::string out = detail::render_text(t);
  std::string result;
  if (r.max_rate > 0) {
    result = fmt::format("highest rate answered in full: {} queries/s", rate_text(r.max_rate));
    if (r.failed_rate > 0) {
      result += fmt::format(" ({} queries/s failed", rate_text(r.failed_rate));
      result += r.end_reason == "converged"
                    ? fmt::format("; within {:g} %)", r.criteria.precision * 100)
                    : ")";
    }
  } else {
    result = "no rate tried was answered in full";
  }
  const std::string why =
      r.end_reason == "converged" ? ""
      : r.end_reason == "max_rate"
          ? fmt::format("the {} ceiling passed", setting("search_spec::max_rate"))
      : r.end_reason == "max_time"
          ? fmt::format("stopped by {}", setting("search_spec::max_time_seconds"))
      : r.end_reason == "interrupted"     ? "interrupted"
      : r.end_reason == "no_passing_rate" ? "even the lowest rate failed"
                                          : r.end_reason;
  out += "\n" + result + (why.empty() ? "" : " [" + why + "]") +
         fmt::format(", {} steps in {:.0f} s\n", r.steps.size(), r.elapsed_seconds);
  return naming_settings(out, name_of);
}

report_output write_search_report(const search_result& r, const std::filesystem::path& directory,
                                  std::string_view source_name, const setting_namer& name_of) {
  detail::make_directory(directory);
  report_output output;
  output.index = directory / "search.txt";
  detail::write_text(output.index, format_search(r, name_of), output.files);
  std::string csv =
      "step,phase,repeat,offered_qps,answered_qps,answered_percent,scheduled,answered,not_sent,"
      "lost,p50_ms,p99_ms,client_cpu_share,passed,verdict\n";
  std::vector<std::vector<double>> passed, failed;
  for (const auto& s : r.steps) {
    csv += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},\"{}\"\n", s.index + 1,
                       search_phase_name(s.phase), s.repeat + 1, s.rate, s.qps, s.answered_percent,
                       s.scheduled, s.answered, s.not_sent, s.lost, s.p50_ms, s.p99_ms,
                       s.client_cpu_share, s.passed ? 1 : 0, s.verdict);
    if (s.run.interrupted) continue;
    (s.passed ? passed : failed).push_back({s.rate, s.answered_percent, s.p99_ms});
  }
  detail::write_text(directory / "steps.csv", csv, output.files);
  detail::plot_set plots;
  if (passed.empty() && failed.empty()) {
    plots.skipped.push_back("search: no step completed");
  } else {
    std::string body =
        detail::gnuplot_data("passed", passed) + detail::gnuplot_data("failed", failed);
    body += fmt::format(
        "set title {}\n"
        "set xlabel 'offered load (queries/s)'\n"
        "set ylabel 'answered (% of queries scheduled)'\n"
        "set y2label 'p99 latency from the scheduled send (ms)'\n"
        "set ytics nomirror\nset y2tics\nset yrange [*:100.5]\nset y2range [0:*]\nset grid\n"
        "set key below\n",
        detail::gnuplot_string(load_description(r)));
    if (r.max_rate > 0) {
      body += fmt::format(
          "set arrow from {0},graph 0 to {0},graph 1 nohead dt 2 lc rgb 'gray40'\n"
          "set label {1} at {0},graph 0.05 offset 1,0\n",
          detail::gnuplot_number(r.max_rate),
          detail::gnuplot_string("max " + rate_text(r.max_rate) + " q/s"));
    }
    std::vector<std::string> parts;
    if (!passed.empty()) {
      parts.push_back(
          "$passed using 1:2 with points pt 7 ps 1.5 lc rgb '#1a9641' title 'answered %, passed'");
      parts.push_back(
          "$passed using 1:3 axes x1y2 with points pt 9 ps 1.5 lc rgb '#2b83ba' title 'p99, "
          "passed'");
    }
    if (!failed.empty()) {
      parts.push_back(
          "$failed using 1:2 with points pt 5 ps 1.5 lc rgb '#d7191c' title 'answered %, failed'");
      parts.push_back(
          "$failed using 1:3 axes x1y2 with points pt 11 ps 1.5 lc rgb '#fdae61' title 'p99, "
          "failed'");
    }
    body += "plot " + fmt::format("{}", fmt::join(parts, ", \\\n     ")) + "\n";
    plots.plots.push_back({"search", "Answered and p99 latency against offered load",
                           "Each step of the search: the share of scheduled queries answered "
                           "(left axis) and the 99th percentile latency (right axis) at the "
                           "rate offered; the dashed line is the highest rate answered in full.",
                           body});
  }
  std::vector<std::string> drawn;
  detail::draw_plots(plots, directory, source_name, output, drawn, name_of);
  return output;
}

report_output write_run_report(const run_result& r, const std::filesystem::path& directory,
                               std::string_view source_name, const setting_namer& name_of) {
  if (r.timeline.empty()) {
    throw setup_error(fmt::format(
        "{}: the run has no timeline (it was run with {} 0, or before timelines existed)",
        source_name, setting("load_spec::output.interval_seconds")));
  }
  detail::make_directory(directory);
  report_output output;
  output.index = directory / "run.txt";
  detail::write_text(output.index, format_table(r, name_of), output.files);
  const bool monitored = r.server_usage.monitored();
  std::string csv =
      "start_seconds,duration_seconds,sent,answered,lost,failed,not_sent,qps,p50_ms,p99_ms,"
      "connections_open,connections_opened,handshakes,server_cpu_seconds,server_rss_bytes\n";
  std::vector<std::vector<double>> rows;
  for (const auto& t : r.timeline) {
    csv += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", t.start_seconds,
                       t.duration_seconds, t.sent, t.answered, t.lost, t.failed, t.not_sent, t.qps,
                       t.p50_ms, t.p99_ms, t.connections_open, t.connections_opened, t.handshakes,
                       t.server_cpu_seconds >= 0 ? fmt::format("{}", t.server_cpu_seconds) : "",
                       t.server_cpu_seconds >= 0 ? fmt::format("{}", t.server_rss_bytes) : "");
    // A last row of a few milliseconds (the answers that came after sending ended) would
    // swing the lines; it stays in the CSV.
    if (t.duration_seconds < r.interval_seconds / 2) continue;
    const double middle = t.start_seconds + t.duration_seconds / 2;
    const double cpu =
        t.server_cpu_seconds >= 0 ? 100 * t.server_cpu_seconds / t.duration_seconds : -1;
    rows.push_back({middle, t.qps, t.p50_ms, t.p99_ms, cpu});
  }
  detail::write_text(directory / "timeline.csv", csv, output.files);
  std::string body = detail::gnuplot_data("rows", rows);
  body += fmt::format(
      "set title {}\n"
      "set xlabel 'seconds since the end of the warm-up'\n"
      "set ylabel 'answers per second'\n"
      "set y2label 'latency (ms)'\n"
      "set ytics nomirror\nset y2tics\nset yrange [0:*]\nset y2range [0:*]\nset grid\n"
      "set key below\nset datafile missing '-1'\n",
      detail::gnuplot_string(
          fmt::format("{} to {}:{}", transport_name(r.transport), r.server, r.port)));
  body +=
      "plot $rows using 1:2 with linespoints pt 7 lc rgb '#2b83ba' title 'answers/s', \\\n"
      "     $rows using 1:3 axes x1y2 with linespoints pt 9 lc rgb '#1a9641' title 'p50 ms', \\\n"
      "     $rows using 1:4 axes x1y2 with linespoints pt 5 lc rgb '#d7191c' title 'p99 ms'";
  body += "\n";
  detail::plot_set plots;
  plots.plots.push_back({"timeline", "Answers per second and latency over the run",
                         "Per interval of the run: answers per second (left axis) and p50/p99 "
                         "latency (right axis).",
                         body});
  if (monitored) {
    std::string server = detail::gnuplot_data("rows", rows);
    server +=
        "set title 'CPU of the monitored server processes'\n"
        "set xlabel 'seconds since the end of the warm-up'\n"
        "set ylabel '% of one CPU'\nset yrange [0:*]\nset grid\nset key below\n"
        "plot $rows using 1:($5 < 0 ? NaN : $5) with linespoints pt 7 lc rgb '#7b3294' "
        "title 'server CPU'\n";
    plots.plots.push_back({"timeline_server", "Server CPU over the run",
                           "Per interval: the monitored server processes' CPU time as a "
                           "percentage of one CPU.",
                           server});
  }
  std::vector<std::string> drawn;
  detail::draw_plots(plots, directory, source_name, output, drawn, name_of);
  return output;
}

}  // namespace dnstransport
