#include "child_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <thread>

namespace dnstransport::hostile {

namespace {

std::string temporary_file(const char* tag) {
  std::string path = "/tmp/dnstransport-child-" + std::string(tag) + "-XXXXXX";
  const int fd = ::mkstemp(path.data());
  if (fd < 0) throw std::runtime_error("mkstemp failed");
  ::close(fd);
  return path;
}

}  // namespace

child_process::child_process(const std::string& program, const std::vector<std::string>& arguments,
                             std::optional<unsigned long> open_files)
    : out_path_(temporary_file("out")),
      err_path_(temporary_file("err")),
      started_(std::chrono::steady_clock::now()) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(program.c_str()));
  for (const auto& a : arguments) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    // Only async-signal-safe calls from here to exec.
    const int out = ::open(out_path_.c_str(), O_WRONLY | O_TRUNC);
    const int err = ::open(err_path_.c_str(), O_WRONLY | O_TRUNC);
    const int in = ::open("/dev/null", O_RDONLY);
    if (out < 0 || err < 0 || in < 0) ::_exit(126);
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(err, 2);
    if (open_files) {
      const rlimit limit{*open_files, *open_files};
      ::setrlimit(RLIMIT_NOFILE, &limit);
    }
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    ::execv(program.c_str(), argv.data());
    ::_exit(127);
  }
}

child_process::~child_process() {
  if (!reaped_ && pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
  ::unlink(out_path_.c_str());
  ::unlink(err_path_.c_str());
}

void child_process::send_signal(int signal_number) {
  if (!reaped_) ::kill(pid_, signal_number);
}

std::string child_process::read_captured(const std::string& path) const {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool child_process::wait_for_stderr(std::string_view text, std::chrono::milliseconds limit) {
  return wait_for_output(err_path_, text, limit);
}

bool child_process::wait_for_stdout(std::string_view text, std::chrono::milliseconds limit) {
  return wait_for_output(out_path_, text, limit);
}

std::string child_process::stdout_so_far() const {
  return read_captured(out_path_);
}

std::string child_process::stderr_so_far() const {
  return read_captured(err_path_);
}

bool child_process::wait_for_output(const std::string& path, std::string_view text,
                                    std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (read_captured(path).find(text) != std::string::npos) return true;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      // Ended before saying it; keep the status for wait().
      status_ = status;
      reaped_ = true;
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

process_result child_process::wait(std::chrono::milliseconds limit) {
  process_result result;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int status = status_;
  while (!reaped_) {
    const pid_t done = ::waitpid(pid_, &status, WNOHANG);
    if (done == pid_) {
      reaped_ = true;
      break;
    }
    if (done < 0 && errno != EINTR) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      reaped_ = true;
      result.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.exit_code = 128 + WTERMSIG(status);
  result.out = read_captured(out_path_);
  result.err = read_captured(err_path_);
  return result;
}

process_result run_process(const std::string& program, const std::vector<std::string>& arguments,
                           std::chrono::milliseconds limit) {
  child_process child(program, arguments);
  return child.wait(limit);
}

std::optional<std::string> find_program(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string_view rest = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  while (!rest.empty()) {
    const auto colon = rest.find(':');
    const std::string directory(rest.substr(0, colon));
    const std::string candidate = (directory.empty() ? "." : directory) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    if (colon == std::string_view::npos) break;
    rest.remove_prefix(colon + 1);
  }
  return std::nullopt;
}

}  // namespace dnstransport::hostile
