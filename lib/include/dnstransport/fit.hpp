#pragma once
/// \file
/// The handshake-amortization model T(N) = t_inf * N / (N + h) and its least-squares fit:
/// how many queries a connection must carry before its set-up stops mattering.

#include <cstdint>
#include <optional>
#include <vector>

namespace dnstransport {

/// A measured or observed (queries per connection, queries/s) pair; N = 0 means unlimited and
/// observes T_inf directly.
struct throughput_sample {
  std::uint64_t queries_per_connection = 0;  ///< N; 0: unlimited
  double qps = 0;                            ///< queries per second at N
};

/// T(N) = t_inf * N / (N + h): throughput when every connection carries N queries and its
/// set-up costs as much as h queries.
struct amortization_model {
  double t_inf = 0;     ///< queries/s with connections that are never replaced
  double h = 0;         ///< set-up cost in query-equivalents; N = h reaches 50 % of t_inf
  double residual = 0;  ///< relative RMS residual: sqrt(mean(((measured - model) / model)^2))

  /// The model at N queries per connection (0: unlimited, t_inf).
  double qps_at(std::uint64_t queries_per_connection) const noexcept;
};

/// Least-squares fit of T(N) = t_inf * N / (N + h) minimizing the relative residuals (so a
/// curve spanning orders of magnitude is fitted evenly). Written as 1/T = 1/t_inf +
/// (h/t_inf)/N the problem is linear and solved exactly. A negative h (throughput falling
/// with longer connections) is clamped to 0. Needs two distinct N values, at least one finite,
/// and positive throughputs; nothing otherwise.
std::optional<amortization_model> fit_amortization(const std::vector<throughput_sample>& samples);

}  // namespace dnstransport
