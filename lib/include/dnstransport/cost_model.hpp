#pragma once
/// \file
/// What a server spends, and the generator beside it, per answer, per connection set-up and
/// per full or resumed handshake, in CPU; and per open connection in memory: fitted over a
/// sweep's runs (least squares with costs that cannot be negative, each with a 95 % interval
/// from a bootstrap over the runs), per target and transport. The numbers an operator sizes
/// a server with, and the queries per connection they predict a handshake needs to amortize.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <dnstransport/load.hpp>
#include <dnstransport/sweep_plan.hpp>

namespace dnstransport {

/// One fitted cost: CPU seconds per unit (bytes, for memory), with its 95 % interval.
struct unit_cost {
  double value = 0;     ///< the cost fitted over every run
  double low = 0;       ///< 2.5th percentile over bootstrap resamples of the runs
  double high = 0;      ///< 97.5th percentile
  bool fitted = false;  ///< false: no run had any of this unit (nothing to fit it from)
};

/// A side's CPU (the server's, or the generator's own) as costs times counts.
struct cpu_cost_model {
  unit_cost per_answer;             ///< an answer, on every transport
  unit_cost per_connection;         ///< a TCP connection's set-up (tcp)
  unit_cost per_full_handshake;     ///< a connection with a full TLS/QUIC handshake, set-up in
  unit_cost per_resumed_handshake;  ///< ... with a resumed one
  /// sqrt(mean(((predicted - measured) / measured)^2)) over the runs.
  double relative_error = 0;
  /// The largest |predicted - measured| / measured of one run: where the model misses most.
  double largest_error = 0;
  std::size_t runs = 0;  ///< the runs it was fitted over

  /// What the model says a run's counts cost (CPU seconds).
  double predict(const run_result& run) const noexcept;
  /// A new connection's cost before its first answer: set-up and full handshake.
  double setup_cost() const noexcept;
};

/// The costs of one target's transport.
struct transport_costs {
  std::string target;                  ///< empty when the sweep has one server
  std::uint64_t distinct_sources = 0;  ///< of the runs fitted; 0 without that axis
  sweep_transport transport;           ///< the transport (and TLS library)
  /// The server's, when at least as many of its runs measured the server's CPU
  /// (load_spec::monitor) as the model has costs, plus one.
  std::optional<cpu_cost_model> server;
  /// The generator's, from its own CPU (run_result::client_cpu_seconds).
  std::optional<cpu_cost_model> generator;
  /// The server's memory per open connection (its largest RSS against the most connections
  /// open at once, over the runs), for transports with connections whose server was monitored.
  unit_cost server_bytes_per_connection;
  /// From the server's costs: the queries per connection at which a server-bound throughput
  /// reaches 50 % of what persistent connections give (set-up cost / answer cost); 0 when
  /// the costs do not give it.
  double n50 = 0;
  double n90 = 0;  ///< the same for 90 % (9 times set-up cost / answer cost)
  double n99 = 0;  ///< the same for 99 % (99 times set-up cost / answer cost)
};

/// Bootstrap resamples behind each interval; the seed is fixed, so a sweep's models are the
/// same each time they are computed (compute_costs, sweep_result.hpp).
inline constexpr unsigned cost_bootstrap_resamples = 1000;
}  // namespace dnstransport
