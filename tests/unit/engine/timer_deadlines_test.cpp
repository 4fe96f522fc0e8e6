// The worker's deadlines and its one timer (engine/timer_deadlines.hpp), on a clock of the
// test's own: how often the timer is armed for a stream of arrivals and read delays.
#include "engine/timer_deadlines.hpp"

#include <gtest/gtest.h>

#include <cstdint>

namespace dnstransport::detail {
namespace {

using step = timer_deadlines::step;

// The first deadline arms the timer; a later one leaves it; an earlier one brings it forward.
TEST(timer_deadlines_test, the_timer_is_armed_only_for_an_earlier_deadline) {
  timer_deadlines d;
  EXPECT_EQ(d.plan(0).what, step::keep);  // nothing to wait for
  d.set(timer_deadlines::arrivals, 1000);
  const auto first = d.plan(0);
  EXPECT_EQ(first.what, step::arm);
  EXPECT_EQ(first.at, 1000u);
  EXPECT_EQ(d.plan(10).what, step::keep);  // already armed for it
  d.set(timer_deadlines::delays, 5000);
  EXPECT_EQ(d.plan(20).what, step::keep);  // the arrival's wake-up comes first
  d.set(timer_deadlines::delays, 400);
  const auto sooner = d.plan(30);
  EXPECT_EQ(sooner.what, step::arm);
  EXPECT_EQ(sooner.at, 400u);
  EXPECT_EQ(d.armed_for(), 400u);
  // It expired: disarmed, so the next deadline arms it again.
  d.woke(400);
  EXPECT_EQ(d.armed_for(), timer_deadlines::none);
  d.set(timer_deadlines::delays, timer_deadlines::none);
  const auto next = d.plan(401);
  EXPECT_EQ(next.what, step::arm);
  EXPECT_EQ(next.at, 1000u);
}

// A deadline that is due already runs at once, queued once until that run begins.
TEST(timer_deadlines_test, a_due_deadline_runs_at_once_and_is_queued_once) {
  timer_deadlines d;
  d.set(timer_deadlines::arrivals, 100);
  EXPECT_EQ(d.plan(100).what, step::run_now);
  EXPECT_EQ(d.plan(150).what, step::keep);  // the run is queued
  d.set(timer_deadlines::delays, 120);
  EXPECT_EQ(d.plan(160).what, step::keep);  // that run serves it too
  d.woke(170);
  d.set(timer_deadlines::arrivals, 300);
  d.set(timer_deadlines::delays, timer_deadlines::none);
  const auto a = d.plan(170);
  EXPECT_EQ(a.what, step::arm);
  EXPECT_EQ(a.at, 300u);
}

// A worker's loop, simulated: arrivals every 20 us and a read delay of 50 us asked for after
// each wake-up that read answers. Each wake-up arms the timer at most once (an Asio timer
// costs two calls per expiry), a wake-up never comes before a deadline is due, and every
// deadline is served at its time.
TEST(timer_deadlines_test, one_arm_per_wake_up_for_arrivals_and_read_delays) {
  timer_deadlines d;
  std::uint64_t arms = 0, wakes = 0, arrivals_served = 0, delays_served = 0;
  std::uint64_t timer_at = timer_deadlines::none;
  std::uint64_t next_arrival = 1'000;
  d.set(timer_deadlines::arrivals, next_arrival);
  auto plan = [&](std::uint64_t now) {
    const auto a = d.plan(now);
    ASSERT_NE(a.what, step::run_now);  // the clock below wakes exactly on time
    if (a.what == step::arm) {
      ++arms;
      timer_at = a.at;
    }
  };
  plan(0);
  while (next_arrival < 1'000'000) {
    const std::uint64_t now = timer_at;  // the timerfd fires at its time
    ASSERT_NE(now, timer_deadlines::none);
    ++wakes;
    timer_at = timer_deadlines::none;
    d.woke(now);
    ASSERT_LE(d.earliest(), now);  // woken for something due
    const bool arrival = d.due(timer_deadlines::arrivals) <= now;
    if (arrival) {
      ++arrivals_served;
      next_arrival += 20'000;
      d.set(timer_deadlines::arrivals, next_arrival);
    }
    if (d.due(timer_deadlines::delays) <= now) {
      ++delays_served;
      d.set(timer_deadlines::delays, timer_deadlines::none);
    }
    // Every other arrival's wake-up reads answers and asks for a delay (when none runs): it
    // ends 2.5 arrivals later, never on one.
    if (arrival && arrivals_served % 2 == 0 &&
        d.due(timer_deadlines::delays) == timer_deadlines::none) {
      d.set(timer_deadlines::delays, now + 50'000);
    }
    plan(now);
  }
  EXPECT_EQ(arrivals_served, 50u);
  EXPECT_GT(delays_served, 10u);
  EXPECT_EQ(wakes, arrivals_served + delays_served);  // delays never fall on an arrival here
  EXPECT_EQ(arms, wakes + 1);  // the first arm, then one per wake-up (not two)
}

}  // namespace
}  // namespace dnstransport::detail
