// Monitoring the server's processes: a load against a responder in this process reads its
// CPU and connections; a monitored process that exits mid-run is named, not fatal; the CLI's
// --server-process runs the responder as a child that is monitored and stopped; a sweep of two
// `serve` processes given as targets with pid= reports each one's CPU per 1,000 answers; a
// cgroup is read for its CPU, memory and processes (a directory of its files written by the
// test, everywhere, and a cgroup the test creates, where the machine lets it).
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include <dnstransport/error.hpp>
#include <dnstransport/load.hpp>
#include <dnstransport/report.hpp>
#include <dnstransport/server.hpp>

#include "child_process.hpp"
#include "cli_runs.hpp"
#include "in_ci.hpp"
#include "scratch_dir.hpp"

namespace dnstransport {
namespace {

using namespace std::chrono_literals;

server_options tcp_and_udp() {
  server_options o;
  o.listen[transport_kind::udp] = endpoint{"127.0.0.1", 0};
  o.listen[transport_kind::tcp] = endpoint{"127.0.0.1", 0};
  return o;
}

// Half a second of 4 TCP clients x 10 in flight against the responder.
load_spec tcp_load(const server& responder) {
  load_spec spec;
  spec.target.transport = transport_kind::tcp;
  spec.target.port = responder.port(transport_kind::tcp);
  spec.traffic.clients = 4;
  spec.traffic.outstanding = 10;
  spec.traffic.duration_seconds = 0.5;
  return spec;
}

TEST(monitor_load_test, a_monitored_responder_shows_its_cpu_and_every_connection) {
  server responder(tcp_and_udp());
  load_spec spec = tcp_load(responder);
  spec.monitor.pids = {getpid()};  // the responder runs in this process
  const run_result r = run_load(spec);
  ASSERT_GT(r.responses_received, 0u);
  const auto& usage = r.server_usage;
  ASSERT_TRUE(usage.monitored());
  EXPECT_GE(usage.samples, 3u);  // the window's start, its end, and readings in between
  EXPECT_GT(usage.cpu_seconds(), 0.0);
  EXPECT_NEAR(usage.cpu_per_1k_answers,
              usage.cpu_seconds() * 1000 / static_cast<double>(r.responses_received), 1e-12);
  // Four persistent connections, each accepted once: the readings in the window see four.
  EXPECT_EQ(usage.connections_max, 4u);
  EXPECT_GT(usage.rss_max_bytes, 0u);
  EXPECT_GE(usage.threads_max, 3u);  // this thread, a worker, the responder's thread
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();

  // The figures survive the JSON.
  const run_result back = run_result_from_json(to_json(r), "memory");
  EXPECT_EQ(back.server_usage.pids, usage.pids);
  EXPECT_NEAR(back.server_usage.cpu_seconds(), usage.cpu_seconds(), 1e-9);
  EXPECT_EQ(back.server_usage.connections_max, 4u);
  EXPECT_NE(format_table(r).find("server CPU"), std::string::npos);
}

TEST(monitor_load_test, a_monitored_process_that_exits_is_reported_and_the_run_goes_on) {
  server responder(tcp_and_udp());
  const pid_t child = fork();
  if (child == 0) {
    std::this_thread::sleep_for(200ms);
    _exit(0);
  }
  std::thread reaper([child] { waitpid(child, nullptr, 0); });
  load_spec spec;
  spec.target.port = responder.port(transport_kind::udp);
  spec.traffic.clients = 2;
  spec.traffic.outstanding = 10;
  spec.traffic.duration_seconds = 0.6;
  spec.monitor.pids = {child};
  const run_result r = run_load(spec);
  reaper.join();
  EXPECT_GT(r.responses_received, 0u);
  EXPECT_EQ(r.server_usage.exited, std::vector<int>{child});
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find(fmt::format("process {} exited", child)), std::string::npos)
      << r.warnings[0];
}

TEST(monitor_load_test, a_pid_that_names_no_process_is_refused_before_sending) {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  load_spec spec;
  spec.monitor.pids = {child};
  try {
    validate(spec);
    FAIL() << "a pid that is gone was accepted";
  } catch (const setup_error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  fmt::format("load_spec::monitor.pids {}: no such process", child)),
              std::string::npos)
        << e.what();
  }
}

// The cgroup v2 mount of this machine (hybrid systems have it under unified/).
std::filesystem::path cgroup_v2_root() {
  if (std::filesystem::exists("/sys/fs/cgroup/cgroup.controllers")) return "/sys/fs/cgroup";
  if (std::filesystem::exists("/sys/fs/cgroup/unified/cgroup.controllers")) {
    return "/sys/fs/cgroup/unified";
  }
  return {};
}

// The CPU time a cgroup's processes used so far (cpu.stat's usage_usec).
double cgroup_cpu_seconds(const std::filesystem::path& group) {
  std::ifstream in(group / "cpu.stat");
  std::string key;
  std::uint64_t value = 0;
  while (in >> key >> value) {
    if (key == "usage_usec") return static_cast<double>(value) / 1e6;
  }
  ADD_FAILURE() << "no usage_usec in " << (group / "cpu.stat");
  return 0;
}

// The cgroup monitor reads a cgroup's files (cpu.stat, memory.current, cgroup.procs) from
// the directory given, so a directory of such files, written by the test, is read through
// the same code on any machine, with figures known exactly. The CPU in cpu.stat grows by a
// known step at each progress report, which the thread that takes the monitor's readings
// makes between two of them: the window's CPU is the steps made after its first reading and
// before its last, all of them. The processes listed are this one (the responder's).
TEST(monitor_load_test, a_cgroup_directory_gives_the_cpu_memory_and_processes_it_lists) {
  const hostile::scratch files("fake-cgroup");
  const std::string group = std::filesystem::path(files.path("cpu.stat")).parent_path().string();
  constexpr std::uint64_t user_start = 7'000'000;
  constexpr std::uint64_t system_start = 3'000'000;
  constexpr std::uint64_t user_step = 30'000;  // microseconds, as cpu.stat counts
  constexpr std::uint64_t system_step = 10'000;
  constexpr std::uint64_t memory = 123'456'789;
  const auto write_cpu = [&](std::uint64_t steps) {
    const std::uint64_t user = user_start + steps * user_step;
    const std::uint64_t system = system_start + steps * system_step;
    files.file("cpu.stat", fmt::format("usage_usec {}\nuser_usec {}\nsystem_usec {}\nnice_usec 0\n",
                                       user + system, user, system));
  };
  write_cpu(0);
  files.file("memory.current", fmt::format("{}\n", memory));
  files.file("cgroup.procs", fmt::format("{}\n", getpid()));
  server responder(tcp_and_udp());
  load_spec spec = tcp_load(responder);
  spec.output.progress_interval_seconds = 0.05;
  std::uint64_t reports = 0;
  spec.output.on_progress = [&](const load_progress&) { write_cpu(++reports); };
  spec.monitor.cgroups = {group};
  const run_result r = run_load(spec);
  ASSERT_GT(r.responses_received, 0u);
  const auto& usage = r.server_usage;
  EXPECT_EQ(usage.cgroups, std::vector<std::string>{group});
  EXPECT_TRUE(usage.exited_cgroups.empty());
  EXPECT_GE(usage.samples, 2u);
  // user_usec and system_usec, each in seconds, over the window: not usage_usec, not the
  // totals since the cgroup began, not this process's own CPU.
  EXPECT_NEAR(usage.cpu_user_seconds, static_cast<double>(reports * user_step) / 1e6, 1e-9)
      << reports << " reports";
  EXPECT_NEAR(usage.cpu_system_seconds, static_cast<double>(reports * system_step) / 1e6, 1e-9)
      << reports << " reports";
  EXPECT_NEAR(usage.cpu_per_1k_answers,
              usage.cpu_seconds() * 1000 / static_cast<double>(r.responses_received), 1e-12);
  // The memory is the cgroup's memory.current (the listed processes add none of theirs); the
  // threads, descriptors and connections are those of the processes it lists: this one, with
  // its worker and the responder's thread, and the four persistent connections.
  EXPECT_EQ(usage.rss_max_bytes, memory);
  EXPECT_GE(usage.threads_max, 3u);
  EXPECT_GT(usage.fds_max, 0u);
  EXPECT_EQ(usage.connections_max, 4u);
}

// A cgroup holding one process that burns CPU: the run's server CPU is that process's, read
// from the cgroup's cpu.stat, and the cgroup's processes are counted. It needs root and a
// writable cgroup v2 hierarchy, which CI has (CI=true: their absence fails the test).
TEST(monitor_load_test, a_monitored_cgroup_gives_the_cpu_of_its_processes) {
  const auto root = cgroup_v2_root();
  if (root.empty()) {
    if (hostile::in_ci()) FAIL() << "no cgroup v2 hierarchy mounted; CI needs one";
    GTEST_SKIP() << "no cgroup v2 hierarchy mounted on this machine";
  }
  const auto group = root / fmt::format("dnstransport-test-{}", getpid());
  std::error_code ec;
  if (!std::filesystem::create_directory(group, ec)) {
    if (hostile::in_ci()) {
      FAIL() << "cannot create a cgroup under " << root << ": " << ec.message()
             << " (CI runs as root with a writable cgroup v2 hierarchy)";
    }
    GTEST_SKIP() << "cannot create a cgroup under " << root << ": " << ec.message()
                 << " (needs root and a writable cgroup v2 hierarchy)";
  }
  const pid_t child = fork();
  if (child == 0) {
    std::atomic<unsigned long> spins{0};
    for (;;) spins.fetch_add(1, std::memory_order_relaxed);
  }
  std::ofstream(group / "cgroup.procs") << child << std::flush;
  server responder(tcp_and_udp());
  load_spec spec;
  spec.target.port = responder.port(transport_kind::udp);
  spec.traffic.clients = 1;
  spec.traffic.outstanding = 10;
  spec.traffic.rate = 1000;
  spec.traffic.duration_seconds = 0.5;
  spec.monitor.cgroups = {group.string()};
  const double before = cgroup_cpu_seconds(group);
  const run_result r = run_load(spec);
  const double after = cgroup_cpu_seconds(group);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  std::filesystem::remove(group, ec);
  EXPECT_EQ(r.server_usage.cgroups, std::vector<std::string>{group.string()});
  EXPECT_TRUE(r.server_usage.monitored());
  // The run's window is within the run: the CPU measured in it is the cgroup's, some and no
  // more than it used during the whole run (read from its cpu.stat around it), and most of
  // that (the window is the run but its set-up; a tenth whatever the machine's load), so not
  // another cgroup's, the machine's, or in other units.
  EXPECT_GT(r.server_usage.cpu_seconds(), 0.0);
  EXPECT_LE(r.server_usage.cpu_seconds(), after - before + 1e-6);
  EXPECT_GE(r.server_usage.cpu_seconds(), (after - before) / 10);
  EXPECT_GE(r.server_usage.threads_max, 1u);
  const run_result back = run_result_from_json(to_json(r), "run.json");
  EXPECT_EQ(back.server_usage.cgroups, r.server_usage.cgroups);

  spec.monitor.cgroups = {(root / "no-such-cgroup-here").string()};
  EXPECT_THROW(validate(spec), setup_error);
}

#ifdef DNSTRANSPORT_CLI_PATH

using hostile::cli;

using hostile::contents;

bool process_exists(int pid) {
  return kill(pid, 0) == 0 || errno != ESRCH;
}

TEST(monitor_cli_test, server_process_runs_the_responder_apart_monitors_it_and_stops_it) {
  const hostile::scratch files("server-process");
  const std::string json = files.path("run.json");
  const auto done =
      hostile::run_process(cli, {"run", "--server-process", "--transport", "tcp", "--clients", "2",
                                 "--outstanding", "10", "--duration", "0.5", "--json", json});
  ASSERT_EQ(done.exit_code, 0) << done.err;
  std::smatch found;
  ASSERT_TRUE(std::regex_search(done.err, found, std::regex("its own process ([0-9]+)")))
      << done.err;
  const int pid = std::stoi(found[1]);
  const run_result r = run_result_from_json(contents(json), json);
  ASSERT_TRUE(r.server_usage.monitored());
  EXPECT_EQ(r.server_usage.pids, std::vector<int>{pid});
  EXPECT_NE(pid, getpid());
  EXPECT_GT(r.server_usage.cpu_seconds(), 0.0);
  EXPECT_EQ(r.server_usage.connections_max, 2u);
  EXPECT_TRUE(r.server_usage.exited.empty());
  EXPECT_NE(done.out.find("server CPU"), std::string::npos) << done.out;
  // The responder is stopped (and reaped) by the time the command has exited.
  EXPECT_FALSE(process_exists(pid)) << pid;
}

// A monitored sweep's report plots the server's CPU per 1,000 answers against queries per
// connection: a line per connection transport, UDP flat across.
TEST(monitor_cli_test, a_monitored_sweep_report_plots_server_cpu_per_answer) {
  const hostile::scratch files("server-cpu-plot");
  const std::string json = files.path("sweep.json");
  const auto done = hostile::run_process(
      cli,
      {"sweep", "--server-process", "--transports", "udp,tcp", "--clients", "2",
       "--queries-per-connection", "1,unlimited", "--repeats", "1", "--duration", "0.3", "--pause",
       "0", "--outstanding", "10", "--json", json, "--quiet"},
      60s);
  ASSERT_EQ(done.exit_code, 0) << done.err;
  const std::string report = files.path("report");
  const auto reported = hostile::run_process(cli, {"report", json, "--out", report, "--quiet"});
  ASSERT_EQ(reported.exit_code, 0) << reported.err;
  const std::string script = contents(report + "/server_cpu.gp");
  ASSERT_FALSE(script.empty()) << "no server_cpu.gp in " << report;
  EXPECT_NE(script.find("xtics (\"1\" 1, \"unlimited\" 2)"), std::string::npos) << script;
  EXPECT_NE(script.find("title 'tcp'"), std::string::npos) << script;
  EXPECT_NE(script.find("title 'udp'"), std::string::npos) << script;
  // tcp's block has a row per queries-per-connection value, each with a positive figure.
  std::smatch rows;
  ASSERT_TRUE(std::regex_search(script, rows,
                                std::regex("\\$s1 << EOD\n1 ([0-9.e+-]+)\n2 ([0-9.e+-]+)\nEOD")))
      << script;
  EXPECT_GT(std::stod(rows[1]), 0);
  EXPECT_GT(std::stod(rows[2]), 0);
  // One connection per query costs the server more per answer than one kept for the run.
  EXPECT_GT(std::stod(rows[1]), std::stod(rows[2]));
}

TEST(monitor_cli_test, monitoring_flags_are_checked) {
  const pid_t gone = fork();
  if (gone == 0) _exit(0);
  waitpid(gone, nullptr, 0);
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"run", "--monitor-pid", std::to_string(gone)},
       fmt::format("--monitor-pid {}: no such process", gone)},
      {{"run", "--monitor-pid", "x"}, "--monitor-pid"},
      {{"run", "--server", "127.0.0.1", "--server-process"}, "--server-process applies"},
      {{"sweep", "--target", "a=127.0.0.1", "--monitor-pid", "1"}, "give each target its pid"},
      {{"sweep", "--target", "a=127.0.0.1,pid=0"}, "--target a:"},
      {{"sweep", "--target", "a=127.0.0.1,cgroup="}, "--target a: cgroup= is empty"},
      {{"sweep", "--target", "a=127.0.0.1", "--monitor-cgroup", "x"},
       "give each target its cgroup=PATH"},
      {{"run", "--monitor-command", "echo no; exit 4"},
       "--monitor-command \"echo no; exit 4\" exited with status 4"},
      {{"run", "--monitor-command", "a", "--monitor-command", "b"},
       "--monitor-command: given 2 times"},
      {{"sweep", "--target", "a=127.0.0.1", "--monitor-command", "b=true"},
       "with --target it is NAME=COMMAND"},
  };
  for (const auto& [arguments, message] : cases) {
    const auto done = hostile::run_process(cli, arguments);
    EXPECT_EQ(done.exit_code, 2) << arguments[1];
    EXPECT_NE(done.err.find(message), std::string::npos) << done.err;
  }
}

TEST(monitor_cli_test, monitor_prints_a_json_line_per_reading_until_the_process_exits) {
  hostile::child_process sleeper("/bin/sleep", {"0.6"});
  const auto done = hostile::run_process(
      cli, {"monitor", "--pid", std::to_string(sleeper.pid()), "--interval", "0.1"}, 10s);
  ASSERT_EQ(done.exit_code, 0) << done.err;
  std::istringstream lines(done.out);
  std::vector<std::string> readings;
  for (std::string line; std::getline(lines, line);) readings.push_back(line);
  // About six readings of a live process, then one line saying it exited.
  ASSERT_GE(readings.size(), 4u) << done.out;
  const std::string pid = fmt::format("\"pid\": {}", sleeper.pid());
  for (std::size_t i = 0; i + 1 < readings.size(); ++i) {
    EXPECT_NE(readings[i].find(pid), std::string::npos) << readings[i];
    EXPECT_TRUE(std::regex_search(readings[i], std::regex("\"rss_bytes\": [1-9][0-9]*")))
        << readings[i];
    EXPECT_NE(readings[i].find("\"threads\": 1"), std::string::npos) << readings[i];
  }
  EXPECT_NE(readings.back().find(pid + ", \"exited\": true}"), std::string::npos)
      << readings.back();
  EXPECT_LT(done.seconds, 5.0);
}

// A `serve` process with TCP and TLS listeners on free ports.
struct serve_process {
  explicit serve_process(const std::vector<std::string>& extra) : child(cli, arguments(extra)) {
    if (!child.wait_for_stdout("stop with Ctrl-C", 10s)) return;
    const std::string out = child.stdout_so_far();
    std::smatch m;
    if (std::regex_search(out, m, std::regex("tcp  127\\.0\\.0\\.1:([0-9]+)"))) {
      tcp = std::stoi(m[1]);
    }
    if (std::regex_search(out, m, std::regex("tls  127\\.0\\.0\\.1:([0-9]+)"))) {
      tls = std::stoi(m[1]);
    }
  }
  static std::vector<std::string> arguments(const std::vector<std::string>& extra) {
    std::vector<std::string> a{"serve",       "--listen", "off",        "--tcp",
                               "127.0.0.1:0", "--tls",    "127.0.0.1:0"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  hostile::child_process child;
  int tcp = 0;
  int tls = 0;
};

TEST(monitor_cli_test, a_sweep_of_two_monitored_servers_compares_their_cpu_per_answer) {
  const hostile::scratch files("monitored-targets");
  serve_process plain({});
  serve_process closing({"--close-after", "20"});
  ASSERT_NE(plain.tcp, 0) << plain.child.stdout_so_far();
  ASSERT_NE(closing.tcp, 0) << closing.child.stdout_so_far();
  const std::string json = files.path("two.json");
  const auto done = hostile::run_process(
      cli,
      {"sweep",
       "--target",
       fmt::format("plain=127.0.0.1:{},tls={},pid={}", plain.tcp, plain.tls, plain.child.pid()),
       "--target",
       fmt::format("closing=127.0.0.1:{},tls={},pid={}", closing.tcp, closing.tls,
                   closing.child.pid()),
       "--transports",
       "tcp,tls",
       "--clients",
       "2",
       "--queries-per-connection",
       "unlimited",
       "--repeats",
       "1",
       "--duration",
       "0.4",
       "--pause",
       "0",
       "--outstanding",
       "10",
       "--json",
       json},
      60s);
  ASSERT_EQ(done.exit_code, 0) << done.err << done.out;
  const sweep_result r = sweep_result_from_json(contents(json), json);
  ASSERT_EQ(r.points.size(), 4u);
  for (const auto& p : r.points) {
    const auto& usage = p.repeats.at(0).server_usage;
    const auto& target = p.point.target == "plain" ? plain : closing;
    EXPECT_EQ(usage.pids, std::vector<int>{target.child.pid()}) << describe(p.point);
    EXPECT_TRUE(p.summary.server_monitored);
    EXPECT_GT(p.summary.server_cpu_per_1k_answers(), 0.0) << describe(p.point);
    // Persistent connections stay two; the closing server's clients reconnect every 20.
    if (p.point.target == "plain") {
      EXPECT_EQ(usage.connections_max, 2u)
          << describe(p.point) << ", " << usage.samples << " readings, "
          << p.repeats.at(0).connections.opened << " opened, "
          << p.repeats.at(0).connections.first_failure;
    }
  }
  const std::string printed = done.err + done.out;
  EXPECT_NE(printed.find("server CPU"), std::string::npos) << printed;
  const std::string report = files.path("report");
  const auto reported = hostile::run_process(cli, {"report", json, "--out", report});
  ASSERT_EQ(reported.exit_code, 0) << reported.err;
  const std::string tables = contents(report + "/tables.txt");
  const auto at = tables.find("Server CPU per 1,000 answers");
  ASSERT_NE(at, std::string::npos) << tables;
  // One row per transport, a column per server, each with a figure in ms.
  const std::string section = tables.substr(at);
  EXPECT_NE(section.find("plain"), std::string::npos);
  EXPECT_NE(section.find("closing"), std::string::npos);
  EXPECT_TRUE(std::regex_search(section, std::regex("\n  tcp +unlimited +[0-9.]+ ms +[0-9.]+ ms")))
      << section;
  EXPECT_TRUE(
      std::regex_search(section, std::regex("\n  tls-openssl +unlimited +[0-9.]+ ms +[0-9.]+ ms")))
      << section;
}

// A server "elsewhere": `monitor` run as the monitor command (as ssh would run it on the
// server's machine) gives the run the same figures as watching the process here.
TEST(monitor_cli_test, a_monitor_command_reads_the_server_as_monitor_pid_would) {
  const hostile::scratch files("monitor-command");
  serve_process server({});
  ASSERT_NE(server.tcp, 0) << server.child.stdout_so_far();
  const std::string command = fmt::format("exec {} monitor --pid {} --port {} --interval 0.1", cli,
                                          server.child.pid(), server.tcp);
  const std::string json = files.path("run.json");
  const auto done =
      hostile::run_process(cli, {"run", "--server", fmt::format("127.0.0.1:{}", server.tcp),
                                 "--transport", "tcp", "--clients", "3", "--outstanding", "10",
                                 "--duration", "1", "--monitor-command", command, "--json", json});
  ASSERT_EQ(done.exit_code, 0) << done.err;
  const run_result r = run_result_from_json(contents(json), json);
  const auto& usage = r.server_usage;
  ASSERT_TRUE(usage.monitored());
  EXPECT_EQ(usage.command, command);
  EXPECT_EQ(usage.command_pids, std::vector<int>{server.child.pid()});
  EXPECT_TRUE(usage.pids.empty());
  EXPECT_TRUE(usage.cpu_measured);
  EXPECT_GT(usage.cpu_seconds(), 0.0);
  EXPECT_GT(usage.rss_max_bytes, 1u << 20);
  EXPECT_EQ(usage.connections_max, 3u);
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
  EXPECT_NE(done.out.find(fmt::format("pid {} by `{}`", server.child.pid(), command)),
            std::string::npos)
      << done.out;
}

#endif

}  // namespace
}  // namespace dnstransport
