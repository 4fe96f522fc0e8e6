#include "builtin_responder.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <dnstransport/error.hpp>
#include <dnstransport/text.hpp>

namespace dnstransport::cli {

namespace {

// How long the child may take to bind its sockets (and generate a certificate).
constexpr int start_timeout_ms = 15000;
// The descriptor the child writes its ports to (`serve --ready-fd`).
constexpr int ready_fd = 3;

std::string listener(const std::optional<endpoint>& where) {
  return where ? to_string(*where) : std::string();
}

// The ports line `serve --ready-fd` writes: "udp=5300 tcp=5300 tls=0 doh=0 doq=0".
per_transport<std::uint16_t> parse_ports(const std::string& line) {
  per_transport<std::uint16_t> ports{};
  std::istringstream words(line);
  for (std::string word; words >> word;) {
    const std::size_t sign = word.find('=');
    if (sign == std::string::npos) continue;
    const auto kind = parse_transport(word.substr(0, sign));
    if (kind) ports[*kind] = static_cast<std::uint16_t>(std::stoul(word.substr(sign + 1)));
  }
  return ports;
}

// In the child, between fork and exec: system calls only (no allocation), as the parent
// may have other threads.
[[noreturn]] void exec_serve(char* const* argv, int write_end) {
  // Gone with its parent, whatever kills the parent; out of the terminal's process group,
  // so that Ctrl-C stops the measurement, which then stops the responder.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  setpgid(0, 0);
  // dup2 clears close-on-exec, except when the descriptor already is ready_fd.
  if (write_end == ready_fd ? fcntl(ready_fd, F_SETFD, 0) : dup2(write_end, ready_fd) < 0) {
    _exit(127);
  }
  const int null = open("/dev/null", O_WRONLY);
  if (null >= 0) dup2(null, STDOUT_FILENO);
  execv("/proc/self/exe", argv);
  static const char failed[] = "error: cannot start the built-in responder (exec failed)\n";
  [[maybe_unused]] const auto ignored = write(STDERR_FILENO, failed, sizeof failed - 1);
  _exit(127);
}

}  // namespace

builtin_responder::builtin_responder(const server_options& options)
    : in_process_(std::make_unique<server>(options)),
      cpus_(options.cpus),
      cost_answer_us_(options.cost_answer_us),
      cost_handshake_us_(options.cost_handshake_us) {
  ports_ = in_process_->ports();
}

std::unique_ptr<builtin_responder> builtin_responder::start_process(const server_options& o) {
  std::vector<std::string> args{"dnstransport", "serve"};
  const auto add = [&args](std::string_view flag, const std::string& value) {
    if (value.empty()) return;
    args.emplace_back(flag);
    args.push_back(value);
  };
  // Each listener's flag is --NAME; UDP's listens unless 'off'.
  for (const auto& t : all_transports()) {
    const std::string where = listener(o.listen[t.kind]);
    add(fmt::format("--{}", t.name), where.empty() && !t.has_connections ? "off" : where);
  }
  add("--doh-path", o.doh_path);
  add("--threads", std::to_string(o.threads));
  add("--cpus", fmt::format("{}", fmt::join(o.cpus, ",")));
  add("--mode", std::string(answer_mode_name(o.mode)));
  add("--tls-backend", std::string(tls_backend_name(o.tls_options.backend)));
  std::vector<std::string> proxy;
  for (const auto& t : all_transports()) {
    if (o.proxy_protocol[t.kind] == proxy_policy::off) continue;
    proxy.push_back(fmt::format("{}={}", t.name, proxy_policy_name(o.proxy_protocol[t.kind])));
  }
  add("--proxy-protocol", fmt::format("{}", fmt::join(proxy, ",")));
  if (o.cost_answer_us > 0) add("--cost-answer-us", fmt::format("{}", o.cost_answer_us));
  if (o.cost_handshake_us > 0) add("--cost-handshake-us", fmt::format("{}", o.cost_handshake_us));
  add("--ready-fd", std::to_string(ready_fd));

  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  int ends[2];
  if (pipe2(ends, O_CLOEXEC) != 0) {
    throw setup_error(
        fmt::format("cannot start the built-in responder: pipe: {}", std::strerror(errno)));
  }
  const pid_t child = fork();
  if (child < 0) {
    close(ends[0]);
    close(ends[1]);
    throw setup_error(
        fmt::format("cannot start the built-in responder: fork: {}", std::strerror(errno)));
  }
  if (child == 0) exec_serve(argv.data(), ends[1]);
  close(ends[1]);

  std::unique_ptr<builtin_responder> responder(new builtin_responder());
  responder->child_ = child;
  responder->cpus_ = o.cpus;
  responder->cost_answer_us_ = o.cost_answer_us;
  responder->cost_handshake_us_ = o.cost_handshake_us;
  std::string line;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(start_timeout_ms);
  while (line.find('\n') == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{ends[0], POLLIN, 0};
    if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    char buffer[256];
    const ssize_t n = read(ends[0], buffer, sizeof buffer);
    if (n <= 0) break;
    line.append(buffer, static_cast<std::size_t>(n));
  }
  close(ends[0]);
  if (line.find('\n') == std::string::npos) {
    // The destructor stops and reaps the child.
    throw setup_error(
        "the built-in responder process did not start listening (its message, if any, is "
        "above)");
  }
  responder->ports_ = parse_ports(line);
  return responder;
}

builtin_responder::~builtin_responder() {
  if (child_ <= 0) return;
  kill(child_, SIGTERM);
  for (int i = 0; i < 100; ++i) {
    if (waitpid(child_, nullptr, WNOHANG) == child_) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(child_, SIGKILL);
  waitpid(child_, nullptr, 0);
}

std::uint16_t builtin_responder::port(transport_kind transport) const noexcept {
  return ports_[transport];
}

std::string describe_clients(const server_stats& stats) {
  if (stats.client_addresses == 0) return "";
  std::vector<std::string> most;
  for (const auto& c : stats.top_clients)
    most.push_back(fmt::format("{} {}", c.address, c.answers));
  return fmt::format("{} distinct {}; answered most: {}", with_commas(stats.client_addresses),
                     stats.client_addresses == 1 ? "address" : "addresses", fmt::join(most, ", "));
}

std::optional<server_stats> builtin_responder::stop() {
  if (!in_process_) return std::nullopt;
  in_process_->stop();
  return in_process_->stats();
}

std::string builtin_responder::where() const {
  const std::string pinned =
      cpus_.empty() ? std::string()
                    : fmt::format(", pinned to {} {}", cpus_.size() == 1 ? "CPU" : "CPUs",
                                  fmt::join(cpus_, ","));
  const std::string cost =
      cost_answer_us_ > 0 || cost_handshake_us_ > 0
          ? fmt::format(", spending {} us of CPU per answer and {} us per connection set-up",
                        cost_answer_us_, cost_handshake_us_)
          : std::string();
  if (child_ > 0) return fmt::format("its own process {}{}{}", child_, pinned, cost);
  return fmt::format("in this process{}{}", pinned, cost);
}

}  // namespace dnstransport::cli
