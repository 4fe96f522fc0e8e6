#pragma once
/// \file
/// Sweeps: many loads over a grid of transports, client counts and queries per connection,
/// each repeated and summarized, and the two answers the tool exists for: TCP/TLS throughput
/// as a percentage of UDP, and how many queries a connection must carry before its set-up
/// (TCP and TLS handshakes) stops mattering. Also the sweep's JSON document (the source of
/// truth), its CSV, the text tables and the report directory with plots.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <dnstransport/histogram.hpp>
#include <dnstransport/load.hpp>
#include <dnstransport/tls.hpp>

namespace dnstransport {

// ---------------------------------------------------------------------------------------------
// Plan

/// One entry of a sweep's transport axis: a transport and, for DNS over TLS, the client's TLS
/// library (so OpenSSL and GnuTLS can be compared in one sweep).
struct sweep_transport {
  transport_kind transport = transport_kind::udp;
  std::optional<tls_backend> backend;  ///< set for tls only

  friend bool operator==(const sweep_transport&, const sweep_transport&) = default;
};

/// "udp", "tcp", "tls-openssl" or "tls-gnutls": the name used in tables, plots and CSV.
std::string sweep_transport_name(const sweep_transport& transport);

/// Parses a comma-separated list of udp, tcp, tls, tls-openssl, tls-gnutls; plain "tls" uses
/// `default_backend`. Throws setup_error (naming --transports) for an unknown, empty or
/// repeated entry.
std::vector<sweep_transport> parse_sweep_transports(std::string_view list,
                                                    tls_backend default_backend);

/// Parses a comma-separated list of client counts ("1,2,4,8,16"). Throws setup_error (naming
/// --clients) for a value that is not a positive number, or a repeated value.
std::vector<unsigned> parse_client_counts(std::string_view list);

/// Parses a comma-separated list of queries per connection ("1,10,100,unlimited"); unlimited
/// (or 0) is stored as 0. Throws setup_error (naming --queries-per-connection).
std::vector<std::uint64_t> parse_queries_per_connection_list(std::string_view list);

/// "unlimited" for 0, the number otherwise.
std::string queries_per_connection_name(std::uint64_t queries_per_connection);

/// Where each transport's listener is on the target (a real server usually has UDP and TCP on
/// 53 and DNS over TLS on 853; the built-in responder has one free port per listener).
struct sweep_ports {
  std::uint16_t udp = 53;
  std::uint16_t tcp = 53;
  std::uint16_t tls = 853;

  /// The port for `transport`.
  std::uint16_t of(transport_kind transport) const noexcept;
};

/// A grid of loads. Each point is one (transport, clients, queries per connection) cell; UDP
/// has no connections, so it is run once per client count whatever the queries-per-connection
/// axis holds.
struct sweep_plan {
  /// Every run option (server, outstanding, threads, timeout, warm-up, TLS settings, queries,
  /// stop flag, ...). Its transport, port, clients, queries_per_connection, duration_seconds
  /// and on_progress are replaced for each point.
  load_spec base;
  sweep_ports ports;
  std::vector<sweep_transport> transports{{transport_kind::udp, std::nullopt},
                                          {transport_kind::tcp, std::nullopt},
                                          {transport_kind::tls, tls_backend::openssl}};
  std::vector<unsigned> clients{1, 4, 16};
  /// TCP/TLS: queries per connection; 0 = unlimited (one connection for the whole run).
  std::vector<std::uint64_t> queries_per_connection{1, 10, 100, 0};
  unsigned repeats = 3;            ///< runs per point
  double duration_seconds = 0.5;   ///< measured time of each run (base.count, when set, wins)
  double pause_seconds = 0.2;      ///< idle time between runs, so TIME_WAIT and queues drain
  std::string target_description;  ///< e.g. "built-in responder (in this process)"
  std::string command_line;        ///< how the sweep was started, for the record
};

/// Sets the axes, repeats, duration and pause of a named study:
/// - "load": udp, tcp, tls x clients 1, 2, 4, 8, 16, persistent connections, 3 x 5 s;
/// - "amortization": tcp, tls x queries per connection 1, 2, 5, 10, 20, 50, 100, 200, 500,
///   1000, 2000, 5000, 10000, 20000 and unlimited, 8 clients, 3 x 3 s.
/// TLS entries use plan.base.tls.backend. Throws setup_error (naming --preset) otherwise.
void apply_preset(sweep_plan& plan, std::string_view name);

/// One cell of the grid.
struct sweep_point {
  sweep_transport transport;
  unsigned clients = 1;
  std::uint64_t queries_per_connection = 0;  ///< 0: unlimited (always 0 for udp)

  friend bool operator==(const sweep_point&, const sweep_point&) = default;
};

/// "tcp, 4 clients, 100 queries/connection": a point as a reader names it.
std::string describe(const sweep_point& point);

/// The points of a plan in the order they are run: transports, then client counts, then
/// queries per connection, each in the order given. Throws setup_error for an empty axis, a
/// repeated value, zero clients or repeats, a duration or pause out of range, and
/// contradictions such as queries-per-connection values other than unlimited when every
/// transport is UDP.
std::vector<sweep_point> expand(const sweep_plan& plan);

/// The load_spec of one point: plan.base with the point's transport, port, clients, queries
/// per connection and the plan's duration.
load_spec point_spec(const sweep_plan& plan, const sweep_point& point);

// ---------------------------------------------------------------------------------------------
// Results

/// A point whose busiest worker thread used at least this share of a CPU in any repeat is
/// flagged client-bound: its figure measures the generator, not the server.
inline constexpr double client_bound_cpu_share = 0.9;

/// Run-to-run spread is (max - min) / median of the repeats' queries/s; above this a warning
/// is given (the reference studies saw 10-15 % run-to-run variation).
inline constexpr double spread_warning_threshold = 0.15;

/// Queries per second over the repeats of a point.
struct qps_statistics {
  double mean = 0;
  double median = 0;
  double min = 0;
  double max = 0;
  double stddev = 0;  ///< sample standard deviation (n - 1); 0 for a single repeat
  double spread = 0;  ///< (max - min) / median; 0 when the median is 0
};

/// What the repeats of a point add up to.
struct point_summary {
  qps_statistics qps;
  latency_histogram latency;              ///< all repeats merged
  latency_histogram first_query_latency;  ///< all repeats merged
  latency_histogram connect_latency;      ///< all repeats merged
  latency_histogram handshake_latency;    ///< all repeats merged
  std::uint64_t queries_sent = 0;         ///< summed over the repeats
  std::uint64_t responses_received = 0;
  std::uint64_t lost = 0;  ///< lost + lost_on_close
  std::uint64_t connections_opened = 0;
  std::uint64_t connections_failed = 0;
  double max_thread_cpu_share = 0;  ///< highest over the repeats
  bool client_bound = false;        ///< max_thread_cpu_share >= client_bound_cpu_share
};

/// Summarizes the repeats of one point (an empty list gives an all-zero summary).
point_summary summarize(const std::vector<run_result>& repeats);

/// One point with every repeat kept.
struct sweep_point_result {
  sweep_point point;
  std::vector<run_result> repeats;
  point_summary summary;
};

/// A TCP/TLS point's throughput relative to UDP with the same number of clients.
struct percent_of_udp_entry {
  sweep_transport transport;
  unsigned clients = 0;
  std::uint64_t queries_per_connection = 0;
  double percent = 0;         ///< 100 x mean qps / UDP mean qps
  double percent_min = 0;     ///< 100 x min qps / UDP max qps: the spread carried through
  double percent_max = 0;     ///< 100 x max qps / UDP min qps
  bool client_bound = false;  ///< this point or its UDP reference was client-bound
};

/// For every TCP/TLS point that has a UDP point with the same client count (and answers), in
/// the order of `points`.
std::vector<percent_of_udp_entry> compute_percent_of_udp(
    const std::vector<sweep_point_result>& points);

/// A measured or observed (queries per connection, queries/s) pair; N = 0 means unlimited and
/// observes T_inf directly.
struct throughput_sample {
  std::uint64_t queries_per_connection = 0;
  double qps = 0;
};

/// T(N) = t_inf * N / (N + h): throughput when every connection carries N queries and its
/// set-up costs as much as h queries.
struct amortization_model {
  double t_inf = 0;     ///< queries/s with connections that are never replaced
  double h = 0;         ///< set-up cost in query-equivalents; N = h reaches 50 % of t_inf
  double residual = 0;  ///< relative RMS residual: sqrt(mean(((measured - model) / model)^2))

  /// The model at N queries per connection (0: unlimited, t_inf).
  double qps_at(std::uint64_t queries_per_connection) const noexcept;
};

/// Least-squares fit of T(N) = t_inf * N / (N + h) minimizing the relative residuals (so a
/// curve spanning orders of magnitude is fitted evenly). Written as 1/T = 1/t_inf +
/// (h/t_inf)/N the problem is linear and solved exactly. A negative h (throughput falling
/// with longer connections) is clamped to 0. Needs two distinct N values, at least one finite,
/// and positive throughputs; nothing otherwise.
std::optional<amortization_model> fit_amortization(const std::vector<throughput_sample>& samples);

/// A measured point beside the fitted and simple models.
struct amortization_sample {
  std::uint64_t queries_per_connection = 0;  ///< 0: unlimited
  double measured_qps = 0;                   ///< mean over the repeats
  double measured_min = 0;
  double measured_max = 0;
  double model_qps = 0;         ///< the fitted model
  double simple_model_qps = 0;  ///< t_inf * N / (N + 1): a set-up costs one query
  double deviation = 0;         ///< (measured - model) / model
  bool client_bound = false;
};

/// Where the measured curve departs from the fitted model by more than this share, the
/// report names the queries-per-connection value.
inline constexpr double amortization_departure_tolerance = 0.15;

/// The handshake-amortization answer for one transport and client count.
struct amortization_fit {
  sweep_transport transport;
  unsigned clients = 0;
  amortization_model model;
  double n50 = 0;  ///< queries per connection for 50 % of t_inf (= h)
  double n90 = 0;  ///< 90 % (= 9 h)
  double n99 = 0;  ///< 99 % (= 99 h)
  /// The simple model t_inf * N / (N + 1) against the same measurements (relative RMS).
  double simple_residual = 0;
  std::vector<amortization_sample> samples;  ///< in increasing N, unlimited last
  /// Queries-per-connection values (0: unlimited) where |deviation| exceeds the tolerance.
  std::vector<std::uint64_t> departures;
};

/// One fit per TCP/TLS transport and client count with at least two queries-per-connection
/// values measured, in the order the points were run.
std::vector<amortization_fit> compute_amortization(const std::vector<sweep_point_result>& points);

/// The machine a sweep ran on.
struct machine_info {
  unsigned cpus = 0;      ///< logical CPUs
  std::string cpu_model;  ///< from /proc/cpuinfo; empty when unknown
  std::string kernel;     ///< uname: "Linux 6.1.0-18-amd64 x86_64"
};

/// This machine.
machine_info this_machine();

/// Everything a sweep measured and derived.
struct sweep_result {
  sweep_plan plan;           ///< as run (base.queries and callbacks are not kept when read back)
  std::string query_origin;  ///< where the queries came from
  std::size_t query_count = 0;
  std::string tool_version;
  machine_info machine;
  std::string started_at;  ///< UTC, ISO 8601
  double elapsed_seconds = 0;
  bool interrupted = false;  ///< stopped by base.stop before every point was run
  std::size_t planned_points = 0;
  std::vector<sweep_point_result> points;  ///< points measured, in the order they were run
  std::vector<percent_of_udp_entry> percent_of_udp;
  std::vector<amortization_fit> amortization;
  std::vector<std::string> warnings;  ///< spread, client-bound points, failures, ...
};

/// Fills percent_of_udp, amortization and warnings from the points.
void derive_results(sweep_result& result);

// ---------------------------------------------------------------------------------------------
// Running

/// Where a sweep is, for a progress display.
struct sweep_progress {
  std::size_t point_index = 0;  ///< 0-based
  std::size_t point_count = 0;
  unsigned repeat = 0;  ///< 0-based
  unsigned repeats = 0;
  sweep_point point;
  double elapsed_seconds = 0;        ///< since the sweep started
  double eta_seconds = 0;            ///< estimated time left, from the runs so far
  std::optional<load_progress> run;  ///< the current run; nothing when it is just starting
};

/// Hooks called from the thread that called run_sweep.
struct sweep_callbacks {
  /// At the start of each run and about once per second during it.
  std::function<void(const sweep_progress&)> on_progress;
  /// After each point, with everything measured so far (derived results included), so a
  /// caller can save partial results.
  std::function<void(const sweep_result&)> on_point_done;
};

/// Runs every point of the plan `plan.repeats` times with run_load, pausing between runs.
/// Checks the whole plan first (throws setup_error before sending anything). When
/// plan.base.stop becomes true the sweep stops within about 50 ms and returns what was
/// measured: complete repeats are kept, the interrupted run is discarded (and said so in the
/// warnings), and `interrupted` is set.
sweep_result run_sweep(const sweep_plan& plan, const sweep_callbacks& callbacks = {});

// ---------------------------------------------------------------------------------------------
// JSON, CSV, tables, report

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

/// One CSV row per point (header first): transport, clients, queries per connection (0 =
/// unlimited), queries/s statistics, latency percentiles, percent of UDP, client-bound.
std::string to_csv(const sweep_result& result);

/// The tables printed after a sweep and by `report`: what was run, the points (queries/s
/// mean/median/min/max/stddev, p50/p99 latency, client-bound), TCP/TLS as % of UDP, the
/// amortization fits with measured-versus-model detail, and the warnings.
std::string format_tables(const sweep_result& result);

/// What write_report wrote.
struct report_output {
  std::filesystem::path index;               ///< index.html
  std::vector<std::filesystem::path> files;  ///< every file written, index included
  std::vector<std::string> skipped_plots;    ///< plots left out, each with the reason
  /// Empty when the plots were drawn; otherwise why not (gnuplot missing or failing) and what
  /// to do about it.
  std::string plot_problem;
};

/// Writes into `directory` (created if needed): tables.txt, points.csv, percent_of_udp.csv,
/// amortization.csv, one gnuplot script per plot, PNG and SVG plots drawn by running
/// `gnuplot` (when installed), and index.html showing every plot and table. `source_name`
/// (the JSON file) is named on the page. Throws setup_error when a file cannot be written;
/// a missing or failing gnuplot is reported in plot_problem, not thrown.
report_output write_report(const sweep_result& result, const std::filesystem::path& directory,
                           std::string_view source_name);

}  // namespace dnstransport
