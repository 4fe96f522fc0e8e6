// Non-negative least squares by enumeration of the terms' subsets, and bootstrap intervals
// (cost_fit.hpp). Eigen does the linear algebra.

#include "sweep/cost_fit.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include <Eigen/Dense>

namespace dnstransport::detail {

namespace {

// The observations as a weighted system: each row divided by its measurement, so the fit
// minimises relative residuals; rows measuring nothing carry no weight and are left out.
struct weighted_system {
  Eigen::MatrixXd a;
  Eigen::VectorXd b;
};

weighted_system weigh(const std::vector<cost_observation>& observations, std::size_t terms) {
  std::vector<const cost_observation*> kept;
  for (const auto& o : observations) {
    if (o.measured > 0 && o.counts.size() == terms) kept.push_back(&o);
  }
  weighted_system s{
      Eigen::MatrixXd(static_cast<Eigen::Index>(kept.size()), static_cast<Eigen::Index>(terms)),
      Eigen::VectorXd::Ones(static_cast<Eigen::Index>(kept.size()))};
  for (std::size_t row = 0; row < kept.size(); ++row) {
    for (std::size_t term = 0; term < terms; ++term) {
      s.a(static_cast<Eigen::Index>(row), static_cast<Eigen::Index>(term)) =
          kept[row]->counts[term] / kept[row]->measured;
    }
  }
  return s;
}

// The unconstrained least-squares fit on the terms in `subset` (a bit mask), or nothing when
// those columns are not independent.
std::optional<Eigen::VectorXd> fit_subset(const weighted_system& s, unsigned subset) {
  const auto terms = static_cast<unsigned>(s.a.cols());
  std::vector<Eigen::Index> columns;
  for (unsigned term = 0; term < terms; ++term) {
    if ((subset >> term) & 1u) columns.push_back(static_cast<Eigen::Index>(term));
  }
  Eigen::MatrixXd a(s.a.rows(), static_cast<Eigen::Index>(columns.size()));
  for (std::size_t i = 0; i < columns.size(); ++i) {
    a.col(static_cast<Eigen::Index>(i)) = s.a.col(columns[i]);
  }
  const Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(a);
  if (qr.rank() < a.cols()) return std::nullopt;
  const Eigen::VectorXd x = qr.solve(s.b);
  Eigen::VectorXd full = Eigen::VectorXd::Zero(s.a.cols());
  for (std::size_t i = 0; i < columns.size(); ++i)
    full(columns[i]) = x(static_cast<Eigen::Index>(i));
  return full;
}

std::optional<nonnegative_fit> fit_system(const weighted_system& s) {
  const auto terms = static_cast<unsigned>(s.a.cols());
  if (terms == 0 || terms > 16 || s.a.rows() < s.a.cols()) return std::nullopt;
  std::optional<Eigen::VectorXd> best;
  double best_ss = std::numeric_limits<double>::infinity();
  for (unsigned subset = 1; subset < (1u << terms); ++subset) {
    const auto x = fit_subset(s, subset);
    if (!x || x->minCoeff() < 0) continue;
    const double ss = (s.a * *x - s.b).squaredNorm();
    if (ss < best_ss) {
      best_ss = ss;
      best = x;
    }
  }
  if (!best) return std::nullopt;
  nonnegative_fit fit;
  fit.coefficients.assign(best->data(), best->data() + best->size());
  fit.relative_error = std::sqrt(best_ss / static_cast<double>(s.a.rows()));
  return fit;
}

double percentile(std::vector<double>& values, double p) {
  std::sort(values.begin(), values.end());
  const double at = p * static_cast<double>(values.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(at));
  const std::size_t above = std::min(below + 1, values.size() - 1);
  return values[below] + (values[above] - values[below]) * (at - static_cast<double>(below));
}

}  // namespace

std::optional<nonnegative_fit> fit_nonnegative(const std::vector<cost_observation>& observations) {
  if (observations.empty()) return std::nullopt;
  return fit_system(weigh(observations, observations.front().counts.size()));
}

std::optional<std::vector<coefficient_interval>> bootstrap_intervals(
    const std::vector<cost_observation>& observations, unsigned resamples, std::uint64_t seed) {
  if (!fit_nonnegative(observations)) return std::nullopt;
  const std::size_t terms = observations.front().counts.size();
  std::mt19937_64 random(seed);
  std::uniform_int_distribution<std::size_t> pick(0, observations.size() - 1);
  std::vector<std::vector<double>> draws(terms);
  std::vector<cost_observation> sample(observations.size());
  for (unsigned attempt = 0; attempt < 2 * resamples && draws[0].size() < resamples; ++attempt) {
    for (auto& o : sample) o = observations[pick(random)];
    const auto fit = fit_nonnegative(sample);
    if (!fit) continue;
    for (std::size_t term = 0; term < terms; ++term) {
      draws[term].push_back(fit->coefficients[term]);
    }
  }
  if (draws[0].empty()) return std::nullopt;
  std::vector<coefficient_interval> intervals(terms);
  for (std::size_t term = 0; term < terms; ++term) {
    intervals[term] = {percentile(draws[term], 0.025), percentile(draws[term], 0.975)};
  }
  return intervals;
}

}  // namespace dnstransport::detail
