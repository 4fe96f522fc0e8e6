#pragma once
/// \file
/// The generator's own ceiling: short loads against the built-in responder that tell how
/// many queries per second one client CPU can drive over each transport, so a user knows
/// which server rates this machine can measure honestly.

#include <functional>
#include <string>
#include <vector>

#include <dnstransport/load.hpp>

namespace dnstransport {

/// One transport (and TLS backend) to calibrate, at a number of queries per connection.
struct calibration_case {
  /// The transport.
  transport_kind transport = transport_kind::udp;
  tls_backend backend = tls_backend::openssl;  ///< used when transport is tls
  std::uint64_t queries_per_connection = 0;    ///< 0: persistent connections
  /// TLS transports: each connection after a client's first resumes its session (a ticket),
  /// so the case measures resumed handshakes rather than full ones.
  bool resume = false;
  /// With resume: the first queries go in 0-RTT (early data).
  bool early_data = false;
};

/// "tls (gnutls), resumed" and the like: the transport, the backend where there is TLS, and
/// how connections start.
std::string calibration_case_name(const calibration_case& c);

/// The calibration cases run by default, for every transport this build has: persistent
/// connections; with connections, one query per connection; with TLS, that resumed too, and
/// resumed with 0-RTT (what a resumed handshake costs the client against a full one), on each
/// TLS backend compiled in (DoQ: GnuTLS only).
std::vector<calibration_case> default_calibration_cases();

/// Settings shared by every calibration load.
struct calibration_options {
  std::vector<calibration_case> cases = default_calibration_cases();  ///< run in this order
  double duration_seconds = 2;  ///< measured time of each case's load
  unsigned clients = 8;         ///< clients of each load
  /// Queries in flight per client (1 in a case of one query per connection).
  unsigned outstanding = 100;
  std::vector<int> client_cpus;  ///< pin the generator here; empty: no pinning
  std::vector<int> server_cpus;  ///< pin the in-process responder here; empty: no pinning
  unsigned server_threads = 1;   ///< threads of the in-process responder
  /// Set to true: the running case's load stops and no further case starts.
  const std::atomic<bool>* stop = nullptr;
  /// Called before each case with its index and the number of cases.
  std::function<void(std::size_t, std::size_t)> on_case;
};

/// What one calibration load showed.
struct calibration_result {
  calibration_case which;  ///< the case
  run_result run;          ///< what its load measured
  /// Answers per second of client CPU: the most one fully busy worker thread could drive.
  double qps_per_client_cpu = 0;
  /// True when the busiest worker thread was the limit (>= 90 % CPU): the measured qps is
  /// then itself the per-thread ceiling; otherwise the responder was.
  bool client_bound = false;
};

/// Runs every case against a built-in responder started in this process on 127.0.0.1.
/// Throws setup_error for unusable options (e.g. a TLS backend not compiled in).
std::vector<calibration_result> calibrate(const calibration_options& options);

/// The worker-thread CPU share at or above which a load is called client-bound.
inline constexpr double client_bound_threshold = 0.9;

/// A table of the results: transport, queries/s, client CPU per million answers, client CPU
/// per connection (a handshake and its one query, at one query per connection), queries/s
/// per client CPU (the ceiling per worker thread), and whether the client was the limit.
std::string format_calibration(const std::vector<calibration_result>& results);

}  // namespace dnstransport
