// Handshake amortization: the fit of T(N) = T_inf * N / (N + h) recovers known answers, and
// compute_amortization turns sweep points into fits, model samples and departures.
#include <dnstransport/sweep_result.hpp>

#include <gtest/gtest.h>

#include <cmath>

namespace dnstransport {
namespace {

const std::vector<std::uint64_t> amortization_grid{1,   2,    5,    10,   20,    50,    100, 200,
                                                   500, 1000, 2000, 5000, 10000, 20000, 0};

double model_qps(double t_inf, double h, std::uint64_t n) {
  return n == 0 ? t_inf : t_inf * static_cast<double>(n) / (static_cast<double>(n) + h);
}

std::vector<throughput_sample> synthetic(double t_inf, double h,
                                         const std::vector<std::uint64_t>& grid, double noise = 0) {
  std::vector<throughput_sample> samples;
  for (std::size_t i = 0; i < grid.size(); ++i) {
    // Alternating +/- noise: a deterministic stand-in for run-to-run variation.
    const double factor = 1 + (i % 2 == 0 ? -noise : noise);
    samples.push_back({grid[i], model_qps(t_inf, h, grid[i]) * factor});
  }
  return samples;
}

sweep_point_result point(transport_kind t, unsigned clients, std::uint64_t n, double qps) {
  sweep_point_result p;
  p.point.transport = {
      t, t == transport_kind::tls ? std::optional(tls_backend::openssl) : std::nullopt};
  p.point.clients = clients;
  p.point.queries_per_connection = n;
  p.summary.qps = {qps, qps, qps * 0.98, qps * 1.02, qps * 0.01, 0.04};
  return p;
}

void expect_within_one_percent(double actual, double expected) {
  EXPECT_NEAR(actual, expected, std::fabs(expected) * 0.01) << "expected " << expected;
}

TEST(fit_test, recovers_t_inf_and_h_from_exact_data) {
  for (const double h : {0.5, 1.0, 3.5, 12.5, 80.0, 900.0}) {
    const auto model = fit_amortization(synthetic(120000, h, amortization_grid));
    ASSERT_TRUE(model.has_value());
    expect_within_one_percent(model->t_inf, 120000);
    expect_within_one_percent(model->h, h);
    EXPECT_LT(model->residual, 1e-9);
  }
}

TEST(fit_test, recovers_within_one_percent_under_two_percent_noise) {
  const auto model = fit_amortization(synthetic(80000, 12.5, amortization_grid, 0.02));
  ASSERT_TRUE(model.has_value());
  expect_within_one_percent(model->t_inf, 80000);
  expect_within_one_percent(model->h, 12.5);
  EXPECT_GT(model->residual, 0.01);
  EXPECT_LT(model->residual, 0.03);
}

TEST(fit_test, works_without_an_unlimited_point) {
  const auto model = fit_amortization(synthetic(50000, 7, {1, 10, 100, 1000}));
  ASSERT_TRUE(model.has_value());
  expect_within_one_percent(model->t_inf, 50000);
  expect_within_one_percent(model->h, 7);
}

TEST(fit_test, two_points_are_fitted_exactly) {
  const auto model = fit_amortization({{1, 1000}, {0, 100000}});
  ASSERT_TRUE(model.has_value());
  expect_within_one_percent(model->t_inf, 100000);
  expect_within_one_percent(model->h, 99);
  EXPECT_DOUBLE_EQ(model->qps_at(0), model->t_inf);
  expect_within_one_percent(model->qps_at(1), 1000);
}

TEST(fit_test, no_set_up_cost_or_falling_throughput_gives_h_zero) {
  auto flat = fit_amortization({{1, 1000}, {10, 1000}, {0, 1000}});
  ASSERT_TRUE(flat.has_value());
  EXPECT_NEAR(flat->h, 0, 1e-9);
  expect_within_one_percent(flat->t_inf, 1000);
  auto falling = fit_amortization({{1, 2000}, {10, 1500}, {0, 1000}});
  ASSERT_TRUE(falling.has_value());
  EXPECT_EQ(falling->h, 0);
  EXPECT_GT(falling->residual, 0.1);
}

TEST(fit_test, refuses_what_cannot_be_fitted) {
  EXPECT_FALSE(fit_amortization({}).has_value());
  EXPECT_FALSE(fit_amortization({{10, 1000}}).has_value());
  EXPECT_FALSE(fit_amortization({{10, 1000}, {10, 1100}}).has_value());
  EXPECT_FALSE(fit_amortization({{0, 1000}}).has_value());
  EXPECT_FALSE(fit_amortization({{1, 0}, {0, 1000}}).has_value());
}

TEST(fit_test, amortization_per_transport_and_client_count) {
  std::vector<sweep_point_result> points;
  for (const auto n : amortization_grid) {
    points.push_back(point(transport_kind::tcp, 8, n, model_qps(90000, 2, n)));
  }
  for (const auto n : amortization_grid) {
    points.push_back(point(transport_kind::tls, 8, n, model_qps(60000, 40, n)));
  }
  points.push_back(point(transport_kind::udp, 8, 0, 100000));
  const auto fits = compute_amortization(points);
  ASSERT_EQ(fits.size(), 2u);

  const auto& tcp = fits[0];
  EXPECT_EQ(tcp.transport.transport, transport_kind::tcp);
  EXPECT_EQ(tcp.clients, 8u);
  expect_within_one_percent(tcp.model.t_inf, 90000);
  expect_within_one_percent(tcp.model.h, 2);
  expect_within_one_percent(tcp.n50, 2);
  expect_within_one_percent(tcp.n90, 18);
  expect_within_one_percent(tcp.n99, 198);
  EXPECT_TRUE(tcp.departures.empty());

  const auto& tls = fits[1];
  EXPECT_EQ(tls.transport.backend, tls_backend::openssl);
  expect_within_one_percent(tls.model.t_inf, 60000);
  expect_within_one_percent(tls.model.h, 40);
  ASSERT_EQ(tls.samples.size(), amortization_grid.size());
  EXPECT_EQ(tls.samples.front().queries_per_connection, 1u);
  EXPECT_EQ(tls.samples.back().queries_per_connection, 0u);
  // The simple model charges one query per set-up: T_inf / 2 at N = 1.
  expect_within_one_percent(tls.samples.front().simple_model_qps, tls.model.t_inf / 2);
  EXPECT_GT(tls.simple_residual, 0.5);
}

TEST(fit_test, names_where_the_measurement_departs_from_the_model) {
  std::vector<sweep_point_result> points;
  for (const auto n : amortization_grid) {
    const double qps = model_qps(80000, 12.5, n) * (n == 1000 ? 0.6 : 1.0);
    points.push_back(point(transport_kind::tcp, 4, n, qps));
  }
  const auto fits = compute_amortization(points);
  ASSERT_EQ(fits.size(), 1u);
  EXPECT_EQ(fits[0].departures, std::vector<std::uint64_t>{1000});
  for (const auto& s : fits[0].samples) {
    EXPECT_EQ(std::fabs(s.deviation) > amortization_departure_tolerance,
              s.queries_per_connection == 1000);
  }
}

TEST(fit_test, one_value_per_transport_gives_no_fit) {
  const auto fits = compute_amortization(
      {point(transport_kind::tcp, 1, 0, 1000), point(transport_kind::tcp, 2, 0, 2000)});
  EXPECT_TRUE(fits.empty());
}

}  // namespace
}  // namespace dnstransport
