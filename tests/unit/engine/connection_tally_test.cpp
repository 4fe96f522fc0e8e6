#include "engine/connection_tally.hpp"

#include <gtest/gtest.h>

namespace dnstransport::detail {
namespace {

constexpr std::uint64_t ms = 1'000'000;

TEST(connection_tally_test, answers_a_whole_answer_time_apart_are_one_at_a_time) {
  // Four queries sent together at 1 ms, answered 30 ms apart: a server that takes the next
  // query only when it answered the one before.
  connection_tally t;
  const auto first = t.space(1 * ms, 31 * ms, true);
  EXPECT_FALSE(first.queued);  // nothing came before it
  for (std::uint64_t k = 2; k <= 4; ++k) {
    const auto s = t.space(1 * ms, (1 + 30 * k) * ms, true);
    EXPECT_TRUE(s.queued) << k;
    EXPECT_TRUE(s.one_at_a_time) << k;
  }
}

TEST(connection_tally_test, answers_close_behind_each_other_are_queued_but_not_one_at_a_time) {
  // Four queries sent together, answered within a millisecond of each other 30 ms later.
  connection_tally t;
  t.space(1 * ms, 31 * ms, true);
  for (std::uint64_t k = 1; k <= 3; ++k) {
    const auto s = t.space(1 * ms, 31 * ms + k * 200'000, true);
    EXPECT_TRUE(s.queued);
    EXPECT_FALSE(s.one_at_a_time);
  }
}

TEST(connection_tally_test, a_query_sent_after_the_previous_answer_is_not_queued) {
  connection_tally t;
  t.space(1 * ms, 31 * ms, true);
  const auto s = t.space(32 * ms, 62 * ms, true);
  EXPECT_FALSE(s.queued);
  EXPECT_FALSE(s.one_at_a_time);
}

TEST(connection_tally_test, queries_sent_one_by_one_and_answered_each_after_its_latency_are_not) {
  // Sent every 10 ms, each answered 30 ms later by a server that works on them together:
  // each waits behind earlier queries, answers come 10 ms apart. Sent 20 ms before the
  // previous answer (less than a whole answer time, 22.5 ms): not queued.
  connection_tally t;
  for (std::uint64_t k = 0; k < 10; ++k) {
    const auto s = t.space(k * 10 * ms, (k * 10 + 30) * ms, true);
    EXPECT_FALSE(s.queued) << k;
    EXPECT_FALSE(s.one_at_a_time) << k;
  }
}

TEST(connection_tally_test, an_answer_that_overtook_another_is_not_one_at_a_time) {
  connection_tally t;
  t.space(1 * ms, 31 * ms, true);
  const auto s = t.space(1 * ms, 61 * ms, false);
  EXPECT_TRUE(s.queued);
  EXPECT_FALSE(s.one_at_a_time);
}

TEST(connection_tally_test, the_answer_time_is_the_connections_shortest_latency) {
  // The first answer took 40 ms; a later one 10 ms (sent at 45 ms, nothing ahead): from then
  // on 8 ms (3/4 of 10 ms is 7.5) is a whole answer time.
  connection_tally t;
  t.space(0, 40 * ms, true);
  t.space(45 * ms, 55 * ms, true);
  const auto shallow = t.space(50 * ms, 63 * ms, true);  // sent 5 ms before the previous one
  EXPECT_FALSE(shallow.queued);
  const auto queued = t.space(55 * ms, 71 * ms, true);  // sent 8 ms before, 8 ms after it
  EXPECT_TRUE(queued.queued);
  EXPECT_TRUE(queued.one_at_a_time);
  const auto close_behind = t.space(50 * ms, 78 * ms, true);
  EXPECT_TRUE(close_behind.queued);
  EXPECT_FALSE(close_behind.one_at_a_time);  // 7 ms after the previous one
}

}  // namespace
}  // namespace dnstransport::detail
