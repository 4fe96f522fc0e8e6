// The readings of the monitored server processes over one run's measured window: local
// processes and cgroups read from /proc and cgroupfs, a command's readings of processes on
// another machine; the window's figures (CPU per 1,000 answers, maxima) and its warnings.
#include "monitor/server_monitor.hpp"

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include <dnstransport/error.hpp>
#include <dnstransport/text.hpp>

#include "monitor/command_source.hpp"
#include "util/clock.hpp"

namespace dnstransport {

namespace detail {

namespace {

// How long a command (ssh to another machine, say) may take to give its first reading.
constexpr double first_reading_seconds = 15;

}  // namespace

server_monitor::server_monitor(std::vector<int> pids, std::vector<std::string> cgroups,
                               std::string command, std::uint16_t tcp_port)
    : tcp_port_(tcp_port) {
  for (int pid : pids) watched_.push_back({pid, {}, {}, false});
  for (auto& path : cgroups) cgroups_.push_back({std::move(path), {}, {}, false});
  if (!command.empty()) {
    remote_ = std::make_unique<command_source>(std::move(command));
    remote_->wait_for_reading(first_reading_seconds);
  }
}

server_monitor::~server_monitor() = default;

void server_monitor::sample() {
  if (!active()) return;
  ++samples_;
  totals sum;
  sample_cgroups(sum);
  if (remote_) sample_remote(sum);
  sample_processes(sum);
  last_rss_ = sum.rss;
  stats_.rss_max_bytes = std::max(stats_.rss_max_bytes, sum.rss);
  stats_.fds_max = std::max(stats_.fds_max, sum.fds);
  stats_.threads_max = std::max(stats_.threads_max, sum.threads);
  if (sum.remote_counted_connections) {
    stats_.connections_max = std::max(stats_.connections_max, sum.remote_connections);
  }
  if (tcp_port_ != 0) {
    // Every watched process of one server normally shares a network namespace: count once.
    for (const auto& w : watched_) {
      if (w.gone) continue;
      sum.connection_pid = w.pid;
      break;
    }
    if (sum.connection_pid != 0) {
      if (auto open = count_tcp_connections(sum.connection_pid, tcp_port_)) {
        stats_.connections_max = std::max(stats_.connections_max, *open);
      }
    }
  }
}

void server_monitor::sample_cgroups(totals& sum) {
  for (auto& c : cgroups_) {
    if (c.gone) continue;
    auto reading = sample_cgroup(c.path);
    if (!reading) {
      c.gone = true;
      continue;
    }
    if (!c.first) c.first = reading;
    sum.rss += reading->memory_bytes;
    for (int pid : reading->pids) {
      if (auto process = sample_process(pid)) {
        sum.fds += process->fds;
        sum.threads += process->threads;
        if (sum.connection_pid == 0) sum.connection_pid = pid;
      }
    }
    c.last = std::move(reading);
  }
}

void server_monitor::sample_remote(totals& sum) {
  const auto now = monotonic_ns();
  if (window_start_ns_ == 0) window_start_ns_ = now;
  // A reading received after the window's end may cover idle time after it: only readings
  // received inside the window measure its rate.
  auto readings = remote_->read(window_end_ns_);
  for (int pid : readings.exited) {
    if (auto it = remote_pids_.find(pid); it != remote_pids_.end()) it->second.gone = true;
  }
  for (const auto& [pid, r] : readings.latest) {
    auto& w = remote_pids_[pid];
    sum.rss += r.line.sample.rss_bytes;
    sum.fds += r.line.sample.fds;
    sum.threads += r.line.sample.threads;
    if (r.line.tcp_connections) {
      sum.remote_connections += *r.line.tcp_connections;
      sum.remote_counted_connections = true;
    }
    if (!w.first && r.received_ns >= window_start_ns_) w.first = r.line;
    if (w.first) w.last = r.line;
  }
}

void server_monitor::sample_processes(totals& sum) {
  for (auto& w : watched_) {
    if (w.gone) continue;
    auto reading = sample_process(w.pid);
    if (!reading) {
      w.gone = true;
      continue;
    }
    if (!w.first) w.first = reading;
    w.last = reading;
    sum.rss += reading->rss_bytes;
    sum.fds += reading->fds;
    sum.threads += reading->threads;
  }
}

double server_monitor::cpu_seconds_so_far() const noexcept {
  double cpu = 0;
  for (const auto& w : watched_) {
    if (!w.first || !w.last) continue;
    cpu += w.last->cpu_user_seconds + w.last->cpu_system_seconds - w.first->cpu_user_seconds -
           w.first->cpu_system_seconds;
  }
  for (const auto& c : cgroups_) {
    if (!c.first || !c.last) continue;
    cpu += c.last->cpu_user_seconds + c.last->cpu_system_seconds - c.first->cpu_user_seconds -
           c.first->cpu_system_seconds;
  }
  for (const auto& [pid, w] : remote_pids_) {
    if (!w.first || !w.last) continue;
    cpu += w.last->sample.cpu_user_seconds + w.last->sample.cpu_system_seconds -
           w.first->sample.cpu_user_seconds - w.first->sample.cpu_system_seconds;
  }
  return cpu;
}

void server_monitor::finish_remote(process_usage& stats, double window_seconds) {
  const auto readings = remote_->read();
  stats.command = remote_->command();
  // The warnings mark the settings they name (setting()); the run names them for its caller.
  const std::string flag =
      fmt::format("{} \"{}\"", setting("load_spec::monitor.command"), stats.command);
  const std::string interval = setting("monitor_command::interval");
  double shortest_span = -1;  // seconds between a process's first and last readings
  for (const auto& [pid, w] : remote_pids_) {
    stats.command_pids.push_back(pid);
    if (w.gone) stats.exited.push_back(pid);
    if (!w.first || !w.last || !(w.last->time > w.first->time)) continue;
    const double span = w.last->time - w.first->time;
    shortest_span = shortest_span < 0 ? span : std::min(shortest_span, span);
    // The rate between the readings, over the whole window (the readings are the command's
    // own, taken on its schedule, not at the window's ends).
    const double scale = window_seconds > 0 ? window_seconds / span : 0;
    stats.cpu_user_seconds +=
        (w.last->sample.cpu_user_seconds - w.first->sample.cpu_user_seconds) * scale;
    stats.cpu_system_seconds +=
        (w.last->sample.cpu_system_seconds - w.first->sample.cpu_system_seconds) * scale;
  }
  for (int pid : readings.exited) {
    if (remote_pids_.find(pid) == remote_pids_.end()) {
      stats.command_pids.push_back(pid);
      stats.exited.push_back(pid);
    }
  }
  if (shortest_span < 0) {
    stats.cpu_measured = false;
    warnings_.push_back(fmt::format(
        "{}: fewer than two readings of a process during the {:.1f} s window, so the server's "
        "CPU was not measured (give `monitor` an {} well under the run's {})",
        flag, window_seconds, interval, setting("load_spec::traffic.duration_seconds")));
  } else if (shortest_span < window_seconds / 2) {
    warnings_.push_back(fmt::format(
        "{}: the server's CPU is extrapolated from {:.1f} s of readings to the {:.1f} s window "
        "(give `monitor` a shorter {})",
        flag, shortest_span, window_seconds, interval));
  }
  if (readings.bad_lines > 0) {
    warnings_.push_back(fmt::format("{}: {} not understood, the first: {}", flag,
                                    counted(readings.bad_lines, "line"), readings.first_bad_line));
  }
  if (readings.command_ended) {
    warnings_.push_back(
        fmt::format("{} ended during the run{}: its figures stop at its last "
                    "reading",
                    flag,
                    readings.how_it_ended.empty() ? std::string()
                                                  : fmt::format(" ({})", readings.how_it_ended)));
  }
}

process_usage server_monitor::finish(std::uint64_t answers, double window_seconds) {
  process_usage stats = stats_;
  stats.samples = samples_;
  for (const auto& w : watched_) {
    stats.pids.push_back(w.pid);
    if (w.gone) stats.exited.push_back(w.pid);
    if (!w.first || !w.last) continue;
    stats.cpu_user_seconds += w.last->cpu_user_seconds - w.first->cpu_user_seconds;
    stats.cpu_system_seconds += w.last->cpu_system_seconds - w.first->cpu_system_seconds;
  }
  for (const auto& c : cgroups_) {
    stats.cgroups.push_back(c.path);
    if (c.gone) stats.exited_cgroups.push_back(c.path);
    if (!c.first || !c.last) continue;
    stats.cpu_user_seconds += c.last->cpu_user_seconds - c.first->cpu_user_seconds;
    stats.cpu_system_seconds += c.last->cpu_system_seconds - c.first->cpu_system_seconds;
  }
  if (remote_) finish_remote(stats, window_seconds);
  if (answers > 0) {
    stats.cpu_per_1k_answers = stats.cpu_seconds() * 1000.0 / static_cast<double>(answers);
  }
  if (window_seconds > 0) stats.cpu_share = stats.cpu_seconds() / window_seconds;
  return stats;
}

}  // namespace detail

}  // namespace dnstransport
