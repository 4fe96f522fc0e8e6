#pragma once
// Internal: readings of the server's processes during one load, taken by run_load's
// supervising thread (at the start of the measured window, about ten times during it, and
// once after the workers end).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <dnstransport/monitor.hpp>

namespace dnstransport::detail {

class server_monitor {
 public:
  /// tcp_port: count established connections on it (0: the transport has none).
  server_monitor(std::vector<int> pids, std::vector<std::string> cgroups, std::uint16_t tcp_port);

  bool active() const noexcept { return !watched_.empty() || !cgroups_.empty(); }
  bool started() const noexcept { return samples_ != 0; }
  /// Takes a reading of every process still alive; the first call opens the window.
  void sample();
  /// CPU seconds the processes spent since their first reading, and their resident memory
  /// at the last one (for the timeline).
  double cpu_seconds_so_far() const noexcept;
  std::uint64_t last_rss_bytes() const noexcept { return last_rss_; }
  /// The window's figures, from the first reading to the last one of each process.
  process_usage finish(std::uint64_t answers, double window_seconds);

 private:
  struct watched {
    int pid;
    std::optional<process_sample> first;
    std::optional<process_sample> last;
    bool gone;
  };
  std::vector<watched> watched_;
  struct watched_cgroup {
    std::string path;
    std::optional<cgroup_sample> first;
    std::optional<cgroup_sample> last;
    bool gone;
  };
  std::vector<watched_cgroup> cgroups_;
  std::uint16_t tcp_port_;
  std::uint64_t samples_ = 0;
  std::uint64_t last_rss_ = 0;
  process_usage stats_;
};

}  // namespace dnstransport::detail
