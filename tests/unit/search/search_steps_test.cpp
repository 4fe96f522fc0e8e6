// The search's decisions against a model of a server, without sockets or a clock: the ramp
// doubles from the start rate while steps pass and halves while they fail, bisection narrows
// the edge to the precision, each bisection step runs `repeats` times, a rate that passed and
// then fails moves the edge down, the ceiling and a stop end it. The integration tests
// (tests/integration/search_test.cpp) search the real responder.
#include "search/search_steps.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <vector>

#include <dnstransport/error.hpp>

namespace dnstransport::detail {
namespace {

constexpr double step_seconds = 2;

search_spec spec_from(double start_rate) {
  search_spec spec;
  spec.load.target.server = "192.0.2.1";
  spec.load.target.port = 53;
  spec.start_rate = start_rate;
  spec.step_seconds = step_seconds;
  spec.settle_seconds = 0;
  spec.repeats = 2;
  spec.precision = 0.02;
  return spec;
}

// What a server that answers `capacity` queries per second gives a step at its rate: every
// query below it, the share it can above it.
run_result served(const load_spec& step, double capacity) {
  run_result r;
  r.arrivals = arrival_mode::constant;
  r.rate = step.traffic.rate;
  r.elapsed_seconds = step.traffic.duration_seconds;
  r.queries_sent = static_cast<std::uint64_t>(step.traffic.rate * step.traffic.duration_seconds);
  r.responses_received = static_cast<std::uint64_t>(std::min(step.traffic.rate, capacity) *
                                                    step.traffic.duration_seconds);
  r.lost = r.queries_sent - r.responses_received;
  r.qps = static_cast<double>(r.responses_received) / step.traffic.duration_seconds;
  return r;
}

std::vector<double> rates_of(const search_result& result, search_phase phase) {
  std::vector<double> rates;
  for (const auto& s : result.steps) {
    if (s.phase == phase) rates.push_back(s.rate);
  }
  return rates;
}

TEST(search_steps_test, ramps_up_then_bisects_to_the_capacity_within_the_precision) {
  const search_spec spec = spec_from(1000);
  std::vector<load_spec> loads;
  const search_result result = run_search_with(spec, [&](const load_spec& step) {
    loads.push_back(step);
    return served(step, 12'345);
  });
  EXPECT_EQ(result.end_reason, "converged");
  EXPECT_FALSE(result.interrupted);
  EXPECT_EQ(rates_of(result, search_phase::ramp),
            (std::vector<double>{1000, 2000, 4000, 8000, 16000}));
  EXPECT_LE(result.max_rate, 12'345);
  EXPECT_GT(result.failed_rate, 12'345);
  EXPECT_LE(result.failed_rate - result.max_rate, spec.precision * result.max_rate);
  // Every bisection rate that passed passed `repeats` times; one that failed, once.
  std::map<double, unsigned> runs;
  for (const auto& s : result.steps) {
    if (s.phase == search_phase::bisect) ++runs[s.rate];
  }
  for (const auto& [rate, n] : runs) EXPECT_EQ(n, rate <= 12'345 ? 2u : 1u) << rate;
  // Each step is the spec's load at its rate for the step's length.
  ASSERT_EQ(loads.size(), result.steps.size());
  for (std::size_t i = 0; i < loads.size(); ++i) {
    EXPECT_EQ(loads[i].traffic.rate, result.steps[i].rate);
    EXPECT_EQ(loads[i].traffic.duration_seconds, step_seconds);
    EXPECT_EQ(loads[i].traffic.count, 0u);
    EXPECT_EQ(result.steps[i].index, i);
  }
}

TEST(search_steps_test, halves_from_a_start_rate_above_the_capacity) {
  const search_result result =
      run_search_with(spec_from(1000), [](const load_spec& step) { return served(step, 300); });
  EXPECT_EQ(rates_of(result, search_phase::ramp), (std::vector<double>{1000, 500, 250}));
  EXPECT_EQ(result.end_reason, "converged");
  EXPECT_LE(result.max_rate, 300);
  EXPECT_GE(result.max_rate, 300 * (1 - 0.02));
}

TEST(search_steps_test, stops_at_the_ceiling_when_every_rate_passes) {
  search_spec spec = spec_from(1000);
  spec.max_rate = 5000;
  const search_result result =
      run_search_with(spec, [](const load_spec& step) { return served(step, 1e9); });
  EXPECT_EQ(rates_of(result, search_phase::ramp), (std::vector<double>{1000, 2000, 4000, 5000}));
  EXPECT_EQ(result.end_reason, "max_rate");
  EXPECT_EQ(result.max_rate, 5000);
  EXPECT_EQ(result.failed_rate, 0);
}

TEST(search_steps_test, a_server_that_answers_nothing_in_full_ends_with_no_passing_rate) {
  const search_result result =
      run_search_with(spec_from(8), [](const load_spec& step) { return served(step, 0.5); });
  EXPECT_EQ(rates_of(result, search_phase::ramp), (std::vector<double>{8, 4, 2, 1}));
  EXPECT_EQ(result.end_reason, "no_passing_rate");
  EXPECT_EQ(result.max_rate, 0);
}

// A rate that passed once and fails on repetition is not the edge: the highest rate below it
// that passed every time is.
TEST(search_steps_test, a_pass_that_fails_on_repetition_moves_the_edge_down) {
  std::map<double, unsigned> tried;
  const search_result result = run_search_with(spec_from(1000), [&](const load_spec& step) {
    // Rates from 7,000 on pass the first time only, as a server that degrades would.
    const unsigned n = tried[step.traffic.rate]++;
    return served(step, step.traffic.rate >= 7000 && n > 0 ? 0 : 10'000);
  });
  EXPECT_EQ(result.end_reason, "converged");
  EXPECT_LT(result.max_rate, 7000);
  EXPECT_GE(result.max_rate, 7000 * (1 - 0.02) * (1 - 0.02));
  // The edge's rate passed `repeats` times.
  unsigned passes_at_edge = 0;
  for (const auto& s : result.steps) {
    if (s.rate == result.max_rate && s.passed) ++passes_at_edge;
  }
  EXPECT_GE(passes_at_edge, 2u);
}

TEST(search_steps_test, a_latency_bound_fails_steps_whose_p99_is_over_it) {
  search_spec spec = spec_from(1000);
  spec.max_p99_ms = 5;
  const search_result result = run_search_with(spec, [](const load_spec& step) {
    run_result r = served(step, 1e9);
    // Every answer 1 ms per 1,000 q/s: p99 reaches 5 ms at 5,000 q/s.
    r.latency.record_n(static_cast<std::uint64_t>(step.traffic.rate * 1000), r.responses_received);
    return r;
  });
  EXPECT_EQ(result.end_reason, "converged");
  EXPECT_LE(result.max_rate, 5000 * 1.01);  // the histogram's buckets round a little
  EXPECT_GE(result.max_rate, 5000 * (1 - 0.02) * 0.99);
  for (const auto& s : result.steps) {
    if (!s.passed) {
      EXPECT_NE(s.verdict.find("p99"), std::string::npos) << s.verdict;
    }
  }
}

TEST(search_steps_test, a_stop_ends_the_search_and_keeps_its_steps) {
  search_spec spec = spec_from(1000);
  std::atomic<bool> stop{false};
  spec.stop = &stop;
  unsigned steps = 0;
  const search_result result = run_search_with(spec, [&](const load_spec& step) {
    run_result r = served(step, 1e9);
    // A stop during the third step: its load ends early, as run_load's does.
    if (++steps == 3) {
      stop = true;
      r.interrupted = true;
    }
    return r;
  });
  EXPECT_TRUE(result.interrupted);
  EXPECT_EQ(result.end_reason, "interrupted");
  ASSERT_EQ(result.steps.size(), 3u);
  EXPECT_EQ(result.steps[2].verdict, "interrupted");
  EXPECT_EQ(result.max_rate, 2000);  // the interrupted step decides nothing
  EXPECT_EQ(steps, 3u);              // and no step starts after the stop
}

TEST(search_steps_test, settings_that_cannot_search_are_refused_before_any_step) {
  search_spec spec = spec_from(1000);
  spec.repeats = 0;
  bool ran = false;
  EXPECT_THROW(run_search_with(spec,
                               [&](const load_spec& step) {
                                 ran = true;
                                 return served(step, 1);
                               }),
               setup_error);
  EXPECT_FALSE(ran);
}

}  // namespace
}  // namespace dnstransport::detail
