// `run --client-rate --idle` as a user types it: 4 TCP clients at 5 queries per second each
// with a 100 ms idle timeout against the built-in responder; the table shows the per-client
// rate, the idle closes and the connection rate, and the JSON holds the same counts. (The
// flags' usage errors are cli_test's usage cases.)
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include <dnstransport/report.hpp>

#include "child_process.hpp"
#include "scratch_dir.hpp"

#ifdef DNSTRANSPORT_CLI_PATH

namespace dnstransport::hostile {
namespace {

using namespace std::chrono_literals;

TEST(cli_idle_clients_test, client_rate_and_idle_give_a_connection_per_query) {
  const scratch files("cli-idle");
  const std::string json = files.path("idle.json");
  const process_result p = run_process(
      DNSTRANSPORT_CLI_PATH,
      {"run", "--transport", "tcp", "--clients", "4", "--outstanding", "1", "--client-rate", "5",
       "--idle", "0.1", "--duration", "1", "--timeout", "10", "--json", json},
      30s);
  ASSERT_FALSE(p.timed_out);
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_NE(p.out.find("20 queries/s (5 per client)"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("closed idle (--idle 0.1 s)"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("connection rate"), std::string::npos) << p.out;

  // 4 clients × 5 queries in the second, each on a connection of its own: the four gaps of
  // 200 ms per client outlast the 100 ms idle timeout. Client i's last query leaves at
  // 800 + 50 i ms: clients 0 and 1 close that connection idle before the end, clients 2 and 3
  // (idle from 1,000 ms on) keep it until the run ends.
  const run_result r = run_result_from_json(contents(json), json);
  EXPECT_EQ(r.client_rate, 5.0);
  EXPECT_EQ(r.rate, 20.0);
  EXPECT_EQ(r.idle_seconds, 0.1);
  EXPECT_EQ(r.queries_sent, 20u);
  EXPECT_EQ(r.responses_received, 20u);
  EXPECT_EQ(r.connections.opened, 20u);
  // 18 and 2 unless a stalled worker came to client 0 or 1 after the end (50 ms late or more).
  EXPECT_EQ(r.connections.closed_idle + r.connections.closed_by_client, 20u);
  EXPECT_GE(r.connections.closed_idle, 16u);
  EXPECT_LE(r.connections.closed_idle, 18u);
  EXPECT_NE(p.out.find(std::to_string(r.connections.closed_idle) + " closed idle (--idle 0.1 s)"),
            std::string::npos)
      << p.out;
  // A client's first four connections closed idle before its next one opened, so inside the
  // 1 s of sending, each after 0.1 s idle at least: 16 x 0.1 s of open connections over 1 s,
  // a mean of 1.6 or more, and so a maximum of 2 or more; at most one a client at a time.
  EXPECT_GE(r.connections.concurrent_mean, 16 * 0.1 - 1e-9);
  EXPECT_LE(r.connections.concurrent_mean, static_cast<double>(r.connections.concurrent_max));
  EXPECT_GE(r.connections.concurrent_max, 2u);
  EXPECT_LE(r.connections.concurrent_max, 4u);
}

}  // namespace
}  // namespace dnstransport::hostile

#endif
