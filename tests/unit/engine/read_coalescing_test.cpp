#include "engine/read_coalescing.hpp"

#include <gtest/gtest.h>

namespace dnstransport::detail {
namespace {

run_plan plan_with(std::uint64_t coalesce_ns) {
  run_plan plan;
  plan.coalesce_ns = coalesce_ns;
  return plan;
}

constexpr unsigned many = run_plan::coalesce_batch;

// The delay is a twentieth of the recent latency, capped by the plan's.
TEST(read_coalescing_test, delays_by_a_twentieth_of_the_latency_up_to_the_plans) {
  const run_plan plan = plan_with(1'000'000);
  read_coalescing c;
  c.answered(2'000'000);  // 2 ms: 100 us
  EXPECT_EQ(c.delay_ns(plan, many), 100'000u);
  c.answered(40'000'000);  // a higher latency raises the estimate by 1/16 of the difference
  EXPECT_EQ(c.recent_latency_ns(), 2'000'000u + 38'000'000u / 16);
  EXPECT_EQ(c.delay_ns(plan, many), (2'000'000u + 38'000'000u / 16) / 20);
  for (int i = 0; i < 200; ++i) c.answered(40'000'000);
  EXPECT_EQ(c.delay_ns(plan, many), 1'000'000u);  // 2 ms would be a twentieth: the cap
  c.answered(400'000);                            // a lower latency is followed at once
  EXPECT_EQ(c.recent_latency_ns(), 400'000u);
  EXPECT_EQ(c.delay_ns(plan, many), 20'000u);
}

// No delay where it could move a figure or save nothing.
TEST(read_coalescing_test, waits_for_readiness_on_light_loads_fast_answers_and_when_off) {
  read_coalescing c;
  const run_plan on = plan_with(1'000'000);
  EXPECT_EQ(c.delay_ns(on, many), 0u);  // no answer yet
  c.answered(2'000'000);
  EXPECT_EQ(c.delay_ns(on, many - 1), 0u);  // too few in flight to fill a read
  EXPECT_EQ(c.delay_ns(on, many), 0u);      // that wake-up's answer was counted: none since
  c.answered(2'000'000);
  EXPECT_EQ(c.delay_ns(plan_with(0), many), 0u);  // off
  c.answered(199'999);                            // a twentieth is under 10 us: not worth a timer
  EXPECT_EQ(c.delay_ns(on, 1000), 0u);
  read_coalescing at_the_edge;
  at_the_edge.answered(200'000);
  EXPECT_EQ(at_the_edge.delay_ns(on, 1000), read_coalescing::min_delay_ns);
}

}  // namespace
}  // namespace dnstransport::detail
