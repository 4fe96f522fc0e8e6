#pragma once
/// \file
/// Live metrics: a load's figures so far (live_figures, from output_settings::on_figures or
/// figures_of) as the text Prometheus scrapes, in its exposition format 0.0.4 (what
/// node_exporter's textfile collector reads too) or in OpenMetrics 1.0
/// (lib/src/report/metrics_text.cpp).
///
/// The metrics, each with the labels of metrics_labels_of on every sample:
///   dnstransport_queries_sent_total             queries sent after the warm-up
///   dnstransport_answers_total                  answers (responses_received)
///   dnstransport_lost_total{cause}              "timeout" (lost), "connection_closed"
///                                               (lost_on_close)
///   dnstransport_failed_total{cause}            every other outcome of a query sent, by its
///                                               key in the run's JSON: malformed,
///                                               mismatched, truncated, oversized,
///                                               http_failed, quic_failed, abandoned
///   dnstransport_not_sent_total{cause}          open loop: "outstanding", "timeout"
///   dnstransport_stray_packets_total{kind}      late, unexpected, duplicates
///   dnstransport_in_flight                      queries sent that have no outcome yet
///   dnstransport_connections_open               at the end of the last closed interval
///   dnstransport_connections_opened_total       connections set up after the warm-up
///   dnstransport_handshakes_total{kind}         "full", "resumed" (TLS and QUIC)
///   dnstransport_latency_seconds                histogram of the answers' latency
///   dnstransport_generator_cpu_seconds_total    the generator's worker threads
///   dnstransport_server_cpu_seconds_total       the monitored server (only when monitored)
///   dnstransport_server_resident_memory_bytes   its memory at the last reading (likewise)
///   dnstransport_measured_seconds               time measured so far
///   dnstransport_finished                       1 once the figures are the run's result
///
/// A sweep or a search (metrics_study) adds, with the study's labels only:
///   dnstransport_sweep_runs_total               sweep: runs ended
///   dnstransport_sweep_runs_planned             sweep: runs it will make (points x repeats)
///   dnstransport_sweep_eta_seconds              sweep: estimated time left
///   dnstransport_search_steps_total             search: steps ended
///   dnstransport_search_offered_rate            search: queries per second the step offers
///   dnstransport_search_passed_rate             search: highest rate passed so far (0: none)
/// and its load's figures carry the labels of the point or of the search (metrics_labels_of).

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <dnstransport/load.hpp>
#include <dnstransport/sweep_plan.hpp>

namespace dnstransport {

/// Which text: Prometheus's exposition format 0.0.4 (text/plain; also node_exporter's
/// textfile format) or OpenMetrics 1.0 (application/openmetrics-text, ending in "# EOF").
enum class metrics_format { prometheus, openmetrics };

/// The content type an HTTP response carrying that text gives.
std::string_view metrics_content_type(metrics_format format) noexcept;

/// Labels given to every sample, as (name, value): names [a-zA-Z_][a-zA-Z0-9_]*.
using metrics_labels = std::vector<std::pair<std::string, std::string>>;

/// A load's labels: server (load_spec::target.server, as given), transport, and label
/// (load_spec::output.label) when it has one.
metrics_labels metrics_labels_of(const load_spec& spec);

/// A sweep point's labels: its target's server, its transport (sweep_transport_name: "tls",
/// "tls-gnutls"), clients, queries_per_connection ("unlimited" for 0), distinct_sources when
/// the plan sweeps it, target when the plan has several, and plan.base's label when it has one.
/// Each point's figures are a series of their own, whichever point ran before.
metrics_labels metrics_labels_of(const sweep_plan& plan, const sweep_point& point);

/// Where a study of many loads is, given beside the figures of the load it runs.
struct metrics_study {
  /// Which kind of study.
  enum class kind {
    sweep,  ///< a sweep's runs (dnstransport_sweep_*)
    search  ///< a search's steps (dnstransport_search_*)
  };
  kind study = kind::sweep;         ///< which kind, so which metrics
  metrics_labels labels;            ///< the study's own labels (its label, say), not a load's
  std::uint64_t loads_done = 0;     ///< sweep: runs ended; search: steps ended
  std::uint64_t loads_planned = 0;  ///< sweep: points x repeats (search: unused)
  double eta_seconds = 0;           ///< sweep: estimated time left
  double offered_rate = 0;          ///< search: queries per second of the step that runs
  double passed_rate = 0;           ///< search: highest rate passed so far; 0: none
};

/// Upper bounds of dnstransport_latency_seconds's buckets, in seconds (+Inf follows). An
/// answer is counted under a bound when the histogram's bucket that holds it lies wholly
/// at or below it, so each count is exact to the histogram's resolution (1/128 of the value).
inline constexpr double metrics_latency_bounds_seconds[] = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5};

/// The figures as metrics text. Throws setup_error for a label name that is not one.
std::string metrics_text(const live_figures& figures, const metrics_labels& labels,
                         metrics_format format);

/// The same with a study's figures after the load's (the study's labels on them).
std::string metrics_text(const live_figures& figures, const metrics_labels& labels,
                         const metrics_study& study, metrics_format format);

}  // namespace dnstransport
