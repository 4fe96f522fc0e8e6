#pragma once
/// \file
/// What the server spent: CPU, memory, descriptors, threads and TCP connections of the
/// server's processes, read from /proc on this machine while a load runs.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dnstransport {

/// One reading of one process.
struct process_sample {
  int pid = 0;  ///< the process read
  /// User CPU seconds since the process started (all its threads, live or gone). The sum with
  /// cpu_system_seconds is the process's CPU clock (to the nanosecond), split as /proc's
  /// clock ticks split it.
  double cpu_user_seconds = 0;
  double cpu_system_seconds = 0;  ///< likewise
  std::uint64_t rss_bytes = 0;    ///< resident set size
  std::uint64_t fds = 0;          ///< open file descriptors (0 when /proc/PID/fd is unreadable)
  std::uint64_t threads = 0;      ///< threads of the process
};

/// Reads pid's figures from /proc; nothing when the process does not exist (or has exited).
std::optional<process_sample> sample_process(int pid);

/// Established TCP connections whose local port is `port`, in the network namespace of `pid`:
/// through sock_diag netlink when that is this process's namespace, else from
/// /proc/PID/net/tcp and tcp6; nothing when neither can be read.
std::optional<std::uint64_t> count_tcp_connections(int pid, std::uint16_t port);

/// A cgroup (v2) of the server: its CPU from cpu.stat, its memory from memory.current, and the
/// processes in it (cgroup.procs).
struct cgroup_sample {
  double cpu_user_seconds = 0;     ///< since the cgroup was created, every process in it
  double cpu_system_seconds = 0;   ///< system CPU, likewise
  std::uint64_t memory_bytes = 0;  ///< memory.current: the cgroup's memory, page cache too
  std::vector<int> pids;           ///< processes in it now
};

/// Reads a cgroup v2 directory ("/sys/fs/cgroup/system.slice/unbound.service", or a path
/// relative to /sys/fs/cgroup); nothing when it is not a readable cgroup v2 directory.
std::optional<cgroup_sample> sample_cgroup(const std::string& path);

/// One line of `dnstransport monitor`: a reading of one process on the machine it ran on, or
/// the news that the process exited. `run --monitor-command` reads these lines back.
struct monitor_line {
  double time = 0;        ///< Unix seconds on the monitored machine when the reading was taken
  process_sample sample;  ///< sample.pid names the process; the rest is 0 when exited
  std::optional<std::uint64_t> tcp_connections;  ///< with `monitor --port`
  bool exited = false;                           ///< the process exited (or is gone): no reading
};

/// The line as one JSON object, without a newline.
std::string format_monitor_line(const monitor_line& line);

/// Reads one line written by format_monitor_line; nothing (and `error` says why) when it is
/// not a JSON object with "time" and "pid" and either "exited" or the reading's numbers.
std::optional<monitor_line> parse_monitor_line(std::string_view text, std::string& error);

/// What the monitored server processes spent during a load's measured window (summed over
/// the processes; maxima are of the sums).
struct process_usage {
  std::vector<int> pids;             ///< the processes watched by id (--monitor-pid)
  std::vector<std::string> cgroups;  ///< the cgroups watched (--monitor-cgroup)
  /// The command whose `dnstransport monitor` lines were read (--monitor-command); empty:
  /// none.
  std::string command;
  std::vector<int> command_pids;  ///< the processes (on its machine) those lines named
  /// User CPU seconds in the window (a command's readings scaled to the window's length).
  double cpu_user_seconds = 0;
  double cpu_system_seconds = 0;  ///< system CPU seconds in the window, likewise
  /// CPU seconds per 1,000 answers received in the window: the server's cost of a query.
  double cpu_per_1k_answers = 0;
  /// CPU seconds per wall second of the window (1.0 = one CPU busy all the time).
  double cpu_share = 0;
  /// The most resident memory at one reading, in bytes (a cgroup's: its memory.current).
  std::uint64_t rss_max_bytes = 0;
  std::uint64_t fds_max = 0;      ///< the most open file descriptors at one reading
  std::uint64_t threads_max = 0;  ///< the most threads at one reading
  /// TCP transports: the most established connections on the target port at one sample.
  std::uint64_t connections_max = 0;
  /// False when a command's readings were too few to measure CPU in the window (the CPU
  /// figures are then 0 and mean nothing).
  bool cpu_measured = true;
  std::uint64_t samples = 0;  ///< readings taken (at least the window's start and end)
  /// Processes that exited during the load: their figures stop at their last reading.
  std::vector<int> exited;  ///< also those of command_pids

  /// Cgroups that could no longer be read (removed) during the load.
  std::vector<std::string> exited_cgroups;

  /// Whether anything was monitored: processes, cgroups or a command.
  bool monitored() const noexcept { return !pids.empty() || !cgroups.empty() || !command.empty(); }
  /// CPU seconds in the window, user and system.
  double cpu_seconds() const noexcept { return cpu_user_seconds + cpu_system_seconds; }
};

}  // namespace dnstransport
