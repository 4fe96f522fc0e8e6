#include "engine/in_flight_questions.hpp"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <vector>

namespace dnstransport::detail {
namespace {

TEST(in_flight_questions_test, holds_what_was_inserted_until_erased) {
  // A small set of questions (bitmap) and a large one (table).
  for (const std::uint32_t questions : {100u, in_flight_questions::bitmap_limit + 1}) {
    in_flight_questions set(4, questions);
    EXPECT_FALSE(set.contains(7));
    EXPECT_TRUE(set.insert(7));
    EXPECT_FALSE(set.insert(7));
    EXPECT_TRUE(set.insert(0));
    EXPECT_TRUE(set.contains(7));
    EXPECT_TRUE(set.contains(0));
    EXPECT_FALSE(set.contains(8));
    set.erase(7);
    EXPECT_FALSE(set.contains(7));
    EXPECT_TRUE(set.contains(0));
    set.erase(99);  // not there: nothing happens
    EXPECT_TRUE(set.contains(0));
  }
}

// Full at its capacity with colliding keys, then random inserts and erases: it answers as
// a std::set does (backward-shift deletion must keep every probe chain intact).
TEST(in_flight_questions_test, agrees_with_a_std_set_under_churn) {
  for (const std::uint32_t capacity : {1u, 3u, 64u, 1000u}) {
    // Numbered past the bitmap limit, so the table is what is tested.
    in_flight_questions set(capacity, in_flight_questions::bitmap_limit + 1);
    std::set<std::uint32_t> model;
    std::mt19937 random(capacity);
    // Keys from a small range collide often in the table.
    std::uniform_int_distribution<std::uint32_t> key(0, capacity * 3);
    for (int step = 0; step < 20000; ++step) {
      const std::uint32_t k = key(random);
      if (model.count(k) != 0) {
        set.erase(k);
        model.erase(k);
      } else if (model.size() < capacity) {
        ASSERT_TRUE(set.insert(k));
        model.insert(k);
      }
      if (step % 97 == 0) {
        for (std::uint32_t probe = 0; probe <= capacity * 3; ++probe) {
          ASSERT_EQ(set.contains(probe), model.count(probe) != 0)
              << "capacity " << capacity << " step " << step << " key " << probe;
        }
      }
    }
  }
}

TEST(in_flight_questions_test, one_each_has_room_for_a_question_not_in_flight) {
  in_flight_questions set(4, 10);
  EXPECT_EQ(set.how(), in_flight_questions::mode::one_each);
  EXPECT_TRUE(set.has_room(3));
  EXPECT_EQ(set.take(3, 5), 0u);  // no letter case
  EXPECT_FALSE(set.has_room(3));
  EXPECT_TRUE(set.has_room(4));
  set.release(3, 0);
  EXPECT_TRUE(set.has_room(3));
}

// Letter case: each query of a question in flight gets a pattern no other of that question
// has, the query's own case first when the question has nothing in flight, and a question has
// room for as many as it has patterns.
TEST(in_flight_questions_test, letter_case_gives_each_query_of_a_question_its_own_pattern) {
  const std::vector<std::uint32_t> patterns{4, 1, 65536};
  in_flight_questions set(100, in_flight_questions::mode::letter_case, patterns);
  EXPECT_EQ(set.how(), in_flight_questions::mode::letter_case);
  std::set<std::uint32_t> taken;
  EXPECT_EQ(set.take(0, 2), 2u);  // its own case
  taken.insert(2);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(set.has_room(0));
    EXPECT_TRUE(taken.insert(set.take(0, 2)).second) << "a pattern given twice";
  }
  EXPECT_EQ(taken, (std::set<std::uint32_t>{0, 1, 2, 3}));
  EXPECT_FALSE(set.has_room(0));  // four patterns, four in flight
  // The other questions are not affected: one pattern for a name without letters.
  EXPECT_TRUE(set.has_room(1));
  EXPECT_EQ(set.take(1, 0), 0u);
  EXPECT_FALSE(set.has_room(1));
  set.release(0, 1);
  ASSERT_TRUE(set.has_room(0));
  EXPECT_EQ(set.take(0, 2), 1u);  // the only one free
  // Many of a question with many patterns, all different, then all released.
  std::set<std::uint32_t> many;
  for (int i = 0; i < 90; ++i) {
    ASSERT_TRUE(set.has_room(2));
    EXPECT_TRUE(many.insert(set.take(2, 7)).second);
  }
  for (const std::uint32_t pattern : many) set.release(2, pattern);
  EXPECT_EQ(set.take(2, 7), 7u);  // nothing in flight again: its own case
}

TEST(in_flight_questions_test, unlimited_keeps_nothing) {
  in_flight_questions set(2, in_flight_questions::mode::unlimited, {});
  for (int i = 0; i < 10; ++i) {
    EXPECT_TRUE(set.has_room(0));
    EXPECT_EQ(set.take(0, 3), 0u);
  }
}

}  // namespace
}  // namespace dnstransport::detail
