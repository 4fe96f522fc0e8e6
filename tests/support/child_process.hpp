#pragma once
/// \file
/// Test support: starts a program (fork + exec) with its output captured in files, signals
/// it, and waits for it with a time limit past which it is killed, so a test that runs the
/// CLI can never hang.

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dnstransport::hostile {

/// How a child ended.
struct process_result {
  int exit_code = -1;      ///< exit status; 128 + signal number when killed by a signal
  bool timed_out = false;  ///< it outlived its time limit and was killed
  double seconds = 0;      ///< from start to end (or to the kill)
  std::string out;         ///< everything it wrote to stdout
  std::string err;         ///< everything it wrote to stderr
};

/// A running program.
class child_process {
 public:
  /// Starts `program` with `arguments`; `open_files` lowers RLIMIT_NOFILE (soft and hard)
  /// in the child first.
  child_process(const std::string& program, const std::vector<std::string>& arguments,
                std::optional<unsigned long> open_files = std::nullopt);
  /// Kills and reaps the child if it still runs.
  ~child_process();
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  void send_signal(int signal_number);
  /// The child's process id.
  pid_t pid() const noexcept { return pid_; }

  /// Waits until stderr contains `text`, at most `limit`. False when it did not come (or
  /// the child ended first).
  bool wait_for_stderr(std::string_view text, std::chrono::milliseconds limit);
  /// The same for stdout.
  bool wait_for_stdout(std::string_view text, std::chrono::milliseconds limit);
  /// What the child wrote to stdout so far.
  std::string stdout_so_far() const;
  /// What the child wrote to stderr so far.
  std::string stderr_so_far() const;

  /// Waits for the end, at most `limit` from now, then kills the child (result.timed_out).
  process_result wait(std::chrono::milliseconds limit);

 private:
  std::string read_captured(const std::string& path) const;
  bool wait_for_output(const std::string& path, std::string_view text,
                       std::chrono::milliseconds limit);

  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = 0;  // wait status, once reaped
  std::string out_path_;
  std::string err_path_;
  std::chrono::steady_clock::time_point started_;
};

/// The first executable `name` in $PATH; nothing when there is none.
std::optional<std::string> find_program(const std::string& name);

/// Runs a program to its end (at most `limit`) and returns how it ended.
process_result run_process(const std::string& program, const std::vector<std::string>& arguments,
                           std::chrono::milliseconds limit = std::chrono::seconds(20));

}  // namespace dnstransport::hostile
