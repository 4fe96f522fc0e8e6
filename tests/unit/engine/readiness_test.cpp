#include "engine/readiness.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <vector>

#include <gtest/gtest.h>

#include "util/clock.hpp"

namespace dnstransport::detail {
namespace {

// Whether the set's descriptor is readable now: what would wake the worker's epoll_wait.
bool wakes(readiness_set& set) {
  pollfd p{set.native_handle(), POLLIN, 0};
  return ::poll(&p, 1, 0) == 1;
}

struct wait_end {
  bool readable = false;
  std::uint64_t token = 0;
  bool ok = false;
};

struct readiness_test : ::testing::Test {
  boost::asio::io_context io;
  syscall_counter calls;
  readiness_set set{io, calls};
  std::vector<wait_end> ends;
  std::function<void(bool, std::uint64_t, bool)> also;  // run inside a callback
  watched_socket socket{set, [this](bool readable, std::uint64_t token, bool ok) {
                          ends.push_back({readable, token, ok});
                          if (also) also(readable, token, ok);
                        }};
  int peer = -1;

  // A connected stream socket pair; the watched socket takes one end.
  void open_pair() {
    std::array<int, 2> fds{};
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds.data()), 0);
    ASSERT_EQ(socket.assign(fds[0]), 0);
    peer = fds[1];
  }
  void send_from_peer() { ASSERT_EQ(::write(peer, "x", 1), 1); }
  void run() {
    io.restart();
    io.run_for(std::chrono::milliseconds(20));
  }
  ~readiness_test() override {
    if (peer >= 0) ::close(peer);
  }
};

TEST_F(readiness_test, data_that_no_one_waits_for_wakes_no_one) {
  open_pair();
  set.start();
  send_from_peer();
  EXPECT_FALSE(wakes(set));
  run();
  EXPECT_TRUE(ends.empty());
}

TEST_F(readiness_test, a_wait_on_a_ready_socket_ends_at_once_and_only_once) {
  open_pair();
  set.start();
  send_from_peer();
  socket.async_wait(true, 7);
  EXPECT_TRUE(wakes(set));
  run();
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_TRUE(ends[0].readable);
  EXPECT_EQ(ends[0].token, 7u);
  EXPECT_TRUE(ends[0].ok);
  // The wait is over: more data, still unread, wakes no one until the next wait.
  send_from_peer();
  EXPECT_FALSE(wakes(set));
  run();
  EXPECT_EQ(ends.size(), 1u);
  socket.async_wait(true, 8);
  run();
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_EQ(ends[1].token, 8u);
}

TEST_F(readiness_test, a_wait_ends_when_data_comes_later) {
  open_pair();
  set.start();
  socket.async_wait(true, 1);
  run();
  EXPECT_TRUE(ends.empty());
  send_from_peer();
  run();
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_TRUE(ends[0].ok);
}

// A dup() of a descriptor that stays open (as an AF_XDP socket's, libxdp's, does): closing its
// watch takes it out of the set, so a later dup under the same number is watched again, and
// its wait ends when data comes (the set would otherwise still hold the file under that
// number and refuse it).
TEST_F(readiness_test, a_duplicate_is_taken_out_when_closed_and_watched_again) {
  std::array<int, 2> fds{};
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds.data()), 0);
  peer = fds[1];
  set.start();
  const int first = dup(fds[0]);
  {
    watched_socket earlier(set, [](bool, std::uint64_t, bool) {});
    ASSERT_EQ(earlier.assign(first, true), 0);
  }
  const int again = dup(fds[0]);
  EXPECT_EQ(again, first);  // the lowest free number: the same
  ASSERT_EQ(socket.assign(again, true), 0);
  socket.async_wait(true, 3);
  send_from_peer();
  run();
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].token, 3u);
  EXPECT_TRUE(ends[0].ok);
  ::close(fds[0]);
}

TEST_F(readiness_test, a_write_wait_leaves_a_read_wait_waiting) {
  open_pair();
  set.start();
  socket.async_wait(true, 1);
  socket.async_wait(false, 2);  // a socket pair has room: writable now
  run();
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_FALSE(ends[0].readable);
  EXPECT_EQ(ends[0].token, 2u);
  // The read wait was re-armed after the one-shot event.
  send_from_peer();
  run();
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_TRUE(ends[1].readable);
  EXPECT_EQ(ends[1].token, 1u);
}

TEST_F(readiness_test, close_and_cancel_end_the_waits_later_as_cancelled) {
  open_pair();
  set.start();
  socket.async_wait(true, 3);
  socket.cancel();
  EXPECT_TRUE(ends.empty());  // not from inside the call
  run();
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_FALSE(ends[0].ok);
  EXPECT_EQ(ends[0].token, 3u);
  socket.async_wait(true, 4);
  socket.async_wait(false, 5);
  socket.close();
  EXPECT_FALSE(socket.is_open());
  run();
  ASSERT_EQ(ends.size(), 3u);
  EXPECT_FALSE(ends[1].ok);
  EXPECT_FALSE(ends[2].ok);
  // A wait on a closed socket ends at once, cancelled.
  socket.async_wait(true, 6);
  run();
  ASSERT_EQ(ends.size(), 4u);
  EXPECT_FALSE(ends[3].ok);
  EXPECT_EQ(ends[3].token, 6u);
}

// An event that found the socket readable and writable: its read callback closes the
// socket and opens another (a client replacing its connection) that waits to write. The
// event's write half is not that socket's: the new wait ends only when the new descriptor
// is writable.
TEST_F(readiness_test, an_event_does_not_end_the_waits_of_the_socket_that_replaced_its_own) {
  open_pair();
  std::array<int, 2> pipe_fds{};
  ASSERT_EQ(pipe2(pipe_fds.data(), O_NONBLOCK), 0);
  // A full pipe's write end is not writable.
  std::array<char, 4096> block{};
  while (::write(pipe_fds[1], block.data(), block.size()) > 0) {
  }
  ASSERT_EQ(errno, EAGAIN);
  also = [&](bool readable, std::uint64_t, bool ok) {
    if (!readable || !ok) return;
    also = nullptr;
    socket.close();
    ASSERT_EQ(socket.assign(pipe_fds[1]), 0);
    socket.async_wait(false, 99);
  };
  send_from_peer();
  socket.async_wait(true, 1);
  socket.async_wait(false, 2);
  set.start();
  run();
  // The read wait ended; the old socket's write wait was cancelled by the close.
  ASSERT_GE(ends.size(), 1u);
  EXPECT_TRUE(ends[0].readable);
  EXPECT_TRUE(ends[0].ok);
  for (const wait_end& e : ends) EXPECT_FALSE(e.token == 99) << "ended without room to write";
  // Room in the pipe: the new wait ends.
  std::array<char, 65536> sink{};
  while (::read(pipe_fds[0], sink.data(), sink.size()) > 0) {
  }
  run();
  ASSERT_FALSE(ends.empty());
  EXPECT_EQ(ends.back().token, 99u);
  EXPECT_TRUE(ends.back().ok);
  ::close(pipe_fds[0]);
}

// The set's timer: an expiry is an event of the set (the worker wakes for it) and calls back
// once, never before its time; an arm replaces the time of the one before, and an arm after
// an expiry fires again although the timerfd's count was never read (an arm resets it, so the
// edge-triggered set sees a new event).
TEST_F(readiness_test, the_timer_fires_once_per_arm_never_early_and_the_last_arm_counts) {
  std::vector<std::uint64_t> fired;
  set.on_timer([&fired] { fired.push_back(monotonic_ns()); });
  set.start();
  const auto run_until_fired = [this, &fired](std::size_t n) {
    io.restart();
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (fired.size() < n && std::chrono::steady_clock::now() < give_up) {
      io.run_one_for(std::chrono::milliseconds(100));
    }
  };
  // The second arm replaces the first: the timer fires once, at the later time.
  set.arm_timer(monotonic_ns() + 2'000'000);
  std::uint64_t at = monotonic_ns() + 30'000'000;
  set.arm_timer(at);
  run_until_fired(1);
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_GE(fired[0], at);
  EXPECT_FALSE(wakes(set));  // nothing more is pending
  for (int round = 0; round < 3; ++round) {
    at = monotonic_ns() + 1'000'000;
    set.arm_timer(at);
    run_until_fired(fired.size() + 1);
    ASSERT_EQ(fired.size(), 2u + static_cast<unsigned>(round));
    EXPECT_GE(fired.back(), at);
  }
  EXPECT_EQ(set.timer_arms(), 5u);
  // A time already past fires at the next wait.
  set.arm_timer(1);
  run_until_fired(fired.size() + 1);
  EXPECT_EQ(fired.size(), 5u);
  EXPECT_EQ(set.timer_arms(), 6u);
  EXPECT_FALSE(wakes(set));
}

}  // namespace
}  // namespace dnstransport::detail
