#include "engine/slot_table.hpp"

#include <gtest/gtest.h>

#include <set>

namespace dnstransport::detail {
namespace {

TEST(slot_table_test, ids_find_their_slot_and_change_on_reuse) {
  slot_table table(100, 3);
  auto& a = table.acquire(10, 0, true);
  auto& b = table.acquire(11, 1, true);
  EXPECT_NE(a.id, b.id);
  EXPECT_EQ(table.find(a.id), &a);
  EXPECT_EQ(table.find(b.id), &b);
  const std::uint16_t old_id = a.id;
  table.release(a, slot_table::past::answered);
  EXPECT_EQ(table.find(old_id), nullptr);
  EXPECT_EQ(table.history(old_id), slot_table::past::answered);
  auto& again = table.acquire(12, 2, true);  // the same slot comes back (LIFO free list)
  EXPECT_EQ(&again, &a);
  EXPECT_NE(again.id, old_id);
  EXPECT_EQ(table.find(old_id), nullptr);
}

TEST(slot_table_test, full_table_holds_distinct_ids) {
  for (std::uint32_t capacity : {1u, 2u, 3u, 500u, 4096u, 65536u}) {
    slot_table table(capacity, 7);
    std::set<std::uint16_t> ids;
    for (std::uint32_t i = 0; i < capacity; ++i) ids.insert(table.acquire(i, i, true).id);
    EXPECT_EQ(ids.size(), capacity) << capacity;
    EXPECT_EQ(table.free_count(), 0u);
    for (auto id : ids) ASSERT_NE(table.find(id), nullptr) << capacity;
  }
}

TEST(slot_table_test, oldest_follows_send_order_across_releases) {
  slot_table table(8, 0);
  auto& s0 = table.acquire(100, 0, true);
  auto& s1 = table.acquire(200, 1, true);
  auto& s2 = table.acquire(300, 2, true);
  EXPECT_EQ(table.oldest(), &s0);
  table.release(s1, slot_table::past::answered);  // answered out of order
  EXPECT_EQ(table.oldest(), &s0);
  table.release(s0, slot_table::past::expired);
  EXPECT_EQ(table.oldest(), &s2);
  EXPECT_EQ(table.history(s0.id), slot_table::past::expired);
  table.release(s2, slot_table::past::answered);
  EXPECT_EQ(table.oldest(), nullptr);
  EXPECT_TRUE(table.empty());
  EXPECT_EQ(table.in_flight(), 0u);
}

TEST(slot_table_test, unknown_ids_have_no_history) {
  slot_table table(16, 0);
  auto& s = table.acquire(1, 0, true);
  EXPECT_EQ(table.find(static_cast<std::uint16_t>(s.id ^ 0x8000)), nullptr);
  EXPECT_EQ(table.history(static_cast<std::uint16_t>(s.id ^ 0x8000)), slot_table::past::nothing);
}

}  // namespace
}  // namespace dnstransport::detail
