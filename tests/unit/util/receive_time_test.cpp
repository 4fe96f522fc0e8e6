#include "util/receive_time.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

namespace dnstransport::detail {
namespace {

constexpr std::uint64_t second = 1'000'000'000;

// A message whose control data carries `stamp` (CLOCK_REALTIME, ns) as SO_TIMESTAMPNS does.
struct stamped_message {
  receive_stamp_space space{};
  msghdr message{};

  explicit stamped_message(std::uint64_t stamp) {
    message.msg_control = space.data;
    message.msg_controllen = sizeof space.data;
    cmsghdr* c = CMSG_FIRSTHDR(&message);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_TIMESTAMPNS;
    c->cmsg_len = CMSG_LEN(sizeof(timespec));
    const timespec ts{static_cast<time_t>(stamp / second), static_cast<long>(stamp % second)};
    std::memcpy(CMSG_DATA(c), &ts, sizeof ts);
  }
};

// The monotonic clock at 1000 s when the realtime clock says 1.7e9 s.
receive_clock clock_at_1000_s() {
  receive_clock c;
  c.monotonic_now = 1000 * second;
  c.realtime_ahead = 1'700'000'000 * second - c.monotonic_now;
  return c;
}

TEST(receive_time_test, a_stamp_moves_onto_the_monotonic_clock) {
  const receive_clock c = clock_at_1000_s();
  // Received 25 us before the batch was read.
  const stamped_message m(1'700'000'000 * second - 25'000);
  EXPECT_EQ(c.received(m.message), 1000 * second - 25'000);
}

TEST(receive_time_test, no_stamp_or_one_from_the_future_is_the_read_time) {
  const receive_clock c = clock_at_1000_s();
  msghdr none{};
  EXPECT_EQ(c.received(none), c.monotonic_now);
  const stamped_message future(1'700'000'000 * second + 1);
  EXPECT_EQ(c.received(future.message), c.monotonic_now);
  const stamped_message before_the_epoch(0);
  EXPECT_EQ(c.received(before_the_epoch.message), c.monotonic_now);
}

// Read on this machine: the monotonic reading is the latest of the three, and the two
// clocks' difference is what clock_gettime reports.
TEST(receive_time_test, reading_the_clocks_gives_their_difference) {
  timespec before;
  clock_gettime(CLOCK_MONOTONIC, &before);
  const receive_clock c = receive_clock::read();
  timespec real;
  clock_gettime(CLOCK_REALTIME, &real);
  timespec after;
  clock_gettime(CLOCK_MONOTONIC, &after);
  const auto ns = [](const timespec& ts) {
    return static_cast<std::uint64_t>(ts.tv_sec) * second + static_cast<std::uint64_t>(ts.tv_nsec);
  };
  EXPECT_GE(c.monotonic_now, ns(before));
  EXPECT_LE(c.monotonic_now, ns(after));
  // Close to the difference read here (a preempted test only widens the gap).
  const std::uint64_t ahead = ns(real) - ns(after);
  EXPECT_NEAR(static_cast<double>(c.realtime_ahead), static_cast<double>(ahead), 1e8);
}

}  // namespace
}  // namespace dnstransport::detail
