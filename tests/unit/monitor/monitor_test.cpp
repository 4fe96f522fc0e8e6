// Readings of processes from /proc: this process's own figures, a process that is gone, the
// TCP connections on a port, and a monitor's window (CPU burnt inside it, a process that
// exits during it).
#include <dnstransport/monitor.hpp>

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "monitor/server_monitor.hpp"

namespace dnstransport {
namespace {

using namespace std::chrono_literals;

// A process that has ended and been reaped: its pid names nothing (until reused).
int reaped_child() {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  return child;
}

TEST(monitor_test, this_process_has_memory_descriptors_and_threads) {
  std::atomic<bool> done{false};
  std::thread second([&done] {
    while (!done.load()) std::this_thread::sleep_for(1ms);
  });
  const auto sample = sample_process(getpid());
  done = true;
  second.join();
  ASSERT_TRUE(sample.has_value());
  EXPECT_EQ(sample->pid, getpid());
  EXPECT_GT(sample->rss_bytes, 1u << 20);
  EXPECT_GE(sample->fds, 3u);  // stdin, stdout, stderr at least
  EXPECT_GE(sample->threads, 2u);
  EXPECT_GE(sample->cpu_user_seconds + sample->cpu_system_seconds, 0.0);
}

TEST(monitor_test, a_process_that_is_gone_gives_nothing) {
  EXPECT_FALSE(sample_process(reaped_child()).has_value());
  EXPECT_FALSE(sample_process(0).has_value());
  EXPECT_FALSE(sample_process(-5).has_value());
}

TEST(monitor_test, counts_established_connections_on_the_listening_port_only) {
  namespace ip = boost::asio::ip;
  boost::asio::io_context io;
  ip::tcp::acceptor acceptor(io, ip::tcp::endpoint(ip::make_address("127.0.0.1"), 0));
  const std::uint16_t port = acceptor.local_endpoint().port();
  EXPECT_EQ(count_tcp_connections(getpid(), port), 0u);  // a listener is not a connection
  ip::tcp::socket a(io), b(io), served_a(io), served_b(io);
  a.connect(acceptor.local_endpoint());
  acceptor.accept(served_a);
  b.connect(acceptor.local_endpoint());
  acceptor.accept(served_b);
  // The accepted sockets have the port as local port; the clients' sockets have their own.
  EXPECT_EQ(count_tcp_connections(getpid(), port), 2u);
  EXPECT_EQ(count_tcp_connections(getpid(), a.local_endpoint().port()), 1u);
}

TEST(monitor_test, the_window_holds_the_cpu_burnt_inside_it) {
  detail::server_monitor monitor({getpid()}, {}, 0);
  ASSERT_TRUE(monitor.active());
  monitor.sample();
  // Burn 0.3 s of this process's CPU, as the kernel counts it independently of /proc/PID/stat
  // (however busy the machine is, this takes 0.3 s of CPU, not of wall time).
  const auto process_cpu = [] {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
  };
  const double start = process_cpu();
  volatile std::uint64_t spin = 0;
  while (process_cpu() - start < 0.3) spin = spin + 1;
  monitor.sample();
  const process_usage usage = monitor.finish(3000, 0.3);
  ASSERT_TRUE(usage.monitored());
  EXPECT_EQ(usage.pids, std::vector<int>{getpid()});
  EXPECT_EQ(usage.samples, 2u);
  // /proc counts in clock ticks (10 ms): 0.3 s reads as 0.28 to 0.32 s, plus what the
  // monitor's own readings cost.
  EXPECT_GE(usage.cpu_seconds(), 0.27);
  EXPECT_LE(usage.cpu_seconds(), 0.4);
  EXPECT_DOUBLE_EQ(usage.cpu_per_1k_answers, usage.cpu_seconds() * 1000 / 3000);
  EXPECT_DOUBLE_EQ(usage.cpu_share, usage.cpu_seconds() / 0.3);
  EXPECT_TRUE(usage.exited.empty());
}

TEST(monitor_test, a_process_exiting_in_the_window_is_named_and_its_readings_kept) {
  const pid_t child = fork();
  if (child == 0) {
    std::this_thread::sleep_for(200ms);
    _exit(0);
  }
  detail::server_monitor monitor({child, getpid()}, {}, 0);
  monitor.sample();
  waitpid(child, nullptr, 0);
  monitor.sample();
  const process_usage usage = monitor.finish(0, 0);
  EXPECT_EQ(usage.exited, std::vector<int>{child});
  EXPECT_EQ(usage.pids, (std::vector<int>{child, getpid()}));
  EXPECT_EQ(usage.cpu_per_1k_answers, 0.0);  // no answers: no cost per answer
  EXPECT_GT(usage.rss_max_bytes, 0u);
}

TEST(monitor_test, no_pids_is_no_monitoring) {
  detail::server_monitor monitor({}, {}, 53);
  EXPECT_FALSE(monitor.active());
  monitor.sample();
  EXPECT_FALSE(monitor.finish(10, 1).monitored());
}

}  // namespace
}  // namespace dnstransport
