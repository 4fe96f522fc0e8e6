#pragma once
// Internal: least squares with non-negative coefficients over a few terms, weighted so that
// each observation counts by its relative error, and bootstrap intervals over the
// observations. What the cost model (cost_model.cpp) fits a server's or a generator's CPU
// time with: seconds = sum of cost_i x count_i, every cost_i >= 0.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace dnstransport::detail {

// One observation: the counts of each term and what was measured.
struct cost_observation {
  std::vector<double> counts;
  double measured = 0;
};

struct nonnegative_fit {
  std::vector<double> coefficients;  // one per term, each >= 0
  // sqrt(mean(((predicted - measured) / measured)^2)) over the observations.
  double relative_error = 0;
};

// The coefficients >= 0 minimising the sum of ((predicted - measured) / measured)^2 over the
// observations with a positive measurement: the best of the unconstrained fits over every
// subset of the terms whose coefficients all come out >= 0 (exact, and cheap for the handful
// of terms a cost model has: at most 2^terms solves). Nothing when fewer observations than
// terms remain or the terms cannot be told apart (every subset's fit singular).
std::optional<nonnegative_fit> fit_nonnegative(const std::vector<cost_observation>& observations);

struct coefficient_interval {
  double low = 0;   // 2.5th percentile
  double high = 0;  // 97.5th percentile
};

// 95 % intervals of each coefficient over `resamples` fits of observations drawn with
// replacement (a resample whose fit fails is drawn again, up to `resamples` times more);
// `seed` makes them repeatable. Nothing when the observations cannot be fitted at all.
std::optional<std::vector<coefficient_interval>> bootstrap_intervals(
    const std::vector<cost_observation>& observations, unsigned resamples, std::uint64_t seed);

}  // namespace dnstransport::detail
