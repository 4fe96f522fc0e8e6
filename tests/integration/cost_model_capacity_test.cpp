// The sweep's cost model (cost_model.hpp) against a responder of known cost: `serve
// --cost-answer-us A --cost-handshake-us H` spends A us of CPU per answer and H per connection
// set-up on top of its own costs, and the model, fitted over a sweep of that responder
// measured as an operator measures a server (its own process, its CPU read by the monitor),
// must find them again within 10 %.
//
// What is compared: the responder has costs of its own (system calls, TLS), which depend a
// little on the load. The same sweep without the known cost measures them first; the fit with
// it must then give, per answer, A plus the responder's own cost per answer, and per set-up
// (a TCP connection, or a full TLS or QUIC handshake: the sweep does not resume sessions), H
// plus the responder's own cost per set-up, each within 10 % of that sum. A and H are chosen
// large against the responder's own costs (tens of times them), so a model that put the
// handshakes' CPU on the answers, or missed part of it, is far outside the bound, while the
// load's effect on the responder's own costs (and the few milliseconds per run of CPU the
// responder spends on neither, which the model has no term for) is well inside it.
//
// Suite *capacity_test: run alone and left out of the sanitizer stages (tests/CMakeLists.txt),
// as the CPU it measures would be the sanitizer's.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <dnstransport/cost_model.hpp>
#include <dnstransport/report.hpp>
#include <dnstransport/sweep_result.hpp>
#include <dnstransport/tls.hpp>

#include "cli_runs.hpp"
#include "scratch_dir.hpp"

namespace dnstransport {
namespace {

using namespace std::chrono_literals;
using hostile::cli;

// Large against the responder's own costs (some 5 us per answer, 60 us per TCP connection,
// 0.5 to 1 ms per TLS handshake, up to twice that on a loaded machine), so that their
// variation between the two sweeps stays well inside the bound.
constexpr double answer_us = 500;
constexpr double handshake_us = 20000;
constexpr double tolerance = 0.10;

struct server_costs {
  double per_answer_us = 0;
  double per_setup_us = 0;  // per TCP connection, or per full TLS/QUIC handshake
  double relative_error = 0;
};

// Sweeps the responder, in a process of its own and monitored, over `transport` (with the TLS
// library `backend`: client and responder) at 1, 10 and 100 queries per connection and 1 and
// 4 clients, and returns the server's costs the sweep fitted.
server_costs sweep_costs(const std::string& transport, const std::string& backend,
                         double answer_cost_us, double handshake_cost_us) {
  const hostile::scratch files(fmt::format("cost-{}-{}-{}", transport, backend, answer_cost_us));
  const std::string json = files.path("sweep.json");
  std::vector<std::string> arguments{"sweep",
                                     "--server-process",
                                     "--transports",
                                     transport,
                                     "--queries-per-connection",
                                     "1,10,100",
                                     "--clients",
                                     "1,4",
                                     "--outstanding",
                                     "4",
                                     "--repeats",
                                     "1",
                                     "--duration",
                                     "0.5",
                                     "--pause",
                                     "0",
                                     "--server-cost-answer-us",
                                     fmt::format("{}", answer_cost_us),
                                     "--server-cost-handshake-us",
                                     fmt::format("{}", handshake_cost_us),
                                     "--json",
                                     json,
                                     "--quiet"};
  if (!backend.empty()) {
    arguments.insert(arguments.end(), {"--tls-backend", backend, "--server-tls-backend", backend});
  }
  const auto done = hostile::run_process(cli, arguments, 60s);
  EXPECT_EQ(done.exit_code, 0) << done.err;
  if (done.exit_code != 0) return {};
  const sweep_result result = sweep_result_from_json(hostile::contents(json), json);
  const auto costs = std::find_if(result.costs.begin(), result.costs.end(),
                                  [](const auto& c) { return c.server.has_value(); });
  EXPECT_NE(costs, result.costs.end()) << "no server cost model in " << json;
  if (costs == result.costs.end()) return {};
  const cpu_cost_model& m = *costs->server;
  EXPECT_TRUE(m.per_answer.fitted);
  EXPECT_EQ(m.runs, 6u);  // every run measured the server
  // No session is resumed: every set-up is a TCP connection or a full handshake.
  EXPECT_FALSE(m.per_resumed_handshake.fitted);
  return {m.per_answer.value * 1e6, m.setup_cost() * 1e6, m.relative_error};
}

void expect_costs_recovered(const std::string& transport, const std::string& backend) {
  const server_costs own = sweep_costs(transport, backend, 0, 0);
  const server_costs known = sweep_costs(transport, backend, answer_us, handshake_us);
  const std::string figures = fmt::format(
      "{} {}: own {:.1f} us per answer, {:.1f} us per set-up (error {:.3f}); with "
      "the known cost {:.1f} and {:.1f} (error {:.3f})",
      transport, backend, own.per_answer_us, own.per_setup_us, own.relative_error,
      known.per_answer_us, known.per_setup_us, known.relative_error);
  // The known costs dominate: the check below is about them, not the responder's own.
  EXPECT_LT(own.per_answer_us, answer_us / 2) << figures;
  EXPECT_LT(own.per_setup_us, handshake_us / 2) << figures;
  const double answer_expected = answer_us + own.per_answer_us;
  const double setup_expected = handshake_us + own.per_setup_us;
  EXPECT_NEAR(known.per_answer_us, answer_expected, tolerance * answer_expected) << figures;
  EXPECT_NEAR(known.per_setup_us, setup_expected, tolerance * setup_expected) << figures;
  // The model explains each run's CPU, not only the costs on average.
  EXPECT_LT(known.relative_error, tolerance) << figures;
}

TEST(cost_model_capacity_test, recovers_the_known_costs_of_a_tcp_responder) {
  expect_costs_recovered("tcp", "");
}

// A build without a TLS library (and so, without GnuTLS, without DoQ) leaves its tests out
// rather than skipping them: CI fails a stage where a test skips.
#if defined(DNSTRANSPORT_HAVE_OPENSSL)
TEST(cost_model_capacity_test, recovers_the_known_costs_of_a_dot_responder_with_openssl) {
  expect_costs_recovered("tls", "openssl");
}
#endif

#if defined(DNSTRANSPORT_HAVE_GNUTLS)
TEST(cost_model_capacity_test, recovers_the_known_costs_of_a_dot_responder_with_gnutls) {
  expect_costs_recovered("tls", "gnutls");
}
#endif

#if defined(DNSTRANSPORT_HAVE_DOQ)
TEST(cost_model_capacity_test, recovers_the_known_costs_of_a_doq_responder) {
  expect_costs_recovered("doq", "");
}
#endif

}  // namespace
}  // namespace dnstransport
