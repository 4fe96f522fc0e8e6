#pragma once
// --metrics-listen and --metrics-file: a load's figures while it runs, as metrics text
// (metrics.hpp), served over HTTP for Prometheus to scrape and written to a file for
// node_exporter's textfile collector.

#include <memory>
#include <string>

#include <dnstransport/load.hpp>
#include <dnstransport/metrics.hpp>

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

 private:
  // Writes the file; the reason it could not, or empty.
  std::string write_file(const std::string& text) const;

  std::string file_;
  bool file_failed_ = false;  // said once
  metrics_labels labels_;
  std::unique_ptr<served_texts> texts_;  // outlives the listener, which reads it
  std::unique_ptr<metrics_listener> listener_;
};

}  // namespace dnstransport::cli
