#pragma once
/// \file
/// What a sweep measured and derived: each point's repeats and summary, TCP/TLS throughput
/// as a percentage of UDP, the amortization fit per transport, and the machine it ran on.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <dnstransport/cost_model.hpp>
#include <dnstransport/fit.hpp>
#include <dnstransport/load.hpp>
#include <dnstransport/sweep_plan.hpp>

namespace dnstransport {

/// Run-to-run spread is (max - min) / median of the repeats' queries/s; above this a warning
/// is given (the reference studies saw 10-15 % run-to-run variation).
inline constexpr double spread_warning_threshold = 0.15;

/// Queries per second over the repeats of a point.
struct qps_statistics {
  double mean = 0;    ///< mean of the repeats' queries/s
  double median = 0;  ///< their median
  double min = 0;     ///< the lowest
  double max = 0;     ///< the highest
  double stddev = 0;  ///< sample standard deviation (n - 1); 0 for a single repeat
  double spread = 0;  ///< (max - min) / median; 0 when the median is 0
};

/// What the repeats of a point add up to.
struct point_summary {
  qps_statistics qps;                     ///< the repeats' queries per second
  latency_histogram latency;              ///< all repeats merged
  latency_histogram first_query_latency;  ///< all repeats merged
  latency_histogram connect_latency;      ///< all repeats merged
  latency_histogram handshake_latency;    ///< all repeats merged
  std::uint64_t queries_sent = 0;         ///< summed over the repeats
  std::uint64_t responses_received = 0;   ///< summed over the repeats
  std::uint64_t lost = 0;                 ///< lost + lost_on_close, summed
  std::uint64_t connections_opened = 0;   ///< summed over the repeats
  std::uint64_t connections_failed = 0;   ///< summed over the repeats
  double max_thread_cpu_share = 0;        ///< highest over the repeats
  bool client_bound = false;              ///< max_thread_cpu_share >= client_bound_cpu_share
  /// Whether any repeat measured the monitored server's CPU (load_spec::monitor.pids); false
  /// when none did.
  bool server_monitored = false;
  /// The monitored server's CPU seconds, summed over the repeats that measured it.
  double server_cpu_seconds = 0;
  std::uint64_t server_answers = 0;  ///< the answers of those repeats
  /// Server CPU seconds per 1,000 answers (0 when not monitored or nothing was answered).
  double server_cpu_per_1k_answers() const noexcept {
    return server_answers == 0 ? 0
                               : server_cpu_seconds * 1000.0 / static_cast<double>(server_answers);
  }
};

/// Summarizes the repeats of one point (an empty list gives an all-zero summary).
point_summary summarize(const std::vector<run_result>& repeats);

/// sweep --search: what the search of one point found.
struct point_search {
  double max_rate = 0;     ///< the highest rate answered in full
  double failed_rate = 0;  ///< the lowest that failed above it; 0: none
  std::string end_reason;  ///< search_result::end_reason
  unsigned steps = 0;      ///< loads the search ran
};

/// One point with every repeat kept.
struct sweep_point_result {
  sweep_point point;  ///< which point
  /// The runs measured (with sweep --search: the passing repetitions at the rate found).
  std::vector<run_result> repeats;
  point_summary summary;               ///< what the repeats add up to
  std::optional<point_search> search;  ///< sweep --search only
};

/// The transport every other is measured against ("% of UDP"): what a server keeps when
/// clients move from it to another transport.
inline constexpr transport_kind reference_transport = transport_kind::udp;

/// A TCP/TLS point's throughput relative to UDP with the same number of clients.
struct percent_of_udp_entry {
  std::string target;  ///< the point's target (its UDP reference is the same target's)
  /// The point's distinct sources (sweep_point::distinct_sources), and its UDP reference's.
  std::uint64_t distinct_sources = 0;
  sweep_transport transport;  ///< the point's transport
  unsigned clients = 0;       ///< the point's clients, and its UDP reference's
  /// The point's queries per connection; 0: unlimited.
  std::uint64_t queries_per_connection = 0;
  double percent = 0;         ///< 100 x mean qps / UDP mean qps
  double percent_min = 0;     ///< 100 x min qps / UDP max qps: the spread carried through
  double percent_max = 0;     ///< 100 x max qps / UDP min qps
  bool client_bound = false;  ///< this point or its UDP reference was client-bound
  /// The UDP reference was client-bound: its queries/s are the generator's limit, so no
  /// share of the server's UDP throughput can be read from it. Reports show the entry as not
  /// measurable (percent and its range are kept here, raw, for scripts).
  bool reference_client_bound = false;
  /// Whether a % of UDP can be shown as a finding: its reference measured the server.
  bool measurable() const noexcept { return !reference_client_bound; }
};

/// For every TCP/TLS point that has a UDP point with the same client count, target and
/// distinct sources (and answers), in the order of `points`.
std::vector<percent_of_udp_entry> compute_percent_of_udp(
    const std::vector<sweep_point_result>& points);

/// A measured point beside the fitted and simple models.
struct amortization_sample {
  std::uint64_t queries_per_connection = 0;  ///< 0: unlimited
  double measured_qps = 0;                   ///< mean over the repeats
  double measured_min = 0;                   ///< lowest of the repeats
  double measured_max = 0;                   ///< highest of the repeats
  double model_qps = 0;                      ///< the fitted model
  double simple_model_qps = 0;               ///< t_inf * N / (N + 1): a set-up costs one query
  double deviation = 0;                      ///< (measured - model) / model
  bool client_bound = false;                 ///< the point was client-bound (point_summary)
};

/// Where the measured curve departs from the fitted model by more than this share, the
/// report names the queries-per-connection value.
inline constexpr double amortization_departure_tolerance = 0.15;

/// The handshake-amortization answer for one transport and client count.
struct amortization_fit {
  std::string target;                  ///< empty when the sweep has one server
  std::uint64_t distinct_sources = 0;  ///< of the points fitted; 0 without that axis
  sweep_transport transport;           ///< a transport with connections
  unsigned clients = 0;                ///< the client count of the points fitted
  amortization_model model;            ///< the fitted T(N)
  double n50 = 0;                      ///< queries per connection for 50 % of t_inf (= h)
  double n90 = 0;                      ///< 90 % (= 9 h)
  double n99 = 0;                      ///< 99 % (= 99 h)
  /// The simple model t_inf * N / (N + 1) against the same measurements (relative RMS).
  double simple_residual = 0;
  std::vector<amortization_sample> samples;  ///< in increasing N, unlimited last
  /// Queries-per-connection values (0: unlimited) where |deviation| exceeds the tolerance.
  std::vector<std::uint64_t> departures;
};

/// One fit per target, distinct sources, TCP/TLS transport and client count with at least
/// two queries-per-connection values measured, in the order the points were run.
std::vector<amortization_fit> compute_amortization(const std::vector<sweep_point_result>& points);

/// The cost model of each target's transport (cost_model.hpp): one entry per target,
/// distinct sources and transport with runs, in the order the points were run.
std::vector<transport_costs> compute_costs(const std::vector<sweep_point_result>& points);

/// A sentence a reader can act on, built from a sweep's data (compute_findings).
struct sweep_finding {
  std::string target;                  ///< empty when the sweep has one server
  std::uint64_t distinct_sources = 0;  ///< of the points it is about; 0 without that axis
  /// What it is about: "throughput" (the share of UDP each transport keeps), "server_cost"
  /// (what answers, connections and handshakes cost the server's CPU), "amortization" (the
  /// queries per connection for 90 %), "delayed_ack" (answers held about 40 ms on short
  /// connections), "one_at_a_time" (a connection's queries answered one at a time, no
  /// pipelining, while the monitored server's CPU had time to spare), "distrust" (points
  /// that measured the generator, repeats that disagree).
  std::string kind;
  std::string text;  ///< the sentence
};

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
  sweep_plan plan;  ///< as run (base.traffic.queries and callbacks are not kept when read back)
  std::string query_origin;     ///< where the queries came from
  std::size_t query_count = 0;  ///< queries in the set
  std::string tool_version;     ///< library_version() of the build that ran it
  machine_info machine;         ///< the machine it ran on
  std::string started_at;       ///< UTC, ISO 8601
  double elapsed_seconds = 0;   ///< wall time so far, pauses included
  bool interrupted = false;     ///< stopped by base.stop before every point was run
  /// Points in the plan (expand(plan)): more than points.size() when it stopped early.
  std::size_t planned_points = 0;
  std::vector<sweep_point_result> points;  ///< points measured, in the order they were run
  std::vector<percent_of_udp_entry> percent_of_udp;  ///< compute_percent_of_udp(points)
  std::vector<amortization_fit> amortization;        ///< compute_amortization(points)
  std::vector<transport_costs> costs;  ///< what answers, connections and handshakes cost
  /// Spread, client-bound points, failures, ...; the settings they mention are marked by
  /// setting() (naming_settings names them; format_tables and write_report do, and to_json
  /// with plan.base.output.setting_name).
  std::vector<std::string> warnings;
  std::vector<sweep_finding> findings;  ///< what it found, in plain words
};

/// Fills percent_of_udp, amortization, costs, warnings and findings from the points.
void derive_results(sweep_result& result);

/// A few findings per target, in the order of sweep_finding's kinds, from the points, the %
/// of UDP, the amortization fits and the cost models (which must be derived first).
std::vector<sweep_finding> compute_findings(const sweep_result& result);

}  // namespace dnstransport
