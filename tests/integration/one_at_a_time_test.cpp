// A server that answers a connection's queries strictly one at a time (no RFC 7766
// pipelining) is named in a sweep's findings, and one that works on them together is not,
// though both hold every answer the same time without spending CPU on it: what tells them
// apart is the spacing and order of the answers on each connection, counted by the
// generator (queued_answers, one_at_a_time_answers), with the monitored server's CPU idle.
// Orders and counts only: the hold is long against scheduling noise.
#include <dnstransport/sweep.hpp>

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "hostile_server.hpp"
#include "misbehaviour.hpp"
#include "stream_scripts.hpp"

namespace dnstransport::hostile {
namespace {

// How long each answer is held: long against the scheduling noise of a loaded machine, so a
// held answer is never taken for one sent at once.
constexpr milliseconds hold{40};

// Sweeps TCP and DoT (OpenSSL) against two hostile responders (one per transport) running
// `script` or `messages`, with 2 clients of 4 queries in flight on persistent connections,
// monitoring this process (the responders' threads and the generator, which at these rates
// spend a few percent of a CPU).
template <typename Script>
sweep_result sweep_against(const Script& script) {
  hostile_options tcp_options;
  tcp_options.transport = transport_kind::tcp;
  hostile_server tcp(tcp_options, script);
  hostile_options tls_options;
  tls_options.transport = transport_kind::tls;
  hostile_server tls(tls_options, script);
  sweep_plan plan;
  plan.ports[transport_kind::tcp] = tcp.port();
  plan.ports[transport_kind::tls] = tls.port();
  plan.transports = {{transport_kind::tcp, std::nullopt},
                     {transport_kind::tls, tls_backend::openssl}};
  plan.clients = {2};
  plan.queries_per_connection = {0};
  plan.repeats = 1;
  plan.duration_seconds = 1.5;
  plan.pause_seconds = 0;
  plan.base.traffic.outstanding = 4;
  plan.base.traffic.timeout_seconds = 5;
  plan.base.monitor.pids = {static_cast<int>(getpid())};
  return run_sweep(plan);
}

const sweep_finding* finding_of(const sweep_result& r, std::string_view kind) {
  const auto at = std::find_if(r.findings.begin(), r.findings.end(),
                               [kind](const sweep_finding& f) { return f.kind == kind; });
  return at == r.findings.end() ? nullptr : &*at;
}

// The generator must read each answer as it comes: a generator that reads late (a sanitizer
// build, a loaded machine) takes two answers of a connection in one read, with one receive
// stamp, and the second no longer came a whole answer time after the first (a ThreadSanitizer
// run counted 39 of 78 over TCP). A busy generator hides the behaviour and never invents it
// (the tests below); that it is named needs a generator with time to spare, so this test is a
// `capacity` test (tests/CMakeLists.txt): alone, in the Release stage only.
TEST(one_at_a_time_capacity_test, a_server_answering_each_connection_one_query_at_a_time_is_named) {
  const sweep_result r = sweep_against(one_at_a_time(hold));
  ASSERT_EQ(r.points.size(), 2u);
  for (const auto& p : r.points) {
    ASSERT_EQ(p.repeats.size(), 1u);
    const run_result& run = p.repeats[0];
    const std::string what = sweep_transport_name(p.point.transport);
    EXPECT_EQ(run.out_of_order, 0u) << what;
    EXPECT_GE(run.queued_answers, 20u) << what;
    // Every queued answer came a whole hold after the one before it.
    EXPECT_EQ(run.one_at_a_time_answers, run.queued_answers) << what;
    EXPECT_LE(run.queued_answers, run.responses_received) << what;
    ASSERT_TRUE(run.server_usage.monitored()) << what;
  }
  const auto* serial = finding_of(r, "one_at_a_time");
  ASSERT_NE(serial, nullptr);
  EXPECT_NE(serial->text.find("one at a time"), std::string::npos) << serial->text;
  EXPECT_NE(serial->text.find("TCP: "), std::string::npos) << serial->text;
  EXPECT_NE(serial->text.find("DoT: "), std::string::npos) << serial->text;
}

TEST(one_at_a_time_test, a_server_answering_a_connections_queries_together_is_not_named) {
  // The same hold, but every query's answer held from its own arrival: the queries of a
  // connection wait together, and their answers come close behind each other.
  const sweep_result r = sweep_against(answer_all(hold));
  ASSERT_EQ(r.points.size(), 2u);
  for (const auto& p : r.points) {
    ASSERT_EQ(p.repeats.size(), 1u);
    const run_result& run = p.repeats[0];
    const std::string what = sweep_transport_name(p.point.transport);
    EXPECT_GE(run.queued_answers, 20u) << what;
    // Answers a whole hold apart: at most one per 3/4 of a hold, against 4 answers per hold.
    EXPECT_LT(run.one_at_a_time_answers * 2, run.queued_answers) << what;
  }
  EXPECT_EQ(finding_of(r, "one_at_a_time"), nullptr);
}

TEST(one_at_a_time_test, answers_that_overtake_others_are_not_one_at_a_time) {
  // Holds from 40 to 80 ms: later queries' answers overtake earlier ones.
  const sweep_result r = sweep_against(answer_all_spread(hold, 2 * hold));
  for (const auto& p : r.points) {
    const run_result& run = p.repeats.at(0);
    EXPECT_GT(run.out_of_order, 0u) << sweep_transport_name(p.point.transport);
  }
  EXPECT_EQ(finding_of(r, "one_at_a_time"), nullptr);
}

}  // namespace
}  // namespace dnstransport::hostile
