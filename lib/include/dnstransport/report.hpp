#pragma once
/// \file
/// Results as data and as text: a run's and a sweep's JSON (the source of truth), CSV, the
/// tables printed after a run or sweep, and the report directory with plots
/// (lib/src/report/: run_table.cpp, run_json*.cpp, sweep_json*.cpp, report_*.cpp).

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <dnstransport/error.hpp>
#include <dnstransport/load.hpp>
#include <dnstransport/search.hpp>
#include <dnstransport/sweep_result.hpp>
#include <dnstransport/text.hpp>
#include <dnstransport/version.hpp>

namespace dnstransport {

/// Schema tag written into every run JSON document.
inline constexpr std::string_view run_schema = "dnstransport.run/1";

/// The full result as a JSON document (pretty-printed, histograms included), with the keys
/// scripts rely on: queries_sent, responses_received, lost, qps, client_cpu_seconds,
/// latency_ns{min,mean,p50,p90,p99,p999,max,histogram}, connections, handshakes, ...
std::string to_json(const run_result& result);

/// Reads a document written by to_json. Throws setup_error naming `source_name` when the
/// text is not JSON, not a run result, or of another schema version.
run_result run_result_from_json(std::string_view text, std::string_view source_name);

/// The table printed after a run: what was run, where every query went, throughput,
/// latency percentiles, client CPU cost, and connection figures for TCP/TLS. The settings its
/// notes mention are named by `name_of` (the CLI: its flags; empty: their paths), as in
/// every text and report below.
std::string format_table(const run_result& result, const setting_namer& name_of = {});

/// Schema tag of the search JSON document.
inline constexpr std::string_view search_schema = "dnstransport.search/1";

/// The search as one JSON document: schema, criteria, `max_rate`, `failed_rate`,
/// `end_reason`, and `steps` (rate, phase, answered_percent, p50/p99 ms, verdict and each
/// step's full run result).
std::string to_json(const search_result& result);

/// Reads a document written by to_json(search_result); throws setup_error naming
/// `source_name` otherwise.
search_result search_result_from_json(std::string_view text, std::string_view source_name);

/// The table of a search's steps and its result, as printed by `search` and `report`.
std::string format_search(const search_result& result, const setting_namer& name_of = {});

/// "dnstransport.run/1", "dnstransport.sweep/1", ... of a JSON document; empty when it has
/// none (or is not JSON).
std::string schema_of(std::string_view text);

/// Schema tag of the sweep JSON document.
inline constexpr std::string_view sweep_schema = "dnstransport.sweep/1";

/// The whole sweep as one JSON document: schema, versions, plan (every option), target,
/// machine, `points` (each with transport, tls_backend, clients, queries_per_connection, every
/// repeat's full run result, summary, client_bound), `percent_of_udp`, `amortization` (t_inf,
/// h, n50, n90, n99, residual, ...) and warnings.
std::string to_json(const sweep_result& result);

/// Reads a document written by to_json(sweep_result). Throws setup_error naming
/// `source_name` when the text is not JSON, is a single run's result, another schema version
/// or not a dnstransport document at all.
sweep_result sweep_result_from_json(std::string_view text, std::string_view source_name);

/// One CSV row per point (header first): target (only in a sweep of several servers), transport,
/// clients, queries per connection (0 = unlimited), queries/s statistics, latency percentiles,
/// percent of UDP, client-bound.
std::string to_csv(const sweep_result& result);

/// The tables printed after a sweep and by `report`: what was run, the points (queries/s
/// mean/median/min/max/stddev, p50/p99 latency, client-bound), TCP/TLS as % of UDP, the
/// amortization fits with measured-versus-model detail, and the warnings. A sweep of several
/// servers (plan.targets) is shown as their comparison (format_comparison).
std::string format_tables(const sweep_result& result, const setting_namer& name_of = {});

/// What write_report wrote.
struct report_output {
  std::filesystem::path index;               ///< index.html
  std::vector<std::filesystem::path> files;  ///< every file written, index included
  std::vector<std::string> skipped_plots;    ///< plots left out, each with the reason
  /// Empty when the plots were drawn; otherwise why not (gnuplot missing or failing) and what
  /// to do about it.
  std::string plot_problem;
};

/// A search's report in `directory`: search.txt (the steps table), steps.csv and the plot
/// "search" (answered % and p99 latency against the offered rate, like resperf-report).
report_output write_search_report(const search_result& result,
                                  const std::filesystem::path& directory,
                                  std::string_view source_name, const setting_namer& name_of = {});

/// A run's report in `directory`: run.txt (its table), timeline.csv and the plot "timeline"
/// (answers per second and p50/p99 latency per interval; the server's CPU share when it was
/// monitored). Throws setup_error when the run has no timeline.
report_output write_run_report(const run_result& result, const std::filesystem::path& directory,
                               std::string_view source_name, const setting_namer& name_of = {});

/// Writes into `directory` (created if needed): tables.txt, points.csv, percent_of_udp.csv,
/// amortization.csv, one gnuplot script per plot, PNG and SVG plots drawn by running
/// `gnuplot` (when installed), and index.html showing every plot and table. `source_name`
/// (the JSON file) is named on the page. Throws setup_error when a file cannot be written;
/// a missing or failing gnuplot is reported in plot_problem, not thrown. A sweep of several
/// servers (plan.targets) is written as their comparison (write_comparison_report).
report_output write_report(const sweep_result& result, const std::filesystem::path& directory,
                           std::string_view source_name, const setting_namer& name_of = {});

/// One sweep in a comparison of servers, under the name the report gives it.
struct compared_sweep {
  std::string name;     ///< its label; the file name (without .json) when it has none
  std::string source;   ///< the file it was read from
  sweep_result result;  ///< the sweep; of a sweep of several servers, this server's part
};

/// The sweeps read from `files` (file name, result), in the order given, each named by its
/// label or, without one, its file name; a sweep of several servers gives one entry per
/// server, named by its target (prefixed by the file's name when several files are given); a
/// sweep with a distinct-sources axis gives one entry per value, named with it ("unbound, 100
/// sources"), since the comparison's tables and plots are keyed by transport and clients; a name
/// given twice gets its place in the list
/// ("sweep #1", "sweep #3").
std::vector<compared_sweep> comparison_of(
    const std::vector<std::pair<std::string, sweep_result>>& files);

/// What some sweeps measured and others did not, one line per sweep and transport: a
/// transport it has no point of, or the grid cells (clients, queries per connection) it
/// lacks. Empty when every sweep has the same grid. A comparison draws what exists.
std::vector<std::string> missing_points(const std::vector<compared_sweep>& sweeps);

/// The tables of a comparison: each sweep's description (file, dnstransport version,
/// machine, target, grid), a note when the machines or versions differ, the comparison
/// table (per server: UDP queries/s and each transport's % of UDP at every client count, h
/// and n90 per transport), % of UDP for every queries-per-connection value side by side, the
/// amortization fits of every server, and the points missing from some sweeps.
std::string format_comparison(const std::vector<compared_sweep>& sweeps,
                              const setting_namer& name_of = {});

/// The format and version of a comparison's JSON.
inline constexpr std::string_view comparison_schema = "dnstransport.comparison/1";

/// A comparison as JSON, for scripts ("schema": comparison_schema; docs/schema/
/// comparison.schema.json): "sweeps", each with its name, source file, label, versions,
/// machine, target, and what it measured as the sweep's JSON has it (points with their
/// summaries but without their runs, which the sources keep; percent_of_udp, amortization,
/// costs, warnings, findings); "findings" across the servers; and "missing", the points some
/// sweeps lack (missing_points).
std::string comparison_to_json(const std::vector<compared_sweep>& sweeps);

/// Writes a comparison into `directory` (created if needed): tables.txt, comparison.csv (a
/// row per server and point), comparison.json (comparison_to_json), gnuplot scripts and, with
/// gnuplot, PNG/SVG plots overlaying the servers (queries/s against clients per server and
/// transport, % of UDP grouped by server, amortization per transport with each server's fit,
/// latency percentiles per client count), and index.html. Throws setup_error when a file cannot be
/// written.
report_output write_comparison_report(const std::vector<compared_sweep>& sweeps,
                                      const std::filesystem::path& directory,
                                      const setting_namer& name_of = {});

}  // namespace dnstransport
