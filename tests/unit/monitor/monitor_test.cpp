// Readings of processes from /proc: this process's own figures, a process that is gone, the
// TCP connections on a port, and a monitor's window (CPU burnt inside it, a process that
// exits during it); `monitor` lines written and read back, and a monitor command's readings
// (the CPU rate between them, a process it says exited, a command that fails).
#include <dnstransport/monitor.hpp>

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <fstream>
#include <string>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <dnstransport/error.hpp>

#include "monitor/server_monitor.hpp"
#include "scratch_dir.hpp"
#include "util/clock.hpp"

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

// This process's CPU time as the kernel counts it, independently of /proc/PID/stat.
double process_cpu() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

// Burns this many seconds of this process's CPU (however busy the machine is: CPU time, not
// wall time).
void burn_cpu(double seconds) {
  const double start = process_cpu();
  volatile std::uint64_t spin = 0;
  while (process_cpu() - start < seconds) spin = spin + 1;
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

// /proc/PID/stat counts in 10 ms clock ticks; a reading is the process's CPU clock, to the
// nanosecond, between the clock read just before and just after it.
TEST(monitor_test, a_processs_cpu_is_its_cpu_clock_not_clock_ticks) {
  burn_cpu(0.05);
  const double before = process_cpu();
  const auto sample = sample_process(getpid());
  const double after = process_cpu();
  ASSERT_TRUE(sample.has_value());
  const double cpu = sample->cpu_user_seconds + sample->cpu_system_seconds;
  EXPECT_GE(cpu, before - 1e-9);
  EXPECT_LE(cpu, after + 1e-9);
  EXPECT_GE(sample->cpu_user_seconds, 0.0);
  EXPECT_GE(sample->cpu_system_seconds, 0.0);
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
  detail::server_monitor monitor({getpid()}, {}, {}, 0);
  ASSERT_TRUE(monitor.active());
  monitor.sample();
  burn_cpu(0.3);
  monitor.sample();
  const process_usage usage = monitor.finish(3000, 0.3);
  ASSERT_TRUE(usage.monitored());
  EXPECT_EQ(usage.pids, std::vector<int>{getpid()});
  EXPECT_EQ(usage.samples, 2u);
  // The process's CPU clock, read by each sample: 0.3 s, plus what the monitor's own readings
  // cost.
  EXPECT_GE(usage.cpu_seconds(), 0.3);
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
  detail::server_monitor monitor({child, getpid()}, {}, {}, 0);
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
  detail::server_monitor monitor({}, {}, {}, 53);
  EXPECT_FALSE(monitor.active());
  monitor.sample();
  EXPECT_FALSE(monitor.finish(10, 1).monitored());
}

TEST(monitor_line_test, a_line_reads_back_as_written) {
  monitor_line line;
  line.time = 1795460181.381;
  line.sample = {321, 1.25, 0.5, 14422016, 26, 2};
  line.tcp_connections = 16;
  const std::string text = format_monitor_line(line);
  EXPECT_EQ(text,
            "{\"time\": 1795460181.381, \"pid\": 321, \"cpu_user_seconds\": 1.25, "
            "\"cpu_system_seconds\": 0.50, \"rss_bytes\": 14422016, \"fds\": 26, \"threads\": 2, "
            "\"tcp_connections\": 16}");
  std::string error;
  const auto back = parse_monitor_line(text, error);
  ASSERT_TRUE(back.has_value()) << error;
  EXPECT_NEAR(back->time, line.time, 1e-6);
  EXPECT_EQ(back->sample.pid, 321);
  EXPECT_DOUBLE_EQ(back->sample.cpu_user_seconds, 1.25);
  EXPECT_DOUBLE_EQ(back->sample.cpu_system_seconds, 0.5);
  EXPECT_EQ(back->sample.rss_bytes, 14422016u);
  EXPECT_EQ(back->sample.fds, 26u);
  EXPECT_EQ(back->sample.threads, 2u);
  EXPECT_EQ(back->tcp_connections, 16u);
  EXPECT_FALSE(back->exited);

  monitor_line gone;
  gone.time = 5;
  gone.sample.pid = 9;
  gone.exited = true;
  EXPECT_EQ(format_monitor_line(gone), "{\"time\": 5.000, \"pid\": 9, \"exited\": true}");
  const auto gone_back = parse_monitor_line(format_monitor_line(gone), error);
  ASSERT_TRUE(gone_back.has_value()) << error;
  EXPECT_TRUE(gone_back->exited);
  EXPECT_EQ(gone_back->sample.pid, 9);
}

TEST(monitor_line_test, lines_that_are_not_readings_say_why) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"hello", "not a JSON object"},
      {"[1, 2]", "not a JSON object"},
      {R"({"pid": 3, "cpu_user_seconds": 1})", "no \"time\""},
      {R"({"time": 1, "pid": -3})", "no \"time\" or no \"pid\""},
      {R"({"time": 1, "pid": 2.5})", "no \"time\" or no \"pid\""},
      {R"({"time": 1, "pid": 3, "cpu_user_seconds": 1})", "missing one of"},
      {R"({"time": 1, "pid": 3, "cpu_user_seconds": 1, "cpu_system_seconds": -1, "rss_bytes": 1,)"
       R"( "fds": 1, "threads": 1})",
       "missing one of"},
      {R"({"time": 1, "pid": 3, "cpu_user_seconds": 1, "cpu_system_seconds": 1, "rss_bytes": 1,)"
       R"( "fds": 1, "threads": 1, "tcp_connections": "many"})",
       "tcp_connections"},
  };
  for (const auto& [text, why] : cases) {
    std::string error;
    EXPECT_FALSE(parse_monitor_line(text, error).has_value()) << text;
    EXPECT_NE(error.find(why), std::string::npos) << text << ": " << error;
  }
}

// A stand-in for `ssh host dnstransport monitor`: process 42 on "another machine", read every
// 50 ms of its clock, burning 0.4 s of user and 0.1 s of system CPU per second of it.
const std::string half_a_cpu_command =
    R"(awk 'BEGIN { for (i = 0; i < 400; i++) { printf "{\"time\": %.3f, \"pid\": 42, )"
    R"(\"cpu_user_seconds\": %.3f, \"cpu_system_seconds\": %.3f, \"rss_bytes\": 1000, )"
    R"(\"fds\": 5, \"threads\": 2, \"tcp_connections\": 7}\n", 100 + i * 0.05, i * 0.02, )"
    R"(i * 0.005; fflush(); system("sleep 0.05") } }')";

TEST(monitor_command_test, the_cpu_is_the_rate_between_readings_over_the_window) {
  detail::server_monitor monitor({}, {}, half_a_cpu_command, 0);
  ASSERT_TRUE(monitor.active());
  monitor.sample();
  // Until readings in the window add up to 0.1 s of CPU (five of them, 0.25 s of the
  // command's clock): polled, so a stalled machine takes longer and measures the same; 30 s
  // only a monitor that never takes them in reaches.
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (monitor.cpu_seconds_so_far() < 0.1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
    monitor.sample();
  }
  ASSERT_GE(monitor.cpu_seconds_so_far(), 0.1);
  monitor.close_window(detail::monotonic_ns());
  monitor.sample();  // readings received after the window's end are not used
  const process_usage usage = monitor.finish(2000, 0.6);
  ASSERT_TRUE(usage.monitored());
  EXPECT_TRUE(usage.cpu_measured);
  EXPECT_EQ(usage.command, half_a_cpu_command);
  EXPECT_EQ(usage.command_pids, std::vector<int>{42});
  EXPECT_TRUE(usage.pids.empty());
  // Half a CPU over a 0.6 s window, whatever the readings' own times were.
  EXPECT_NEAR(usage.cpu_share, 0.5, 1e-6);
  EXPECT_NEAR(usage.cpu_user_seconds, 0.24, 1e-6);
  EXPECT_NEAR(usage.cpu_system_seconds, 0.06, 1e-6);
  EXPECT_NEAR(usage.cpu_per_1k_answers, 0.15, 1e-6);
  EXPECT_EQ(usage.rss_max_bytes, 1000u);
  EXPECT_EQ(usage.fds_max, 5u);
  EXPECT_EQ(usage.threads_max, 2u);
  EXPECT_EQ(usage.connections_max, 7u);
  EXPECT_TRUE(usage.exited.empty());
}

TEST(monitor_command_test, a_process_the_command_says_exited_is_named) {
  // The command says process 77 exited only once the test has taken its first reading (the
  // file `go` appears), and the monitor shows it took that in when the process's memory
  // leaves the sum: no sleep on either side.
  const hostile::scratch files("monitor-exited");
  const std::string go = files.path("go");
  const std::string command =
      R"(echo '{"time": 1, "pid": 77, "cpu_user_seconds": 1, "cpu_system_seconds": 0, )"
      R"("rss_bytes": 1, "fds": 1, "threads": 1}'; )"
      "while [ ! -e '" +
      go + "' ]; do sleep 0.01; done; " +
      R"(echo 'garbage'; echo '{"time": 2, "pid": 77, "exited": true}'; sleep 10)";
  detail::server_monitor monitor({}, {}, command, 0);
  monitor.sample();
  ASSERT_EQ(monitor.last_rss_bytes(), 1u);
  { std::ofstream created(go); }
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (monitor.last_rss_bytes() != 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
    monitor.sample();
  }
  ASSERT_EQ(monitor.last_rss_bytes(), 0u);  // the garbage line came before it
  const process_usage usage = monitor.finish(10, 1);
  EXPECT_EQ(usage.exited, std::vector<int>{77});
  EXPECT_EQ(usage.command_pids, std::vector<int>{77});
  EXPECT_FALSE(usage.cpu_measured);  // one reading: no rate
  const auto& warnings = monitor.warnings();
  const auto said = [&](const std::string& what) {
    return std::any_of(warnings.begin(), warnings.end(),
                       [&](const std::string& w) { return w.find(what) != std::string::npos; });
  };
  EXPECT_TRUE(said("fewer than two readings"));
  EXPECT_TRUE(said("1 line not understood, the first: \"garbage\""));
}

TEST(monitor_command_test, a_command_that_fails_before_its_first_reading_is_a_clear_error) {
  try {
    detail::server_monitor monitor({}, {},
                                   "echo not a reading; echo 'no route to host' >&2; exit 3", 0);
    FAIL() << "no error";
  } catch (const setup_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("load_spec::monitor.command \"echo not a reading"), std::string::npos)
        << what;
    EXPECT_NE(what.find("exited with status 3"), std::string::npos) << what;
    EXPECT_NE(what.find("no route to host"), std::string::npos) << what;
    EXPECT_NE(what.find("\"not a reading\" (not a JSON object)"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace dnstransport
