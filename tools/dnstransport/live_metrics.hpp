#pragma once
// --metrics-listen and --metrics-file: the figures of a load while it runs (and of a sweep's
// or a search's loads, one after the other), as metrics text (metrics.hpp), served over HTTP
// for Prometheus to scrape and written to a file for node_exporter's textfile collector.

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include <dnstransport/load.hpp>
#include <dnstransport/metrics.hpp>
#include <dnstransport/search.hpp>
#include <dnstransport/sweep.hpp>

namespace dnstransport::cli {

class metrics_listener;
struct served_texts;

class live_metrics {
 public:
  // Opens the listener (ADDR:PORT, port 0: a free one) before the load starts, so that a
  // port in use or an address not this machine's ends the command before anything is
  // sent. Throws setup_error naming --metrics-listen or --metrics-file. Empty: not asked.
  live_metrics(const std::string& listen, const std::string& file, metrics_labels labels);
  ~live_metrics();
  live_metrics(const live_metrics&) = delete;
  live_metrics& operator=(const live_metrics&) = delete;

  bool active() const noexcept { return listener_ != nullptr || !file_.empty(); }
  // Where the listener serves its metrics ("http://127.0.0.1:9100/metrics"); empty: none.
  std::string url() const;
  // The figures so far (output_settings::on_figures): served from now on, and the file
  // rewritten (a file written beside it, then renamed over it: a reader never sees half).
  // A file that cannot be written is said once on stderr, and the run goes on: the metrics
  // are a view of it, not its result. (At construction, before the run, it throws
  // setup_error naming --metrics-file.)
  void update(const live_figures& figures);
  // A new load starts, whose figures carry these labels: nothing measured of it yet.
  void load_started(metrics_labels labels);
  // Where the sweep or search is, written after the load's figures from now on.
  void update(const metrics_study& study);

 private:
  void publish();
  // Writes the file; the reason it could not, or empty.
  std::string write_file(const std::string& text) const;

  std::string file_;
  bool file_failed_ = false;  // said once
  metrics_labels labels_;
  live_figures figures_;
  std::optional<metrics_study> study_;
  std::unique_ptr<served_texts> texts_;  // outlives the listener, which reads it
  std::unique_ptr<metrics_listener> listener_;
};

// --metrics-listen and --metrics-file as given.
struct metrics_flags {
  std::string listen;
  std::string file;
};

// Adds both flags to a command; `what` is what they watch ("the run", "each run of the
// sweep").
void add_metrics_flags(CLI::App& command, metrics_flags& flags, std::string_view what);

// The live metrics asked for (nullptr: none), their listener open, its address said on
// stderr unless quiet. Throws setup_error naming the flags under mpirun (each rank would
// give its own share of the load under the same name) or without --interval.
std::unique_ptr<live_metrics> open_live_metrics(const metrics_flags& flags, const load_spec& spec,
                                                metrics_labels labels, bool quiet);

// The sweep's loads in the metrics, one after the other, each under its point's labels
// (metrics_labels_of), and the sweep's runs and time left: sets plan.base.output.on_figures
// and wraps callbacks.on_progress. `live` outlives the sweep.
void watch_sweep(live_metrics& live, sweep_plan& plan, sweep_callbacks& callbacks);

// The search's steps in the metrics, one after the other, and the rates offered and passed:
// sets spec.load.output.on_figures and wraps on_step_start and on_step (set them first).
// `live` outlives the search.
void watch_search(live_metrics& live, search_spec& spec);

}  // namespace dnstransport::cli
