#pragma once
/// \file
/// Test support: `dnstransport serve` as a child process on ephemeral loopback ports (UDP,
/// TCP and TLS), for tests that load a responder of another process. It runs until stopped
/// or until the object goes.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <dnstransport/transport.hpp>

#include "child_process.hpp"

namespace dnstransport::hostile {

class served {
 public:
  /// Starts `cli serve` (`cli`: the path of the dnstransport program), its generated TLS
  /// certificate written to `cert_dir`, and waits at most 20 s for it to print its ports.
  served(const std::string& cli, const std::string& cert_dir);

  /// Whether it came up and printed a port for each of UDP, TCP and TLS.
  bool ready() const { return ready_ && ports_.size() == 3; }
  /// The port of `t`: udp, tcp or tls.
  std::uint16_t port(transport_kind t) const { return ports_.at(static_cast<std::size_t>(t)); }
  /// "127.0.0.1:PORT" of `t`, as --server takes it.
  std::string address(transport_kind t) const;
  /// What it printed so far.
  std::string out() const { return child_.stdout_so_far(); }
  /// Sends `signal_number` and waits (at most 20 s) for the end.
  process_result stop(int signal_number);

 private:
  child_process child_;
  bool ready_ = false;
  std::vector<std::uint16_t> ports_;  // udp, tcp, tls
};

}  // namespace dnstransport::hostile
