#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "engine/engine.hpp"

namespace dnstransport::detail {
namespace {

run_plan plan_at(double rate_per_client, run_plan::schedule mode, unsigned clients = 4) {
  run_plan p;
  p.clients = clients;
  p.outstanding = 8;
  p.rate_per_client = rate_per_client;
  p.arrivals = mode;
  p.start_ns = 1'000'000'000;
  return p;
}

// Constant arrivals: client i of n sends its k-th query at start + (k + i/n) periods.
TEST(arrival_schedule_test, constant_arrivals_are_evenly_spaced_and_phased_per_client) {
  const run_plan p = plan_at(1000, run_plan::schedule::constant);  // 1 ms per client
  arrival_schedule first(p, 0);
  arrival_schedule third(p, 2);
  EXPECT_EQ(first.next(), p.start_ns);
  EXPECT_EQ(third.next(), p.start_ns + 500'000);  // half a period later
  for (int k = 1; k <= 1000; ++k) {
    first.advance();
    third.advance();
    EXPECT_EQ(first.next(), p.start_ns + static_cast<std::uint64_t>(k) * 1'000'000);
    EXPECT_EQ(third.next(), p.start_ns + static_cast<std::uint64_t>(k) * 1'000'000 + 500'000);
  }
}

// Poisson arrivals: exponential gaps, so their mean is the period and their standard
// deviation too (coefficient of variation 1), and clients draw different sequences.
TEST(arrival_schedule_test, poisson_gaps_are_exponential_with_the_rate_as_mean) {
  const run_plan p = plan_at(2000, run_plan::schedule::poisson);  // 0.5 ms mean gap
  arrival_schedule a(p, 0);
  arrival_schedule b(p, 1);
  constexpr int n = 200'000;
  double sum = 0;
  double sum_squares = 0;
  int differ = 0;
  std::uint64_t previous = a.next();
  for (int i = 0; i < n; ++i) {
    a.advance();
    b.advance();
    const double gap = static_cast<double>(a.next() - previous);
    previous = a.next();
    sum += gap;
    sum_squares += gap * gap;
    if (a.next() != b.next()) ++differ;
  }
  const double mean = sum / n;
  const double sd = std::sqrt(sum_squares / n - mean * mean);
  EXPECT_NEAR(mean, 500'000, 500'000 * 0.01);
  EXPECT_NEAR(sd / mean, 1.0, 0.02);
  EXPECT_GT(differ, n * 9 / 10);
}

// Queries per 100 ms row of a 1 s run, counted by scheduled time (what the timeline's rows
// would hold if every query left on time): 4,000 q/s over two clients.
std::vector<std::uint64_t> scheduled_per_row(run_plan::schedule mode) {
  const run_plan p = plan_at(2000, mode, 2);
  std::vector<std::uint64_t> rows(10, 0);
  constexpr std::uint64_t row_ns = 100'000'000;
  for (unsigned c = 0; c < p.clients; ++c) {
    arrival_schedule s(p, c);
    for (; s.next() < p.start_ns + 10 * row_ns; s.advance())
      ++rows[(s.next() - p.start_ns) / row_ns];
  }
  return rows;
}

// Constant arrivals put exactly the same number of queries in every interval; Poisson
// arrivals vary around it (open_loop_test checks that a run sends what was scheduled).
TEST(arrival_schedule_test, constant_rows_are_equal_and_poisson_rows_vary) {
  for (const auto n : scheduled_per_row(run_plan::schedule::constant)) EXPECT_EQ(n, 400u);
  const auto poisson = scheduled_per_row(run_plan::schedule::poisson);
  const auto [low, high] = std::minmax_element(poisson.begin(), poisson.end());
  // Ten Poisson(400) counts: a spread under 15 would be a 1-in-10^6 event (the seeds are
  // fixed, so this one draw is what every run sees).
  EXPECT_GE(*high - *low, 15u);
  EXPECT_NEAR(static_cast<double>(std::accumulate(poisson.begin(), poisson.end(), 0ull)), 4000,
              400);
}

TEST(arrival_schedule_test, waiting_queue_keeps_order_and_takes_back_the_front) {
  const run_plan p = plan_at(1000, run_plan::schedule::constant);
  arrival_schedule s(p, 0);
  for (std::uint32_t t = 1; t <= 8; ++t) s.push_back({t, 10 + t});  // full: outstanding is 8
  EXPECT_EQ(s.waiting(), 8u);
  EXPECT_EQ(s.oldest_waiting(), 1u);
  EXPECT_EQ(s.pop_front().at, 1u);
  EXPECT_EQ(s.pop_front().query, 12u);
  s.push_front({2, 12});  // a send the kernel refused goes back first
  s.push_back({9, 19});
  EXPECT_EQ(s.waiting_at(1).query, 13u);
  std::vector<std::uint64_t> order;
  while (!s.waiting_empty()) order.push_back(s.pop_front().at);
  EXPECT_EQ(order, (std::vector<std::uint64_t>{2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST(arrival_schedule_test, take_removes_one_waiting_arrival_and_keeps_the_order) {
  const run_plan p = plan_at(1000, run_plan::schedule::constant);
  arrival_schedule s(p, 0);
  for (std::uint32_t t = 1; t <= 8; ++t) s.push_back({t, t});
  s.pop_front();
  s.pop_front();
  s.push_back({9, 9});
  s.push_back({10, 10});  // the ring wrapped
  EXPECT_EQ(s.take(4).at, 7u);
  EXPECT_EQ(s.take(0).at, 3u);
  EXPECT_EQ(s.take(5).at, 10u);
  std::vector<std::uint64_t> order;
  while (!s.waiting_empty()) order.push_back(s.pop_front().at);
  EXPECT_EQ(order, (std::vector<std::uint64_t>{4, 5, 6, 8, 9}));
}

// Replay: each client's own queries at their offsets from the start, in order, then none.
TEST(arrival_schedule_test, replay_arrivals_are_the_captured_times_of_the_clients_queries) {
  run_plan p = plan_at(0, run_plan::schedule::replay, 3);
  p.replay_first = {0, 3, 3, 5};  // client 1 has no query
  p.replay_query = {4, 0, 2, 1, 3};
  p.replay_offset_ns = {0, 250, 250, 100, 900};
  EXPECT_TRUE(p.open_loop());
  arrival_schedule first(p, 0);
  arrival_schedule second(p, 1);
  arrival_schedule third(p, 2);
  EXPECT_TRUE(first.replays());
  EXPECT_EQ(second.next(), UINT64_MAX);
  std::vector<std::pair<std::uint64_t, std::uint32_t>> got;
  for (; first.next() != UINT64_MAX; first.advance())
    got.emplace_back(first.next(), first.next_query());
  EXPECT_EQ(got, (std::vector<std::pair<std::uint64_t, std::uint32_t>>{
                     {p.start_ns, 4}, {p.start_ns + 250, 0}, {p.start_ns + 250, 2}}));
  EXPECT_EQ(third.next(), p.start_ns + 100);
  EXPECT_EQ(third.next_query(), 1u);
  third.advance();
  EXPECT_EQ(third.next(), p.start_ns + 900);
  third.advance();
  EXPECT_EQ(third.next(), UINT64_MAX);
}

}  // namespace
}  // namespace dnstransport::detail
