// `mpirun -np N dnstransport run|sweep|search` against one `dnstransport serve` started
// apart, on loopback: the ranks share the clients and the query count, rank 0 prints and
// writes the merged result, whose counts are the sums of the per-rank counts; a rank that
// cannot run, is killed or hangs ends the run in bounded time with the others' results.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <boost/json.hpp>

#include <dnstransport/transport.hpp>

#include "child_process.hpp"
#include "scratch_dir.hpp"
#include "served.hpp"

namespace dnstransport {
namespace {

using namespace std::chrono_literals;
using hostile::child_process;
using hostile::contents;
using hostile::process_result;
using hostile::scratch;
using hostile::served;

const std::string cli = DNSTRANSPORT_CLI_PATH;
const std::string mpirun = DNSTRANSPORT_MPIEXEC_PATH;

// `mpirun -np N dnstransport ARGS...`, as root in CI, more ranks than CPUs allowed.
std::vector<std::string> under_mpirun(unsigned ranks, const std::vector<std::string>& args) {
  std::vector<std::string> out{"--allow-run-as-root", "--oversubscribe", "-np",
                               std::to_string(ranks), cli};
  out.insert(out.end(), args.begin(), args.end());
  return out;
}

boost::json::object read_json(const std::string& path) {
  return boost::json::parse(contents(path)).as_object();
}

std::uint64_t count(const boost::json::object& o, const char* key) {
  return o.at(key).to_number<std::uint64_t>();
}

// The pid of rank `rank` among mpirun's children (Open MPI puts OMPI_COMM_WORLD_RANK in
// each one's environment); 0 when not (yet) found.
pid_t rank_pid(pid_t launcher, unsigned rank) {
  const std::string wanted = "OMPI_COMM_WORLD_RANK=" + std::to_string(rank);
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    char state = 0;
    pid_t parent = 0;
    rest >> state >> parent;
    if (parent != launcher) continue;
    const std::string environment = contents(entry.path() / "environ");
    std::size_t at = 0;
    while (at < environment.size()) {
      const auto end = environment.find('\0', at);
      if (environment.compare(at, end - at, wanted) == 0) return std::stoi(name);
      if (end == std::string::npos) break;
      at = end + 1;
    }
  }
  return 0;
}

class mpi_run_test : public ::testing::TestWithParam<std::tuple<unsigned, const char*>> {};

TEST_P(mpi_run_test, the_merged_counts_are_the_sums_of_the_ranks) {
  const auto [ranks, transport] = GetParam();
  const scratch files("mpi-run");
  served server(cli, files.path("cert"));
  ASSERT_TRUE(server.ready()) << server.out();
  const transport_kind kind = *parse_transport(transport);
  const std::string json = files.path("run.json");
  // 6 clients over the ranks, 3,000 queries: exact shares whatever the speed.
  const process_result r = hostile::run_process(
      mpirun,
      under_mpirun(ranks, {"run", "--server", server.address(kind), "--transport", transport,
                           "--clients", "6", "--outstanding", "10", "--count", "3000", "--timeout",
                           "10", "--json", json}),
      90s);
  ASSERT_FALSE(r.timed_out) << r.out << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  // Rank 0 alone prints: one table.
  EXPECT_NE(r.out.find(std::to_string(ranks) + " ranks (mpirun)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("queries sent"), r.out.rfind("queries sent")) << r.out;

  const auto o = read_json(json);
  EXPECT_EQ(count(o, "ranks"), ranks);
  EXPECT_EQ(count(o, "clients"), 6u);
  EXPECT_EQ(count(o, "queries_sent"), 3000u);
  EXPECT_EQ(count(o, "responses_received"), 3000u);
  const auto& per_rank = o.at("per_rank").as_array();
  ASSERT_EQ(per_rank.size(), ranks);
  std::uint64_t sent = 0;
  std::uint64_t answered = 0;
  std::uint64_t clients = 0;
  double cpu = 0;
  for (std::size_t k = 0; k < per_rank.size(); ++k) {
    const auto& m = per_rank[k].as_object();
    EXPECT_EQ(count(m, "rank"), k);
    EXPECT_TRUE(m.at("reported").as_bool());
    EXPECT_FALSE(m.at("host").as_string().empty());
    EXPECT_EQ(count(m, "clients"), 6 / ranks);
    EXPECT_EQ(count(m, "queries_sent"), 3000 / ranks);
    sent += count(m, "queries_sent");
    answered += count(m, "responses_received");
    clients += count(m, "clients");
    cpu += m.at("client_cpu_seconds").to_number<double>();
  }
  EXPECT_EQ(sent, count(o, "queries_sent"));
  EXPECT_EQ(answered, count(o, "responses_received"));
  EXPECT_EQ(clients, count(o, "clients"));
  EXPECT_NEAR(cpu, o.at("client_cpu_seconds").to_number<double>(), 1e-6);
  // The latency histogram holds every rank's answers.
  EXPECT_EQ(count(o.at("latency_ns").as_object(), "count"), 3000u);
  if (kind != transport_kind::udp) {
    EXPECT_EQ(count(o.at("connections").as_object(), "opened"), 6u);
  }
}

std::string ranks_and_transport(
    const ::testing::TestParamInfo<std::tuple<unsigned, const char*>>& param) {
  return fmt::format("np{}_{}", std::get<0>(param.param), std::get<1>(param.param));
}

INSTANTIATE_TEST_SUITE_P(ranks, mpi_run_test,
                         ::testing::Values(std::make_tuple(2u, "udp"), std::make_tuple(3u, "udp"),
                                           std::make_tuple(2u, "tcp"), std::make_tuple(3u, "tls")),
                         ranks_and_transport);

TEST(mpi_sweep_test, every_rank_steps_through_the_same_points) {
  const scratch files("mpi-sweep");
  served server(cli, files.path("cert"));
  ASSERT_TRUE(server.ready()) << server.out();
  const std::string json = files.path("sweep.json");
  const process_result r =
      hostile::run_process(mpirun,
                           under_mpirun(2, {"sweep",
                                            "--server",
                                            server.address(transport_kind::udp),
                                            "--tls-port",
                                            std::to_string(server.port(transport_kind::tls)),
                                            "--transports",
                                            "udp,tls",
                                            "--clients",
                                            "2,4",
                                            "--queries-per-connection",
                                            "unlimited",
                                            "--repeats",
                                            "1",
                                            "--duration",
                                            "0.3",
                                            "--pause",
                                            "0",
                                            "--json",
                                            json,
                                            "--quiet"}),
                           90s);
  ASSERT_FALSE(r.timed_out) << r.out << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto o = read_json(json);
  const auto& points = o.at("points").as_array();
  ASSERT_EQ(points.size(), 4u);  // udp and tls (its port given) x 2 and 4 clients
  for (const auto& p : points) {
    for (const auto& run : p.as_object().at("repeats").as_array()) {
      const auto& ro = run.as_object();
      EXPECT_EQ(count(ro, "ranks"), 2u);
      EXPECT_GT(count(ro, "responses_received"), 0u);
      std::uint64_t answered = 0;
      for (const auto& m : ro.at("per_rank").as_array()) {
        answered += count(m.as_object(), "responses_received");
      }
      EXPECT_EQ(answered, count(ro, "responses_received"));
    }
  }
}

TEST(mpi_search_test, every_rank_takes_the_same_steps) {
  const scratch files("mpi-search");
  served server(cli, files.path("cert"));
  ASSERT_TRUE(server.ready()) << server.out();
  const std::string json = files.path("search.json");
  const process_result r = hostile::run_process(
      mpirun, under_mpirun(2, {"search",      "--server",   server.address(transport_kind::udp),
                               "--clients",   "4",          "--start-rate",
                               "2000",        "--max-rate", "8000",
                               "--duration",  "0.3",        "--settle",
                               "0",           "--repeats",  "1",
                               "--precision", "0.5",        "--max-time",
                               "30",          "--json",     json}),
      90s);
  ASSERT_FALSE(r.timed_out) << r.out << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto o = read_json(json);
  const auto& steps = o.at("steps").as_array();
  ASSERT_FALSE(steps.empty());
  for (const auto& step : steps) {
    const auto& run = step.as_object().at("run").as_object();
    ASSERT_EQ(count(run, "ranks"), 2u);
    // Each rank offered its half of the step's rate.
    EXPECT_EQ(count(run, "clients"), 4u);
    std::uint64_t answered = 0;
    for (const auto& m : run.at("per_rank").as_array()) {
      EXPECT_EQ(count(m.as_object(), "clients"), 2u);
      answered += count(m.as_object(), "responses_received");
    }
    EXPECT_EQ(answered, count(run, "responses_received"));
  }
  // The first step, 2,000 q/s over both ranks, is far within this responder's reach.
  EXPECT_GE(o.at("max_rate").to_number<double>(), 2000) << r.out;
  EXPECT_LE(o.at("max_rate").to_number<double>(), 8000) << r.out;
}

TEST(mpi_failure_test, a_rank_that_cannot_run_ends_every_rank_with_its_reason) {
  const scratch files("mpi-setup");
  served server(cli, files.path("cert"));
  ASSERT_TRUE(server.ready()) << server.out();
  // Two source addresses over two ranks: rank 1 gets the one that is no address.
  const process_result r = hostile::run_process(
      mpirun,
      under_mpirun(2, {"run", "--server", server.address(transport_kind::udp), "--clients", "2",
                       "--duration", "1", "--source", "127.0.0.1,not-an-address"}),
      60s);
  ASSERT_FALSE(r.timed_out) << r.out << r.err;
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("error: rank 1 on "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--source: \"not-an-address\" is neither an IP address nor a range"),
            std::string::npos)
      << r.err;
  EXPECT_LT(r.seconds, 20);
}

TEST(mpi_failure_test, a_rank_without_answers_fails_the_run) {
  const scratch files("mpi-noanswer");
  served server(cli, files.path("cert"));
  ASSERT_TRUE(server.ready()) << server.out();
  // Rank 1's source is loopback's broadcast address, 127.255.255.255: the kernel lets a socket
  // bind it, but no answer reaches a socket bound there (the queries leave from 127.0.0.1,
  // where the answers go back to). An address that is not on this machine is refused before
  // the run (cli_bad_source_test).
  const std::string json = files.path("run.json");
  const process_result r = hostile::run_process(
      mpirun,
      under_mpirun(2, {"run", "--server", server.address(transport_kind::udp), "--clients", "2",
                       "--duration", "0.5", "--timeout", "0.2", "--source",
                       "127.0.0.1,127.255.255.255", "--json", json}),
      60s);
  ASSERT_FALSE(r.timed_out) << r.out << r.err;
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("rank 1 on"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("got no answer"), std::string::npos) << r.out;
  const auto o = read_json(json);
  const auto& per_rank = o.at("per_rank").as_array();
  ASSERT_EQ(per_rank.size(), 2u);
  EXPECT_GT(count(per_rank[0].as_object(), "responses_received"), 0u);
  EXPECT_EQ(count(per_rank[1].as_object(), "responses_received"), 0u);
}

TEST(mpi_failure_test, a_killed_rank_ends_the_run_with_the_others_results) {
  const scratch files("mpi-kill");
  served server(cli, files.path("cert"));
  ASSERT_TRUE(server.ready()) << server.out();
  const std::string json = files.path("run.json");
  child_process run(mpirun, under_mpirun(3, {"run", "--server", server.address(transport_kind::tcp),
                                             "--transport", "tcp", "--clients", "3", "--duration",
                                             "30", "--json", json, "--progress"}));
  // Every rank is sending once rank 0 prints progress.
  ASSERT_TRUE(run.wait_for_stderr("answered ", 30s));
  pid_t victim = 0;
  for (int i = 0; i < 100 && victim == 0; ++i) {
    victim = rank_pid(run.pid(), 2);
    if (victim == 0) std::this_thread::sleep_for(50ms);
  }
  ASSERT_NE(victim, 0);
  ::kill(victim, SIGKILL);
  const process_result r = run.wait(30s);
  ASSERT_FALSE(r.timed_out) << r.out << r.err;
  // mpirun ends the job at once (the others get SIGTERM, then SIGKILL a second later), far
  // before the 30 s asked for; rank 0 still writes what ranks 0 and 1 measured.
  EXPECT_NE(r.exit_code, 0);
  EXPECT_LT(r.seconds, 25);
  const auto o = read_json(json);
  EXPECT_TRUE(o.at("interrupted").as_bool());
  const auto& per_rank = o.at("per_rank").as_array();
  ASSERT_EQ(per_rank.size(), 3u);
  EXPECT_FALSE(per_rank[2].as_object().at("reported").as_bool());
  EXPECT_TRUE(per_rank[0].as_object().at("reported").as_bool());
  EXPECT_GT(count(o, "responses_received"), 0u);
  EXPECT_EQ(count(o, "responses_received"),
            count(per_rank[0].as_object(), "responses_received") +
                count(per_rank[1].as_object(), "responses_received"));
  EXPECT_NE(r.out.find("rank 2 on"), std::string::npos) << r.out;
}

TEST(mpi_failure_test, a_hung_rank_ends_the_run_within_its_timeout) {
  const scratch files("mpi-hang");
  served server(cli, files.path("cert"));
  ASSERT_TRUE(server.ready()) << server.out();
  const std::string json = files.path("run.json");
  child_process run(mpirun, under_mpirun(2, {"run", "--server", server.address(transport_kind::udp),
                                             "--clients", "2", "--duration", "2", "--timeout", "1",
                                             "--json", json, "--progress"}));
  ASSERT_TRUE(run.wait_for_stderr("answered ", 30s));
  pid_t victim = 0;
  for (int i = 0; i < 100 && victim == 0; ++i) {
    victim = rank_pid(run.pid(), 1);
    if (victim == 0) std::this_thread::sleep_for(50ms);
  }
  ASSERT_NE(victim, 0);
  // Stopped, rank 1 neither sends its result nor exits: rank 0 gives up on it after the
  // query timeout and a margin of 10 s, writes its own result, and ends the job.
  ::kill(victim, SIGSTOP);
  const process_result r = run.wait(60s);
  ::kill(victim, SIGKILL);
  ASSERT_FALSE(r.timed_out) << r.out << r.err;
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_LT(r.seconds, 2 + 1 + 10 + 10);
  const auto o = read_json(json);
  const auto& per_rank = o.at("per_rank").as_array();
  ASSERT_EQ(per_rank.size(), 2u);
  EXPECT_TRUE(per_rank[0].as_object().at("reported").as_bool());
  EXPECT_FALSE(per_rank[1].as_object().at("reported").as_bool());
  EXPECT_GT(count(o, "responses_received"), 0u);
  EXPECT_NE(r.err.find("a rank of this mpirun job sent no result"), std::string::npos) << r.err;
}

TEST(mpi_usage_test, only_run_sweep_and_search_share_a_load_and_each_needs_a_server) {
  const process_result serve =
      hostile::run_process(mpirun, under_mpirun(2, {"serve", "--listen", "127.0.0.1:0"}), 60s);
  EXPECT_EQ(serve.exit_code, 2) << serve.err;
  EXPECT_NE(serve.err.find("`serve` does not run under mpirun"), std::string::npos) << serve.err;
  const process_result builtin =
      hostile::run_process(mpirun, under_mpirun(2, {"run", "--duration", "0.2"}), 60s);
  EXPECT_EQ(builtin.exit_code, 2) << builtin.err;
  EXPECT_NE(builtin.err.find("under mpirun every rank loads the same server: give --server"),
            std::string::npos)
      << builtin.err;
}

}  // namespace
}  // namespace dnstransport
