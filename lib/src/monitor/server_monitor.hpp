#pragma once
// Internal: readings of the server's processes during one load, taken by run_load's
// supervising thread (at the start of the measured window, about ten times during it, and
// once after the workers end).

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <dnstransport/monitor.hpp>

namespace dnstransport::detail {

class command_source;

class server_monitor {
 public:
  /// tcp_port: count established connections on it (0: the transport has none). A command
  /// (--monitor-command) is started here and waited for until its first reading: throws
  /// setup_error when it fails.
  server_monitor(std::vector<int> pids, std::vector<std::string> cgroups, std::string command,
                 std::uint16_t tcp_port);
  ~server_monitor();

  bool active() const noexcept {
    return !watched_.empty() || !cgroups_.empty() || remote_ != nullptr;
  }
  /// The window ended at `monotonic` ns: a command's readings received later are not used.
  void close_window(std::uint64_t monotonic) noexcept { window_end_ns_ = monotonic; }
  bool started() const noexcept { return samples_ != 0; }
  /// Takes a reading of every process still alive; the first call opens the window.
  void sample();
  /// CPU seconds the processes spent since their first reading, and their resident memory
  /// at the last one (for the timeline).
  double cpu_seconds_so_far() const noexcept;
  std::uint64_t last_rss_bytes() const noexcept { return last_rss_; }
  /// The window's figures, from the first reading to the last one of each process. A
  /// command's readings are taken on its own schedule: its CPU is the rate between its first
  /// reading in the window and its last one, times the window.
  process_usage finish(std::uint64_t answers, double window_seconds);
  /// What the figures' reader should know (a command's readings too few, lines not
  /// understood, the command gone), after finish(); the settings named are marked (setting()).
  const std::vector<std::string>& warnings() const noexcept { return warnings_; }

 private:
  struct watched {
    int pid;
    std::optional<process_sample> first;
    std::optional<process_sample> last;
    bool gone;
  };
  void finish_remote(process_usage& stats, double window_seconds);
  // What one reading of every process adds up to.
  struct totals {
    std::uint64_t rss = 0;
    std::uint64_t fds = 0;
    std::uint64_t threads = 0;
    int connection_pid = 0;  // a process of the server, for its TCP connections
    std::uint64_t remote_connections = 0;
    bool remote_counted_connections = false;
  };
  void sample_cgroups(totals& sum);
  void sample_remote(totals& sum);
  void sample_processes(totals& sum);

  std::vector<watched> watched_;
  struct watched_cgroup {
    std::string path;
    std::optional<cgroup_sample> first;
    std::optional<cgroup_sample> last;
    bool gone;
  };
  std::vector<watched_cgroup> cgroups_;
  std::unique_ptr<command_source> remote_;
  struct remote_watched {
    std::optional<monitor_line> first;  // the first reading received in the window
    std::optional<monitor_line> last;
    bool gone = false;
  };
  std::map<int, remote_watched> remote_pids_;
  std::uint64_t window_start_ns_ = 0;
  std::uint64_t window_end_ns_ = UINT64_MAX;
  std::vector<std::string> warnings_;
  std::uint16_t tcp_port_;
  std::uint64_t samples_ = 0;
  std::uint64_t last_rss_ = 0;
  process_usage stats_;
};

}  // namespace dnstransport::detail
