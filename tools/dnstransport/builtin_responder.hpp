#pragma once
// The built-in responder that `run` and `sweep` measure when no --server is given: a server
// in this process, or (--server-process) `dnstransport serve` as a child process of its own,
// pinned to its CPUs and monitored like a real server.

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <dnstransport/server.hpp>
#include <dnstransport/transport.hpp>

namespace dnstransport::cli {

class builtin_responder {
 public:
  /// A responder in this process.
  explicit builtin_responder(const server_options& options);
  /// `dnstransport serve` started from this executable with `options`' listeners, threads,
  /// CPUs, mode, TLS backend, DoH path and known costs; returns once it listens. Throws setup_error
  /// (with what the child said on stderr) when it does not start within a few seconds.
  static std::unique_ptr<builtin_responder> start_process(const server_options& options);
  ~builtin_responder();
  builtin_responder(const builtin_responder&) = delete;
  builtin_responder& operator=(const builtin_responder&) = delete;

  /// The port of a transport's listener (0: not listening for it).
  std::uint16_t port(transport_kind transport) const noexcept;
  /// Every listener's port, as port() gives them.
  const per_transport<std::uint16_t>& ports() const noexcept { return ports_; }
  /// The child's process id; 0 when the responder runs in this process.
  pid_t pid() const noexcept { return child_; }
  /// "in this process" or "process 1234 on CPU 1", with its known costs when it has any.
  std::string where() const;
  /// A responder in this process: stops it and gives its counters, the clients it answered
  /// among them; nothing for a child process (its own summary says them).
  std::optional<server_stats> stop();

 private:
  builtin_responder() = default;
  std::unique_ptr<server> in_process_;
  pid_t child_ = 0;
  std::vector<int> cpus_;
  double cost_answer_us_ = 0;
  double cost_handshake_us_ = 0;
  per_transport<std::uint16_t> ports_{};
};

/// The clients a responder answered, for a person: "12 distinct addresses; answered most:
/// 127.1.0.1 30, ..." (empty when it answered none, or has not stopped).
std::string describe_clients(const server_stats& stats);

}  // namespace dnstransport::cli
