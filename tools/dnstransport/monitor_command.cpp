#include <chrono>
#include <cstdio>
#include <ctime>
#include <thread>

#include <fmt/format.h>

#include <dnstransport/error.hpp>
#include <dnstransport/monitor.hpp>

#include "cli_common.hpp"
#include "commands.hpp"

namespace dnstransport::cli {

namespace {

struct monitor_options {
  std::vector<int> pids;
  double interval = 1;
  std::uint16_t port = 0;
  std::uint64_t count = 0;
};

double unix_seconds() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9;
}

}  // namespace

action add_monitor_command(CLI::App& app) {
  auto* monitor = app.add_subcommand(
      "monitor",
      "Print a server process's CPU, memory, descriptors, threads and TCP connections as one "
      "JSON line per process every interval (read from /proc), until it exits or Ctrl-C");
  auto o = std::make_shared<monitor_options>();
  monitor->add_option("--pid", o->pids, "Process to watch (repeat it for several)")
      ->required()
      ->check(CLI::PositiveNumber);
  monitor->add_option("--interval", o->interval, "Seconds between readings")->capture_default_str();
  monitor->add_option("--port", o->port,
                      "Also count established TCP connections on this local port (the server's "
                      "listening port), in the process's network namespace");
  monitor->add_option("--count", o->count, "Stop after this many readings (0: no limit)")
      ->capture_default_str();
  monitor->footer(
      "Each line: {\"time\": UNIX SECONDS, \"pid\", \"cpu_user_seconds\", "
      "\"cpu_system_seconds\" (since the process started), \"rss_bytes\", \"fds\", \"threads\" "
      "[, \"tcp_connections\"]}; a process that exits gives {\"time\", \"pid\", \"exited\": "
      "true} once.\n"
      "Example: dnstransport monitor --pid \"$(pidof unbound)\" --port 853 --interval 0.5\n"
      "Exit status: 0 after Ctrl-C, --count readings, or when every process has exited; 2 for "
      "bad flags or a process that does not exist.");
  return [monitor, o]() -> int {
    if (!monitor->parsed()) return -1;
    if (!(o->interval >= 0.01 && o->interval <= 3600)) {
      throw setup_error(
          fmt::format("--interval: {} is not between 0.01 and 3600 seconds", o->interval));
    }
    for (int pid : o->pids) {
      if (!sample_process(pid)) {
        throw setup_error(fmt::format("--pid {}: no such process on this machine", pid));
      }
    }
    std::vector<bool> gone(o->pids.size(), false);
    std::size_t alive = o->pids.size();
    const auto period = std::chrono::duration<double>(o->interval);
    auto next = std::chrono::steady_clock::now();
    for (std::uint64_t reading = 0; alive > 0 && !stop_requested.load(); ++reading) {
      if (o->count != 0 && reading == o->count) break;
      const double now = unix_seconds();
      for (std::size_t i = 0; i < o->pids.size(); ++i) {
        if (gone[i]) continue;
        const int pid = o->pids[i];
        const auto s = sample_process(pid);
        monitor_line line;
        line.time = now;
        line.sample.pid = pid;
        if (!s) {
          gone[i] = true;
          --alive;
          line.exited = true;
        } else {
          line.sample = *s;
          if (o->port != 0) line.tcp_connections = count_tcp_connections(pid, o->port);
        }
        fmt::print("{}\n", format_monitor_line(line));
      }
      std::fflush(stdout);
      next += std::chrono::duration_cast<std::chrono::steady_clock::duration>(period);
      while (!stop_requested.load() && std::chrono::steady_clock::now() < next) {
        std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
            next - std::chrono::steady_clock::now(), std::chrono::milliseconds(50)));
      }
    }
    return exit_ok;
  };
}

}  // namespace dnstransport::cli
