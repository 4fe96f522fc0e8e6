#include "monitor/command_source.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>

#include <fmt/format.h>

#include <dnstransport/error.hpp>

#include "util/clock.hpp"

extern char** environ;

namespace dnstransport::detail {

namespace {

constexpr std::size_t longest_line = 64 * 1024;
constexpr std::size_t stderr_kept = 600;
// Readings kept per process: the monitor reads them about ten times a window, so a few are
// enough to find the last one before the window's end.
constexpr std::size_t kept_readings = 64;

void close_quietly(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return fmt::format("was killed by signal {}", WTERMSIG(status));
  return "ended";
}

}  // namespace

command_source::command_source(std::string command) : command_(std::move(command)) {
  int out[2] = {-1, -1};
  int err[2] = {-1, -1};
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    close_quietly(out[0]);
    close_quietly(out[1]);
    throw setup_error(
        fmt::format("{}: pipe: {}", setting("load_spec::monitor.command"), std::strerror(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  // A process group of its own: Ctrl-C at the terminal reaches us, not the command (we stop
  // it), and stopping it reaches everything it started (ssh and what ssh runs).
  posix_spawnattr_setpgroup(&attributes, 0);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGTERM);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF);
  std::string shell = "/bin/sh";
  std::string dash_c = "-c";
  char* argv[] = {shell.data(), dash_c.data(), command_.data(), nullptr};
  const int failed = posix_spawn(&child_, shell.c_str(), &actions, &attributes, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  close(out[1]);
  close(err[1]);
  out_ = out[0];
  err_ = err[0];
  wake_ = eventfd(0, EFD_CLOEXEC);
  if (failed != 0 || wake_ < 0) {
    close_quietly(out_);
    close_quietly(err_);
    close_quietly(wake_);
    throw setup_error(fmt::format("{} \"{}\": cannot start /bin/sh: {}",
                                  setting("load_spec::monitor.command"), command_,
                                  std::strerror(failed != 0 ? failed : errno)));
  }
  reader_ = std::thread([this] { read_output(); });
}

command_source::~command_source() {
  kill(-child_, SIGTERM);
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto written = write(wake_, &one, sizeof one);
  reader_.join();
  bool reaped = false;
  {
    std::lock_guard lock(mutex_);
    reaped = state_.command_ended && !state_.how_it_ended.empty();
  }
  if (!reaped) {
    int status = 0;
    pid_t gone = 0;
    for (int i = 0; i < 50 && (gone = waitpid(child_, &status, WNOHANG)) == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (gone == 0) {
      kill(-child_, SIGKILL);
      while (waitpid(child_, &status, 0) < 0 && errno == EINTR) {
      }
    }
  }
  close_quietly(out_);
  close_quietly(err_);
  close_quietly(wake_);
}

void command_source::read_output() {
  std::string line;
  char buffer[8192];
  bool out_open = true;
  bool err_open = true;
  bool discarding = false;  // inside a line longer than longest_line
  while (out_open || err_open) {
    pollfd fds[3] = {{out_, POLLIN, 0}, {err_, POLLIN, 0}, {wake_, POLLIN, 0}};
    if (!out_open) fds[0].fd = -1;
    if (!err_open) fds[1].fd = -1;
    if (poll(fds, 3, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[2].revents != 0) return;
    if (fds[1].revents != 0) {
      const ssize_t n = ::read(err_, buffer, sizeof buffer);
      if (n <= 0) {
        if (n == 0 || errno != EINTR) err_open = false;
      } else {
        std::lock_guard lock(mutex_);
        stderr_tail_.append(buffer, static_cast<std::size_t>(n));
        if (stderr_tail_.size() > stderr_kept) {
          stderr_tail_.erase(0, stderr_tail_.size() - stderr_kept);
        }
      }
    }
    if (fds[0].revents == 0) continue;
    const ssize_t n = ::read(out_, buffer, sizeof buffer);
    if (n <= 0) {
      if (n == 0 || errno != EINTR) out_open = false;
      continue;
    }
    const std::uint64_t now = monotonic_ns();
    for (ssize_t i = 0; i < n; ++i) {
      const char c = buffer[i];
      if (c != '\n') {
        if (line.size() < longest_line) {
          line += c;
        } else {
          discarding = true;
        }
        continue;
      }
      std::string error;
      std::optional<monitor_line> parsed;
      if (discarding) {
        error = fmt::format("a line longer than {} bytes", longest_line);
      } else if (line.find_first_not_of(" \t\r") == std::string::npos) {
        line.clear();
        continue;
      } else {
        parsed = parse_monitor_line(line, error);
      }
      {
        std::lock_guard lock(mutex_);
        if (!parsed) {
          if (state_.bad_lines++ == 0) {
            state_.first_bad_line = fmt::format("\"{}\" ({})", line.substr(0, 120), error);
          }
        } else if (parsed->exited) {
          history_.erase(parsed->sample.pid);
          state_.exited.push_back(parsed->sample.pid);
        } else {
          auto& kept = history_[parsed->sample.pid];
          kept.push_back({*parsed, now});
          if (kept.size() > kept_readings) kept.pop_front();
        }
      }
      arrived_.notify_all();
      line.clear();
      discarding = false;
    }
  }
  finished_reading();
}

void command_source::finished_reading() {
  // Both pipes are closed: the command has ended, or is about to. Take its status if it
  // comes soon (the destructor stops and reaps it otherwise).
  int status = 0;
  pid_t gone = 0;
  for (int i = 0; i < 100 && (gone = waitpid(child_, &status, WNOHANG)) == 0; ++i) {
    pollfd wake{wake_, POLLIN, 0};
    if (poll(&wake, 1, 10) > 0) break;
  }
  {
    std::lock_guard lock(mutex_);
    state_.command_ended = true;
    if (gone == child_) {
      std::string said = stderr_tail_;
      while (!said.empty() && (said.back() == '\n' || said.back() == ' ')) said.pop_back();
      if (const auto cut = said.rfind('\n', said.size() > 300 ? said.size() - 300 : 0);
          said.size() > 300 && cut != std::string::npos) {
        said.erase(0, cut + 1);
      }
      state_.how_it_ended = describe_status(status);
      if (!said.empty()) state_.how_it_ended += fmt::format(", saying: {}", said);
    }
  }
  arrived_.notify_all();
}

command_source::snapshot command_source::read(std::uint64_t cutoff) const {
  std::lock_guard lock(mutex_);
  snapshot copy = state_;
  for (const auto& [pid, kept] : history_) {
    for (auto r = kept.rbegin(); r != kept.rend(); ++r) {
      if (r->received_ns > cutoff) continue;
      copy.latest.emplace(pid, *r);
      break;
    }
  }
  return copy;
}

void command_source::wait_for_reading(double seconds) {
  std::unique_lock lock(mutex_);
  const bool arrived = arrived_.wait_for(lock, std::chrono::duration<double>(seconds), [&] {
    return !history_.empty() || !state_.exited.empty() || state_.command_ended;
  });
  if (!history_.empty() || !state_.exited.empty()) return;
  if (!arrived) {
    throw setup_error(fmt::format(
        "{} \"{}\": no reading within {:g} s (it should print `dnstransport monitor` lines on "
        "its standard output){}",
        setting("load_spec::monitor.command"), command_, seconds,
        state_.bad_lines > 0 ? fmt::format("; it printed {}", state_.first_bad_line) : ""));
  }
  throw setup_error(fmt::format(
      "{} \"{}\" {} before its first reading{}", setting("load_spec::monitor.command"), command_,
      state_.how_it_ended.empty() ? "closed its output" : state_.how_it_ended,
      state_.bad_lines > 0 ? fmt::format("; it printed {}", state_.first_bad_line) : ""));
}

}  // namespace dnstransport::detail
