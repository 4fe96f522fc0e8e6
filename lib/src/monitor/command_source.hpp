#pragma once
// Internal: readings of a server on another machine, from a command (usually
// `ssh host dnstransport monitor --pid N`) whose standard output is `dnstransport monitor`'s
// JSON lines. The command runs in a process group of its own for one load; a thread reads its
// output and keeps each process's latest reading.

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <dnstransport/monitor.hpp>

namespace dnstransport::detail {

class command_source {
 public:
  /// Starts `/bin/sh -c command`; throws setup_error naming --monitor-command when it cannot.
  explicit command_source(std::string command);
  /// Stops the command (SIGTERM to its process group, then SIGKILL) and the reading thread.
  ~command_source();
  command_source(const command_source&) = delete;
  command_source& operator=(const command_source&) = delete;

  /// Waits until a first reading arrives; throws setup_error naming --monitor-command, with
  /// what the command wrote on stderr, when it exits first or nothing comes within `seconds`.
  void wait_for_reading(double seconds);

  struct reading {
    monitor_line line;
    std::uint64_t received_ns = 0;  ///< this machine's monotonic clock
  };
  struct snapshot {
    /// By pid: the last reading (received by the cut-off) of each process still alive.
    std::map<int, reading> latest;
    std::vector<int> exited;      ///< processes the command said exited
    std::uint64_t bad_lines = 0;  ///< lines that were not monitor lines
    std::string first_bad_line;   ///< the first of them, and why
    bool command_ended = false;   ///< the command exited (or closed its output)
    std::string how_it_ended;     ///< its exit status and last words on stderr
  };
  /// What came so far; `latest` holds the readings received by `cutoff` (monotonic ns).
  snapshot read(std::uint64_t cutoff = UINT64_MAX) const;
  const std::string& command() const noexcept { return command_; }

 private:
  void read_output();
  void finished_reading();

  std::string command_;
  pid_t child_ = -1;
  int out_ = -1;   // the command's stdout
  int err_ = -1;   // the command's stderr
  int wake_ = -1;  // eventfd: stop reading
  std::thread reader_;
  mutable std::mutex mutex_;
  std::condition_variable arrived_;             // a reading came, or the command ended
  snapshot state_;                              // latest: unused, see history_
  std::map<int, std::deque<reading>> history_;  // the last few readings of each process
  std::string stderr_tail_;
};

}  // namespace dnstransport::detail
