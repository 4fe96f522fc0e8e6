#pragma once
// Internal: the steps of one process's load, which load.cpp runs: what the load needs
// before its first query (run_setup.cpp), the watch over the workers while they run
// (run_watch.cpp) and the result made from what the workers counted (run_result.cpp).

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include <dnstransport/load.hpp>

#include "engine/engine.hpp"
#include "monitor/server_monitor.hpp"

namespace dnstransport::detail {

// What a load needs before its first query, made from its spec alone: nothing is sent and
// no thread is started. The plan points at the queries, the transport and the gauge, so
// the whole is made once and not moved.
struct prepared_load {
  run_result result;  // what was run, and the warnings of the set-up
  std::shared_ptr<const query_set> queries;
  std::unique_ptr<client_transport> transport;
  run_plan plan;
  run_plan::connection_gauge connections_gauge;
  std::unique_ptr<answer_callback> on_answer;  // output_settings::on_answer, when set
  unsigned threads = 1;                        // worker threads: at most one per client
  // What the run is planned to last, for progress and the monitor's readings: a timing
  // replay without a duration lasts as long as its capture, at its speed.
  double duration_seconds = 0;
};

// Validates the spec, resolves the server, checks the descriptors and ports the clients
// will hold, reads the queries (adding the run's EDNS options), builds the transport and
// plans the run. Throws setup_error naming the setting. With `feed`, the one client sends
// the program's queries from it (run_plan::feed), each in a cell of its own, instead of the
// spec's; the spec's outstanding is the feed's cells.
std::unique_ptr<prepared_load> make_run_plan(const load_spec& spec, query_feed* feed = nullptr);

// One worker per thread, the clients dealt out in turn, each client's share of a --count.
std::vector<std::unique_ptr<worker>> make_workers(const load_spec& spec, run_plan& plan,
                                                  unsigned threads);

// What the watching side (the executor of load_operation) does while the workers run: it
// reads the monitored server (about ten times a run, and at each timeline row's end),
// reports progress and passes a stop request on; afterwards it adds the server's figures to
// the result. Made before the workers: a monitor command that fails ends the run before
// anything is sent.
class run_watch {
 public:
  // How often the watching side looks at the workers.
  static constexpr std::uint64_t tick_ns = 20'000'000;

  run_watch(const load_spec& spec, run_plan& plan, double duration_seconds);
  ~run_watch();
  run_watch(const run_watch&) = delete;
  run_watch& operator=(const run_watch&) = delete;
  // The plan's start and window are set: the first reading, the progress clock.
  void start();
  // Runs each worker on a thread of its own; the last to end calls `all_ended` on its thread.
  void start_workers(std::vector<std::unique_ptr<worker>>& workers,
                     std::function<void()> all_ended);
  // Every tick_ns while the workers run: passes a stop on (asked through load_spec::stop,
  // or `stop_asked` by the caller), reads the server, reports progress.
  void tick(std::uint64_t now, bool stop_asked);
  // After all_ended: the workers' threads are joined.
  void join();
  // When a stop was asked for (0: never).
  std::uint64_t stop_ns() const noexcept { return stop_ns_; }
  // The measured window ended: the last reading.
  void close_window(std::uint64_t window_end);
  // The server's usage over the window and per timeline row, and its warnings.
  void add_server_figures(run_result& result);
  // load_output::on_interval with the rows of the finished `result` not given yet, then
  // on_figures with the result's figures.
  void deliver_last_rows(const run_result& result);

 private:
  void read_server(std::uint64_t now);
  void report_progress(std::uint64_t now);
  // load_output::on_interval with the rows every worker has closed (and, monitored, that the
  // server was read at the end of).
  void deliver_closed_rows();
  // Row k's server CPU and memory from the readings at its start and end, as
  // add_server_figures gives them (none when no reading was taken at its end).
  void add_server_row(timeline_row& row, std::uint64_t k) const;
  // A delivered row (and its answers' latency) added to the live figures.
  void add_live_row(const timeline_row& row, const latency_histogram& latency);
  // CPU time of the worker threads so far.
  double workers_cpu_seconds();

  const load_spec& spec_;
  run_plan& plan_;
  std::vector<std::unique_ptr<worker>>* workers_ = nullptr;
  std::vector<std::thread> threads_;
  std::atomic<std::size_t> ended_{0};
  server_monitor monitor_;
  double monitor_interval_;
  double planned_seconds_;
  std::uint64_t progress_period_;
  std::uint64_t next_monitor_sample_ = 0;
  // With a timeline, the server is also read at each row's end: (row, CPU so far, RSS).
  struct server_reading {
    std::uint64_t row;
    double cpu_seconds;
    std::uint64_t rss_bytes;
  };
  std::vector<server_reading> readings_;
  std::uint64_t rows_read_ = 0;
  std::uint64_t next_progress_ = 0;
  std::uint64_t previous_progress_ = 0;
  std::uint64_t previous_received_ = 0;
  std::uint64_t stop_ns_ = 0;
  std::uint64_t rows_delivered_ = 0;  // given to on_interval
  live_figures live_;                 // the delivered rows summed, for on_figures
  std::vector<double> thread_cpu_;    // each worker thread's CPU at its last reading
};

// When the run ended, for its measured window.
struct run_ends {
  std::uint64_t stop_ns = 0;  // a stop was asked for (0: none)
  std::uint64_t end_ns = 0;   // every worker had ended
};
// The workers' counts and CPU, summed into the result (fill_result); the measured window
// (from the end of the warm-up to the end of sending or the stop, stretched to the last
// answer), the throughput and the connections open over it. Returns the window's end.
std::uint64_t add_workers(run_result& result, const std::vector<std::unique_ptr<worker>>& workers,
                          const run_plan& plan, const load_spec& spec, const run_ends& ends);

// The workers' counters, summed, into the public result.
void fill_result(run_result& r, const counters& total);
// One worker's row added to the run's row `into` (its latency into `latency`), and the row's
// rates and percentiles once every worker's is in: fill_timeline's steps, also for the rows
// given to load_output::on_interval while the load runs.
void add_worker_row(timeline_row& into, latency_histogram& latency, const worker::row& row);
void finish_row(timeline_row& row, const latency_histogram& latency);
// Merges the workers' timeline rows (by interval) into the result's timeline.
void fill_timeline(run_result& result, const std::vector<std::unique_ptr<worker>>& workers,
                   const run_plan& plan, double seconds_until_end);
// Closed loop with persistent connections: says when some were set up inside the window.
void add_warmup_warning(run_result& r, const load_spec& spec);
/// Adds a warning whose settings are marked by setting(), named as spec.output.setting_name
/// names them.
void add_warning(run_result& r, const load_spec& spec, std::string_view marked);
// Open loop: says when the generator did not keep to its schedule.
void add_open_loop_warnings(run_result& r, const load_spec& spec);
// Queries told apart by letter case: says when answers did not echo it.
void add_case_warning(run_result& r, const load_spec& spec);
// PROXY protocol: says when the server answered nothing, ended connections after the header
// or refused most queries.
void add_proxy_warning(run_result& r, const load_spec& spec);
// connection_settings::distinct_sources over TCP, DoT and DoH with fewer connections made than
// sources: the addresses the result reports cut to the connections, and a warning.
void add_distinct_sources_warning(run_result& r, const load_spec& spec);

}  // namespace dnstransport::detail
