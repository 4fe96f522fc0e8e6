// While the workers run, each on a thread of its own, the load's executor watches them
// every 20 ms (load_operation.cpp): it reads the monitored server (about ten times a run, and
// at each timeline row's end), reports progress and passes a stop request on. Afterwards it adds
// the server's figures to the result: the window's usage, each timeline row's CPU and memory, and
// warnings about processes that went away.
#include <algorithm>
#include <atomic>
#include <ctime>
#include <thread>

#include <pthread.h>

#include <fmt/format.h>

#include "load/load_steps.hpp"
#include "util/clock.hpp"
#include "util/cpu_pinning.hpp"

namespace dnstransport::detail {

namespace {

// Seconds between readings of the monitored server processes, for their maxima (the CPU
// figures come from the window's first and last readings): about ten per run, within
// these bounds (a reading of many TCP connections parses /proc/PID/net/tcp).
constexpr double monitor_interval_min = 0.05;
constexpr double monitor_interval_max = 1.0;

}  // namespace

run_watch::run_watch(const load_spec& spec, run_plan& plan, double duration_seconds)
    : spec_(spec),
      plan_(plan),
      monitor_(spec.monitor.pids, spec.monitor.cgroups, spec.monitor.command,
               traits_of(spec.target.transport).over_tcp ? spec.target.port : 0),
      monitor_interval_(
          std::clamp(spec.traffic.count == 0 ? duration_seconds / 10 : monitor_interval_max,
                     monitor_interval_min, monitor_interval_max)),
      planned_seconds_(spec.traffic.count == 0 ? spec.traffic.warmup_seconds + duration_seconds
                                               : 0),
      progress_period_(seconds_to_ns(std::max(0.05, spec.output.progress_interval_seconds))) {}

void run_watch::start() {
  if (monitor_.active() && spec_.traffic.warmup_seconds <= 0) monitor_.sample();
  next_monitor_sample_ = plan_.measure_start_ns + seconds_to_ns(monitor_interval_);
  next_progress_ = previous_progress_ = plan_.start_ns;
  next_progress_ += progress_period_;
}

run_watch::~run_watch() {
  // A load given up before its workers ended (an exception on the watching side): stop and
  // join them, so no thread outlives what it points at.
  if (threads_.empty()) return;
  for (auto& w : *workers_) w->request_stop();
  join();
}

void run_watch::start_workers(std::vector<std::unique_ptr<worker>>& workers,
                              std::function<void()> all_ended) {
  workers_ = &workers;
  if (workers.empty()) all_ended();
  for (std::size_t w = 0; w < workers.size(); ++w) {
    threads_.emplace_back([this, w, all_ended] {
      if (!spec_.generator.cpus.empty())
        pin_current_thread(spec_.generator.cpus[w % spec_.generator.cpus.size()]);
      (*workers_)[w]->run();
      if (ended_.fetch_add(1, std::memory_order_acq_rel) + 1 == workers_->size()) all_ended();
    });
  }
}

void run_watch::tick(std::uint64_t now, bool stop_asked) {
  if (stop_ns_ == 0 &&
      (stop_asked || (spec_.stop != nullptr && spec_.stop->load(std::memory_order_relaxed)))) {
    stop_ns_ = now;
    for (auto& w : *workers_) w->request_stop();
  }
  read_server(now);
  if (spec_.output.on_progress && now >= next_progress_) report_progress(now);
  if ((spec_.output.on_interval || spec_.output.on_figures) && plan_.interval_ns > 0) {
    deliver_closed_rows();
  }
}

void run_watch::deliver_closed_rows() {
  std::uint64_t closed = UINT64_MAX;
  for (const auto& w : *workers_) closed = std::min(closed, w->rows_closed());
  // A monitored server's figures of a row come from the reading at its end.
  if (monitor_.active()) closed = std::min(closed, rows_read_);
  if (closed == UINT64_MAX || closed <= rows_delivered_) return;
  const double interval = static_cast<double>(plan_.interval_ns) / 1e9;
  const auto count = static_cast<std::size_t>(closed - rows_delivered_);
  std::vector<timeline_row> rows(count);
  std::vector<latency_histogram> latency(count);
  for (std::size_t i = 0; i < count; ++i) {
    rows[i].start_seconds = static_cast<double>(rows_delivered_ + i) * interval;
    rows[i].duration_seconds = interval;
  }
  for (const auto& w : *workers_) {
    for (const auto& row : w->rows_between(rows_delivered_, closed)) {
      const auto i = static_cast<std::size_t>(row.index - rows_delivered_);
      add_worker_row(rows[i], latency[i], row);
      if (spec_.output.on_figures) {
        live_.queries += row.queries;
        live_.handshakes_full += row.handshakes - row.handshakes_resumed;
        live_.handshakes_resumed += row.handshakes_resumed;
      }
    }
  }
  for (std::size_t i = 0; i < count; ++i) {
    finish_row(rows[i], latency[i]);
    add_server_row(rows[i], rows_delivered_ + i);
  }
  for (std::size_t i = 0; i < count; ++i) {
    ++rows_delivered_;
    if (spec_.output.on_interval) spec_.output.on_interval(rows[i]);
    if (spec_.output.on_figures) add_live_row(rows[i], latency[i]);
  }
  if (spec_.output.on_figures) {
    live_.seconds = static_cast<double>(rows_delivered_) * interval;
    live_.generator_cpu_seconds = workers_cpu_seconds();
    spec_.output.on_figures(live_);
  }
}

void run_watch::add_live_row(const timeline_row& row, const latency_histogram& latency) {
  live_.connections_open = row.connections_open;
  live_.connections_opened += row.connections_opened;
  live_.latency.merge(latency);
  if (monitor_.active()) {
    if (live_.server_cpu_seconds < 0) live_.server_cpu_seconds = 0;
    if (row.server_cpu_seconds > 0) live_.server_cpu_seconds += row.server_cpu_seconds;
    if (row.server_rss_bytes > 0) live_.server_rss_bytes = row.server_rss_bytes;
  }
}

double run_watch::workers_cpu_seconds() {
  thread_cpu_.resize(threads_.size());
  double total = 0;
  for (std::size_t i = 0; i < threads_.size(); ++i) {
    // A thread that has ended (not yet joined) keeps its last reading.
    clockid_t clock{};
    timespec ts{};
    if (pthread_getcpuclockid(threads_[i].native_handle(), &clock) == 0 &&
        clock_gettime(clock, &ts) == 0) {
      thread_cpu_[i] = static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
    }
    total += thread_cpu_[i];
  }
  return total;
}

void run_watch::add_server_row(timeline_row& row, std::uint64_t k) const {
  double cpu_before = 0;
  std::uint64_t reading_row = 0;  // as add_server_figures walks the readings
  for (const auto& r : readings_) {
    if (reading_row > k) return;
    if (r.row == reading_row + 1 && reading_row == k) {
      row.server_cpu_seconds = r.cpu_seconds - cpu_before;
      row.server_rss_bytes = r.rss_bytes;
      return;
    }
    reading_row = r.row;
    cpu_before = r.cpu_seconds;
  }
}

void run_watch::deliver_last_rows(const run_result& result) {
  if (spec_.output.on_interval) {
    while (rows_delivered_ < result.timeline.size()) {
      spec_.output.on_interval(result.timeline[rows_delivered_++]);
    }
  }
  if (spec_.output.on_figures) spec_.output.on_figures(figures_of(result));
}

void run_watch::join() {
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void run_watch::read_server(std::uint64_t now) {
  if (!monitor_.active() || now < plan_.measure_start_ns) return;
  const bool row_ended =
      plan_.interval_ns > 0 && now >= plan_.measure_start_ns + (rows_read_ + 1) * plan_.interval_ns;
  if (!monitor_.started() || now >= next_monitor_sample_ || row_ended) {
    monitor_.sample();
    next_monitor_sample_ = now + seconds_to_ns(monitor_interval_);
  }
  if (row_ended) {
    rows_read_ = (now - plan_.measure_start_ns) / plan_.interval_ns;
    readings_.push_back({rows_read_, monitor_.cpu_seconds_so_far(), monitor_.last_rss_bytes()});
  }
}

void run_watch::report_progress(std::uint64_t now) {
  load_progress p;
  p.elapsed_seconds = static_cast<double>(now - plan_.start_ns) / 1e9;
  p.planned_seconds = planned_seconds_;
  for (const auto& w : *workers_) {
    p.queries_sent += w->published_sent();
    p.responses_received += w->published_received();
    p.lost += w->published_lost();
  }
  p.recent_qps = static_cast<double>(p.responses_received - previous_received_) /
                 (static_cast<double>(now - previous_progress_) / 1e9);
  previous_received_ = p.responses_received;
  previous_progress_ = now;
  next_progress_ = now + progress_period_;
  spec_.output.on_progress(p);
}

void run_watch::close_window(std::uint64_t window_end) {
  if (!monitor_.active()) return;
  monitor_.close_window(window_end);
  monitor_.sample();
}

void run_watch::add_server_figures(run_result& result) {
  if (!monitor_.active()) return;
  // Row k's server CPU: from the reading at its start (the window's first reading for row
  // 0) to the reading at its end (the last reading for the last row).
  double cpu_before = 0;
  std::uint64_t reading_row = 0;  // rows [reading_row, r.row) end at the next reading
  readings_.push_back(
      {result.timeline.size(), monitor_.cpu_seconds_so_far(), monitor_.last_rss_bytes()});
  for (const auto& r : readings_) {
    // A reading taken late (after several rows ended) is spread over none of them.
    if (r.row == reading_row + 1 && reading_row < result.timeline.size()) {
      result.timeline[reading_row].server_cpu_seconds = r.cpu_seconds - cpu_before;
      result.timeline[reading_row].server_rss_bytes = r.rss_bytes;
    }
    reading_row = r.row;
    cpu_before = r.cpu_seconds;
  }
  result.server_usage = monitor_.finish(result.responses_received, result.elapsed_seconds);
  for (const auto& warning : monitor_.warnings()) add_warning(result, spec_, warning);
  for (const auto& cgroup : result.server_usage.exited_cgroups) {
    result.warnings.push_back(fmt::format(
        "monitored cgroup {} went away during the run: its figures stop at its last reading",
        cgroup));
  }
  for (int pid : result.server_usage.exited) {
    result.warnings.push_back(fmt::format(
        "monitored server process {} exited during the run: its figures stop at its last "
        "reading",
        pid));
  }
}

}  // namespace dnstransport::detail
