// The CLI names the flag the user typed when the library's messages name a setting: a sweep's
// --target for the server, pids and cgroups it gives its points, --tls-version for the TLS
// versions it sets, and the run's warnings in the flags' words; a sweep takes --early-data for
// its TLS points and drops it for the others, as it drops --idle for UDP.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <dnstransport/load.hpp>
#include <dnstransport/report.hpp>
#include <dnstransport/sweep_result.hpp>

#include "child_process.hpp"
#include "cli_runs.hpp"
#include "scratch_dir.hpp"

#ifdef DNSTRANSPORT_CLI_PATH

namespace dnstransport::hostile {
namespace {

// A process id no process has: a child that has exited and been reaped.
int reaped_pid() {
  const pid_t gone = fork();
  if (gone == 0) _exit(0);
  waitpid(gone, nullptr, 0);
  return gone;
}

TEST(cli_flags_test, a_sweep_with_early_data_runs_its_tls_points_with_it_and_udp_without) {
  const scratch files("sweep-early-data");
  const std::string json = files.path("sweep.json");
  // A count, not a duration: 40 queries, 5 per connection, so 8 connections per TLS point
  // whatever the machine's speed; every one after the first resumes and sends 0-RTT.
  const process_result r =
      run_process(cli,
                  {"sweep", "--transports", "udp,tls", "--clients", "1", "--queries-per-connection",
                   "5", "--repeats", "1", "--pause", "0", "--count", "40", "--tls-resume",
                   "--early-data", "--json", json},
                  std::chrono::seconds(60));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const sweep_result sweep = sweep_result_from_json(contents(json), json);
  ASSERT_EQ(sweep.points.size(), 2u);
  for (const auto& point : sweep.points) {
    ASSERT_EQ(point.repeats.size(), 1u);
    const run_result& run = point.repeats.front();
    if (point.point.transport.transport == transport_kind::udp) {
      EXPECT_EQ(run.early_data.offered, 0u);
    } else {
      EXPECT_GT(run.handshakes_resumed, 0u);
      EXPECT_GT(run.early_data.offered, 0u);
    }
  }
}

TEST(cli_flags_test, a_sweep_with_early_data_and_no_tls_transport_is_refused) {
  expect_refused({"sweep", "--transports", "udp,tcp", "--tls-resume", "--early-data"},
                 "--early-data applies to");
}

TEST(cli_flags_test, a_targets_pid_cgroup_and_host_are_named_as_the_target) {
  const int gone = reaped_pid();
  expect_refused({"sweep", "--target", fmt::format("a=127.0.0.1,pid={}", gone)},
                 fmt::format("--target a: pid {}: no such process", gone));
  expect_refused({"sweep", "--target", "a=127.0.0.1,cgroup=/no/such/cgroup"},
                 "--target a: cgroup /no/such/cgroup: not a readable cgroup");
  // An empty label: refused by the resolver library without sending a query anywhere.
  expect_refused({"sweep", "--transports", "udp", "--clients", "1", "--repeats", "1", "--target",
                  "a=no..such.host"},
                 "--target a: cannot resolve");
  for (const auto& arguments : std::vector<std::vector<std::string>>{
           {"sweep", "--target", fmt::format("a=127.0.0.1,pid={}", gone)},
           {"sweep", "--target", "a=127.0.0.1,cgroup=/no/such/cgroup"}}) {
    const process_result r = run_process(cli, arguments);
    EXPECT_EQ(r.err.find("--monitor-"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("--server"), std::string::npos) << r.err;
  }
}

TEST(cli_flags_test, a_tls_version_rule_names_the_flag_given) {
  expect_refused({"run", "--transport", "doq", "--tls-version", "1.2"},
                 "--tls-version 1.2: doq carries TLS 1.3 only");
  expect_refused({"run", "--transport", "doq", "--tls-max-version", "1.2"},
                 "--tls-max-version 1.2: doq carries TLS 1.3 only");
  const process_result r = run_process(cli, {"run", "--transport", "doq", "--tls-version", "1.2"});
  EXPECT_EQ(r.err.find("--tls-max-version"), std::string::npos) << r.err;
}

TEST(cli_flags_test, a_runs_warnings_name_the_flags) {
  const process_result r =
      run_process(cli, {"run", "--clients", "1", "--threads", "2", "--count", "20"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string output = r.out + r.err;
  EXPECT_NE(output.find("--threads 2 reduced to 1"), std::string::npos) << output;
  EXPECT_EQ(output.find("load_spec::"), std::string::npos) << output;
  EXPECT_EQ(output.find('\x1e'), std::string::npos) << output;
}

}  // namespace
}  // namespace dnstransport::hostile

#endif
