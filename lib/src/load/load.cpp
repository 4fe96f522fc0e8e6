#include <dnstransport/load.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <functional>
#include <limits>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>
#include <boost/asio/ip/tcp.hpp>

#include <dnstransport/cpus.hpp>
#include <dnstransport/error.hpp>
#include <dnstransport/group.hpp>

#include "engine/engine.hpp"
#include "load/load_steps.hpp"
#include "monitor/server_monitor.hpp"
#include "transport/tls/tls_backend.hpp"
#include "util/clock.hpp"
#include "util/cpu_pinning.hpp"

namespace dnstransport {

namespace {

using detail::monotonic_ns;
using detail::seconds_to_ns;

// Seconds between readings of the monitored server processes, for their maxima (the CPU
// figures come from the window's first and last readings): about ten per run, within
// these bounds (a reading of many TCP connections parses /proc/PID/net/tcp).
constexpr double monitor_interval_min = 0.05;
constexpr double monitor_interval_max = 1.0;

// One process's load. `ready`, when given, is called once the set-up is done, just before
// the first query: false means "do not send" (the result is then an interrupted, empty run).
run_result run_alone(const load_spec& spec, const std::function<bool()>& ready) {
  const auto prepared = detail::make_run_plan(spec);
  run_result result = std::move(prepared->result);
  detail::run_plan& plan = prepared->plan;
  const unsigned threads = prepared->threads;
  const double duration = prepared->duration_seconds;
  const auto& transport = prepared->transport;
  const auto& connections_gauge = prepared->connections_gauge;

  // Before the workers: a monitor command that fails ends the run before anything is sent.
  const auto& traits = traits_of(spec.transport);
  detail::server_monitor monitor(spec.monitor_pids, spec.monitor_cgroups, spec.monitor_command,
                                 traits.over_tcp ? spec.port : 0);

  std::vector<std::unique_ptr<detail::worker>> workers;
  for (unsigned w = 0; w < threads; ++w) {
    std::vector<unsigned> indices;
    std::vector<std::uint64_t> quotas;
    for (unsigned c = w; c < spec.clients; c += threads) {
      indices.push_back(c);
      quotas.push_back(spec.count == 0
                           ? UINT64_MAX
                           : spec.count / spec.clients + (c < spec.count % spec.clients ? 1 : 0));
    }
    workers.push_back(
        std::make_unique<detail::worker>(plan, std::move(indices), std::move(quotas)));
  }

  if (ready && !ready()) {
    result.interrupted = true;
    return result;
  }
  plan.start_ns = monotonic_ns();
  plan.measure_start_ns = plan.start_ns + seconds_to_ns(spec.warmup_seconds);
  plan.send_end_ns = spec.count == 0 && spec.duration_seconds > 0
                         ? plan.measure_start_ns + seconds_to_ns(spec.duration_seconds)
                         : UINT64_MAX;

  const double monitor_interval = std::clamp(spec.count == 0 ? duration / 10 : monitor_interval_max,
                                             monitor_interval_min, monitor_interval_max);
  if (monitor.active() && spec.warmup_seconds <= 0) monitor.sample();
  std::uint64_t next_monitor_sample = plan.measure_start_ns + seconds_to_ns(monitor_interval);
  // With a timeline, the server is also read at each row's end: (row, CPU so far, RSS).
  struct server_reading {
    std::uint64_t row;
    double cpu_seconds;
    std::uint64_t rss_bytes;
  };
  std::vector<server_reading> server_readings;
  std::uint64_t next_row_reading = 0;  // rows read so far

  std::atomic<unsigned> finished{0};
  std::vector<std::thread> pool;
  for (unsigned w = 0; w < threads; ++w) {
    pool.emplace_back([&, w] {
      if (!spec.cpus.empty()) detail::pin_current_thread(spec.cpus[w % spec.cpus.size()]);
      workers[w]->run();
      finished.fetch_add(1, std::memory_order_release);
    });
  }

  const double planned = spec.count == 0 ? spec.warmup_seconds + duration : 0;
  const auto progress_period = seconds_to_ns(std::max(0.05, spec.progress_interval_seconds));
  std::uint64_t next_progress = plan.start_ns + progress_period;
  std::uint64_t previous_received = 0;
  std::uint64_t previous_progress = plan.start_ns;
  std::uint64_t stop_ns = 0;
  while (finished.load(std::memory_order_acquire) < threads) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const std::uint64_t now = monotonic_ns();
    if (stop_ns == 0 && spec.stop != nullptr && spec.stop->load(std::memory_order_relaxed)) {
      stop_ns = now;
      for (auto& w : workers) w->request_stop();
    }
    if (monitor.active() && now >= plan.measure_start_ns) {
      const bool row_ended =
          plan.interval_ns > 0 &&
          now >= plan.measure_start_ns + (next_row_reading + 1) * plan.interval_ns;
      if (!monitor.started() || now >= next_monitor_sample || row_ended) {
        monitor.sample();
        next_monitor_sample = now + seconds_to_ns(monitor_interval);
      }
      if (row_ended) {
        next_row_reading = (now - plan.measure_start_ns) / plan.interval_ns;
        server_readings.push_back(
            {next_row_reading, monitor.cpu_seconds_so_far(), monitor.last_rss_bytes()});
      }
    }
    if (spec.on_progress && now >= next_progress) {
      load_progress p;
      p.elapsed_seconds = static_cast<double>(now - plan.start_ns) / 1e9;
      p.planned_seconds = planned;
      for (auto& w : workers) {
        p.queries_sent += w->published_sent();
        p.responses_received += w->published_received();
        p.lost += w->published_lost();
      }
      p.recent_qps = static_cast<double>(p.responses_received - previous_received) /
                     (static_cast<double>(now - previous_progress) / 1e9);
      previous_received = p.responses_received;
      previous_progress = now;
      next_progress = now + progress_period;
      spec.on_progress(p);
    }
  }
  for (auto& t : pool) t.join();
  const std::uint64_t end_ns = monotonic_ns();

  detail::counters total;
  std::uint64_t last_answer = 0;
  for (auto& w : workers) {
    total.merge(w->shard());
    last_answer = std::max(last_answer, w->last_answer_ns);
    result.client_cpu_seconds += w->thread_cpu_seconds;
    if (w->wall_seconds > 0) {
      result.max_thread_cpu_share =
          std::max(result.max_thread_cpu_share, w->thread_cpu_seconds / w->wall_seconds);
    }
  }
  detail::fill_result(result, total);
  std::tie(result.connections.certificates_verified, result.connections.certificates_reused) =
      transport->certificate_checks();
  result.interrupted = stop_ns != 0;
  if (rusage usage{}; getrusage(RUSAGE_SELF, &usage) == 0) {
    result.client_rss_bytes = static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;
  }
  // The measured window runs from the end of the warm-up to the end of sending (or the
  // interruption), stretched to the last counted answer so that answers to queries sent in
  // the window count against the time they took. In count mode it ends with the last answer.
  std::uint64_t window_end = result.interrupted ? stop_ns : std::min(end_ns, plan.send_end_ns);
  if (spec.count != 0 && last_answer != 0 && !result.interrupted) window_end = last_answer;
  window_end = std::max(window_end, last_answer);
  result.elapsed_seconds = window_end > plan.measure_start_ns
                               ? static_cast<double>(window_end - plan.measure_start_ns) / 1e9
                               : 0;
  result.qps = result.elapsed_seconds > 0
                   ? static_cast<double>(result.responses_received) / result.elapsed_seconds
                   : 0;
  // The workers sum open connections over the window up to the end of sending.
  const std::uint64_t sending_end =
      result.interrupted ? std::min(stop_ns, plan.send_end_ns) : std::min(end_ns, plan.send_end_ns);
  if (sending_end > plan.measure_start_ns) {
    result.connections.concurrent_mean = static_cast<double>(total.connections.open_ns) /
                                         static_cast<double>(sending_end - plan.measure_start_ns);
  }
  result.connections.concurrent_max = connections_gauge.max.load();
  if (monitor.active()) {
    monitor.close_window(window_end);
    monitor.sample();
  }
  detail::fill_timeline(result, workers, plan,
                        static_cast<double>(end_ns - plan.measure_start_ns) / 1e9);
  if (monitor.active()) {
    // Row k's server CPU: from the reading at its start (the window's first reading for row
    // 0) to the reading at its end (the last reading for the last row).
    double cpu_before = 0;
    std::uint64_t reading_row = 0;  // rows [reading_row, r.row) end at the next reading
    server_readings.push_back(
        {result.timeline.size(), monitor.cpu_seconds_so_far(), monitor.last_rss_bytes()});
    for (const auto& r : server_readings) {
      // A reading taken late (after several rows ended) is spread over none of them.
      if (r.row == reading_row + 1 && reading_row < result.timeline.size()) {
        result.timeline[reading_row].server_cpu_seconds = r.cpu_seconds - cpu_before;
        result.timeline[reading_row].server_rss_bytes = r.rss_bytes;
      }
      reading_row = r.row;
      cpu_before = r.cpu_seconds;
    }
    result.server_usage = monitor.finish(result.responses_received, result.elapsed_seconds);
    for (const auto& warning : monitor.warnings()) result.warnings.push_back(warning);
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
  // In a group, the merged result gets them once, from every member's counts.
  if (!ready) {
    detail::add_open_loop_warnings(result);
    detail::add_warmup_warning(result, spec);
  }
  return result;
}

// How long a member waits for the others at the start, and for their results after its own
// load: the start waits for set-up (reading captures, resolving, TLS contexts), the results
// for the timeout of the last queries and the members' drift.
constexpr double group_start_wait_seconds = 120;
constexpr double group_result_margin_seconds = 10;
// Interrupted (SIGINT, or mpirun ending the job because a member died, which sends SIGTERM
// and SIGKILL a second later), a member waits only briefly, so member 0 can still write.
constexpr double group_interrupted_wait_seconds = 0.3;

run_result run_in_group(const load_spec& spec) {
  load_group& group = *spec.group;
  bool told = false;
  const auto ready = [&] {
    told = true;
    const bool stopping = spec.stop != nullptr && spec.stop->load(std::memory_order_relaxed);
    return group.start_together({}, stopping, group_start_wait_seconds);
  };
  run_result own;
  try {
    load_spec mine = share_of(spec, group.rank(), group.size());
    mine.group = nullptr;
    own = run_alone(mine, ready);
  } catch (const std::exception& e) {
    // A member that cannot run tells the others, so none waits for it.
    if (!told) group.start_together(e.what(), false, group_start_wait_seconds);
    throw;
  }
  const double wait =
      own.interrupted
          ? group_interrupted_wait_seconds
          : spec.timeout_seconds + group_result_margin_seconds +
                (spec.count > 0 || spec.duration_seconds == 0 ? own.elapsed_seconds : 0);
  run_result merged = merge_results(group.gather(own, wait), group.hosts());
  detail::add_open_loop_warnings(merged);
  detail::add_warmup_warning(merged, spec);
  return merged;
}

}  // namespace

run_result run_load(const load_spec& spec) {
  if (spec.group) return run_in_group(spec);
  return run_alone(spec, {});
}

}  // namespace dnstransport
