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

}  // namespace
}  // namespace dnstransport::detail
