// Runs real UDP loads over loopback against the built-in responder.
#include <dnstransport/load.hpp>

#include <gtest/gtest.h>

#include <iostream>
#include <utility>

#include <dnstransport/error.hpp>
#include <dnstransport/report.hpp>
#include <dnstransport/server.hpp>

#include <boost/json.hpp>

#include "hostile_server.hpp"
#include "misbehaviour.hpp"

#include "hostile_checks.hpp"

namespace dnstransport {
namespace {

// Long enough that no answer from the responder on loopback is ever lost to a busy machine.
constexpr double generous_timeout = 10;

// The built-in responder on an ephemeral UDP port of 127.0.0.1 only.
server_options udp_only() {
  server_options options;
  options.listen[transport_kind::udp] = endpoint{"127.0.0.1", 0};
  return options;
}

TEST(udp_load_test, every_query_answered_at_a_modest_rate) {
  server responder(udp_only());

  load_spec spec;
  spec.target.port = responder.port(transport_kind::udp);
  spec.traffic.clients = 4;
  // Room for 200 ms of a client's arrivals: a worker descheduled for a while on a busy
  // machine (a CI run's parallel tests) admits the queries that came due meanwhile at once,
  // and one past the room would be counted as not sent, which is not what this test is about
  // (with 20 it failed once in a CI run: 3,932 sent).
  spec.traffic.outstanding = 200;
  spec.traffic.rate = 4000;
  spec.traffic.count = 4000;
  spec.traffic.timeout_seconds = generous_timeout;
  const run_result r = run_load(spec);

  EXPECT_EQ(r.queries_sent, 4000u);
  EXPECT_EQ(r.responses_received, r.queries_sent);
  EXPECT_EQ(r.lost, 0u);
  EXPECT_EQ(r.malformed + r.mismatched + r.unexpected, 0u);
  EXPECT_EQ(queries_ended(r), r.queries_sent);
  EXPECT_EQ(r.latency.count(), r.responses_received);
  // 1000 queries per client at 1000/s: the last is due 0.999 s or later after the start, so
  // the rate is never exceeded; a busy machine may only make it slower.
  EXPECT_GE(r.elapsed_seconds, 0.999);
  EXPECT_LE(r.qps, 4000 / 0.999);
  EXPECT_DOUBLE_EQ(r.qps, 4000 / r.elapsed_seconds);  // answers over the window
  EXPECT_EQ(r.rcodes[0], r.responses_received);       // the responder answers NOERROR
  EXPECT_GT(r.client_cpu_seconds, 0);
  responder.stop();
  EXPECT_EQ(responder.stats().queries[transport_kind::udp], r.queries_sent);
}

TEST(udp_load_test, count_mode_sends_exactly_count) {
  server_options options;
  options.listen[transport_kind::udp] = endpoint{"127.0.0.1", 0};
  options.mode = answer_mode::echo;
  server responder(options);

  load_spec spec;
  spec.target.port = responder.port(transport_kind::udp);
  spec.traffic.clients = 3;
  spec.generator.threads = 2;
  spec.traffic.outstanding = 50;
  spec.traffic.count = 10000;
  spec.traffic.timeout_seconds = generous_timeout;
  const run_result r = run_load(spec);
  EXPECT_EQ(r.queries_sent, 10000u);
  EXPECT_EQ(r.responses_received, 10000u);
  EXPECT_EQ(r.threads, 2u);
  responder.stop();
  EXPECT_EQ(responder.stats().queries[transport_kind::udp], 10000u);
}

TEST(udp_load_test, nothing_listening_is_loss_not_a_crash) {
  // Bind and close a responder to find a port that is free now.
  std::uint16_t port = 0;
  {
    server_options options;
    options.listen[transport_kind::udp] = endpoint{"127.0.0.1", 0};
    server probe(options);
    port = probe.port(transport_kind::udp);
  }
  load_spec spec;
  spec.target.port = port;
  spec.traffic.clients = 2;
  spec.traffic.outstanding = 5;
  spec.traffic.count = 40;
  spec.traffic.timeout_seconds = 0.3;
  const run_result r = hostile::run_checked(spec).result;
  EXPECT_EQ(r.responses_received, 0u);
  EXPECT_EQ(r.queries_sent, r.lost);
  EXPECT_GT(r.lost, 0u);
}

TEST(udp_load_test, warmup_is_left_out_of_the_figures) {
  server responder(udp_only());

  // 0.5 s of warm-up at 2000 queries/s, then 1000 measured queries: the count is of
  // measured queries, and the warm-up's are sent but counted nowhere.
  load_spec spec;
  spec.target.port = responder.port(transport_kind::udp);
  spec.traffic.rate = 2000;
  spec.traffic.warmup_seconds = 0.5;
  spec.traffic.count = 1000;
  spec.traffic.timeout_seconds = generous_timeout;
  const run_result r = run_load(spec);
  responder.stop();
  const std::uint64_t warmup_queries =
      responder.stats().queries[transport_kind::udp] - r.queries_sent;
  EXPECT_EQ(r.queries_sent, 1000u);
  EXPECT_EQ(r.responses_received, 1000u);
  EXPECT_EQ(r.latency.count(), 1000u);
  // The pacing allows at most 2000 x 0.5 + 1 queries in the warm-up; a busy machine fewer.
  EXPECT_GT(warmup_queries, 0u);
  EXPECT_LE(warmup_queries, 1001u);
  // The window starts after the warm-up; query k is due k / 2000 s after the start, so the
  // last measured one not before (warm-up queries + 999) / 2000 s, and the window lasts at
  // least that minus the warm-up (about 0.5 s; less when a busy machine sent fewer queries
  // in the warm-up).
  const double last_due = static_cast<double>(warmup_queries + 999) / 2000;
  EXPECT_GE(r.elapsed_seconds, last_due - 0.5 - 1e-6) << warmup_queries << " in the warm-up";
}

// 100 clients at 1 query/s each: client i sends its first query i/100 s after the start,
// so 100 queries (one per client) take a second, not one burst of 100 at the start.
TEST(udp_load_test, paced_clients_are_spread_over_the_interval) {
  server responder(udp_only());

  load_spec spec;
  spec.target.port = responder.port(transport_kind::udp);
  spec.traffic.clients = 100;
  spec.traffic.outstanding = 1;
  spec.traffic.rate = 100;
  spec.traffic.count = 100;
  spec.traffic.timeout_seconds = generous_timeout;
  const run_result r = run_load(spec);
  EXPECT_EQ(r.queries_sent, 100u);
  EXPECT_EQ(r.responses_received, r.queries_sent);
  EXPECT_GE(r.elapsed_seconds, 0.99);
}

TEST(udp_load_test, one_datagram_per_call_still_answers_everything) {
  server responder(udp_only());

  load_spec spec;
  spec.target.port = responder.port(transport_kind::udp);
  spec.traffic.clients = 2;
  spec.traffic.outstanding = 50;
  spec.traffic.count = 2000;
  spec.traffic.timeout_seconds = generous_timeout;
  spec.generator.gather_writes = false;
  const run_result r = run_load(spec);
  EXPECT_EQ(r.queries_sent, 2000u);
  EXPECT_EQ(r.responses_received, 2000u);
  EXPECT_EQ(responder.stats().queries[transport_kind::udp], 2000u);
}

// One query in flight: each answer costs exactly one wake-up (the socket readable), one
// recvmmsg (it returns the one datagram, fewer than a batch, so no second call) and one
// sendmmsg (the next query). Besides those: the socket's set-up (socket, connect, ioctl,
// three setsockopt: two buffer sizes, receive stamps) and the worker's 10 ms ticks.
TEST(udp_load_test, one_query_in_flight_costs_a_wakeup_and_two_calls_per_answer) {
  server responder(udp_only());

  load_spec spec;
  spec.target.port = responder.port(transport_kind::udp);
  spec.traffic.outstanding = 1;
  spec.traffic.count = 2000;
  spec.traffic.timeout_seconds = generous_timeout;
  const run_result r = run_load(spec);
  ASSERT_EQ(r.responses_received, 2000u);
  EXPECT_GE(r.generator.syscalls, 2 * 2000u);
  EXPECT_LE(r.generator.syscalls, 2 * 2000u + 6);
  EXPECT_EQ(r.generator.syscalls_would_block, 0u);
  const auto ticks = static_cast<std::uint64_t>(r.elapsed_seconds * 100) + 3;
  EXPECT_GE(r.generator.wakeups, 2000u);
  EXPECT_LE(r.generator.wakeups, 2000u + ticks);
  // The worker sleeps while each answer is on its way (unless it came before the wait), and
  // each sleep ends in a wake-up: the kernel's count of its sleeps is measured, not zero.
  EXPECT_GT(r.generator.sleeps, 0u);
  EXPECT_LE(r.generator.sleeps, r.generator.wakeups + r.generator.wakeups / 2);
}

// 100 in flight: sends go 32 to a sendmmsg and answers come up to 32 to a recvmmsg, so an
// answer costs at least 2/32 of a call, and far fewer than the two calls of one at a time.
TEST(udp_load_test, gathered_sends_and_batched_receives_cost_well_under_two_calls_per_answer) {
  server responder(udp_only());

  load_spec spec;
  spec.target.port = responder.port(transport_kind::udp);
  spec.traffic.outstanding = 100;
  spec.traffic.count = 20000;
  spec.traffic.timeout_seconds = generous_timeout;
  const run_result r = run_load(spec);
  ASSERT_EQ(r.responses_received, 20000u);
  EXPECT_GE(r.syscalls_per_answer(), 2.0 / 32);
  EXPECT_LT(r.syscalls_per_answer(), 1.5);
  EXPECT_LT(r.wakeups_per_answer(), 1);
}

// The warm-up's calls (thousands here, and the socket's set-up) are left out: what remains is
// two calls per measured answer, give or take the answer read at the window's start to a
// query sent in the warm-up.
TEST(udp_load_test, warmup_calls_are_left_out_of_the_generator_figures) {
  server responder(udp_only());

  load_spec spec;
  spec.target.port = responder.port(transport_kind::udp);
  spec.traffic.outstanding = 1;
  spec.traffic.warmup_seconds = 0.3;
  spec.traffic.duration_seconds = 0.3;
  spec.traffic.timeout_seconds = generous_timeout;
  const run_result r = run_load(spec);
  responder.stop();
  ASSERT_GT(r.responses_received, 0u);
  EXPECT_GT(responder.stats().queries[transport_kind::udp], r.queries_sent + 10)
      << "no warm-up to leave out";
  EXPECT_GE(r.generator.syscalls + 2, 2 * r.responses_received);
  EXPECT_LE(r.generator.syscalls, 2 * r.responses_received + 2);
}

// The same closed-loop load with coalesced receiving off (a closed loop's default) and on.
std::pair<run_result, run_result> udp_runs_without_and_with_coalescing() {
  server responder(udp_only());

  load_spec spec;
  spec.target.port = responder.port(transport_kind::udp);
  spec.traffic.clients = 2;
  spec.traffic.outstanding = 100;
  spec.traffic.count = 20000;
  spec.traffic.timeout_seconds = generous_timeout;
  EXPECT_FALSE(spec.generator.coalesce_us.has_value());  // a closed loop's default: off
  run_result off = run_load(spec);
  spec.generator.coalesce_us = generator_settings::default_coalesce_us;
  run_result on = run_load(spec);
  return {std::move(off), std::move(on)};
}

// Coalesced receiving: every query is still answered, each latency runs from the send to
// the kernel's receive stamp (after the send, never later than the read), and the setting
// is kept in the JSON. Whether a read was put off depends on the latency this machine
// measures (coalescing_test checks that it engages against a slow server).
TEST(udp_load_test, coalesced_reads_answer_everything) {
  const auto [off, on] = udp_runs_without_and_with_coalescing();
  for (const run_result* r : {&off, &on}) {
    ASSERT_EQ(r->responses_received, 20000u);
    EXPECT_EQ(queries_ended(*r), r->queries_sent);
    EXPECT_EQ(r->latency.count(), r->responses_received);
    EXPECT_GT(r->latency.min(), 0u);
    EXPECT_LE(r->latency.max(), static_cast<std::uint64_t>(r->elapsed_seconds * 1e9));
  }
  EXPECT_EQ(off.coalesce_us, 0u);
  EXPECT_EQ(off.generator.reads_delayed, 0u);
  EXPECT_EQ(on.coalesce_us, 1000u);
  EXPECT_LE(on.generator.reads_delayed, on.responses_received);
  std::cout << "[ coalesce ] wake-ups per answer: off " << off.wakeups_per_answer() << ", on "
            << on.wakeups_per_answer() << "; reads delayed " << on.generator.reads_delayed << "\n";

  const boost::json::object json = boost::json::parse(to_json(on)).as_object();
  EXPECT_EQ(json.at("coalesce_us").to_number<unsigned>(), 1000u);
  EXPECT_EQ(run_result_from_json(to_json(on), "test").coalesce_us, 1000u);
  EXPECT_EQ(run_result_from_json(to_json(off), "test").coalesce_us, 0u);
}

// A delay of more than 10 ms would only hold the load back.
TEST(udp_load_test, coalescing_is_refused_beyond_10_ms) {
  load_spec spec;
  spec.generator.coalesce_us = 10001;
  try {
    run_load(spec);
    ADD_FAILURE() << "no error";
  } catch (const setup_error& e) {
    EXPECT_NE(std::string(e.what()).find("load_spec::generator.coalesce_us must be at most"),
              std::string::npos)
        << e.what();
  }
}

TEST(udp_load_test, stop_flag_ends_the_run_early_with_results) {
  server responder(udp_only());

  std::atomic<bool> stop{false};
  load_spec spec;
  spec.target.port = responder.port(transport_kind::udp);
  spec.traffic.duration_seconds = 30;
  spec.traffic.rate = 1000;
  spec.stop = &stop;
  spec.output.progress_interval_seconds = 0.1;
  int calls = 0;
  spec.output.on_progress = [&](const load_progress&) {
    if (++calls == 3) stop = true;
  };
  const auto started = std::chrono::steady_clock::now();
  const run_result r = run_load(spec);
  // Stopped after about 0.3 s of a 30 s run.
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
  EXPECT_TRUE(r.interrupted);
  EXPECT_GT(r.responses_received, 0u);
  EXPECT_EQ(queries_ended(r), r.queries_sent);
}

// The JSON of a run whose figures are known beforehand: 2000 queries, of which the hostile
// responder answers the even-numbered ones and truncates the others. The file carries
// those figures under the documented keys, and reading it back gives them again.
TEST(udp_load_test, json_carries_the_known_figures_and_reads_back) {
  hostile::hostile_server responder({}, hostile::truncated_every_other());
  load_spec spec;
  spec.target.port = responder.port();
  spec.traffic.clients = 3;
  spec.traffic.outstanding = 7;
  spec.traffic.count = 2000;
  spec.traffic.timeout_seconds = generous_timeout;
  const run_result r = hostile::run_checked(spec).result;
  const std::string text = to_json(r);

  const boost::json::object json = boost::json::parse(text).as_object();
  const auto count = [&](const boost::json::object& o, const char* key) {
    return o.at(key).to_number<std::uint64_t>();
  };
  EXPECT_EQ(json.at("schema").as_string(), "dnstransport.run/1");
  EXPECT_EQ(json.at("server").as_string(), "127.0.0.1");
  EXPECT_EQ(count(json, "port"), responder.port());
  EXPECT_EQ(json.at("transport").as_string(), "udp");
  EXPECT_EQ(count(json, "clients"), 3u);
  EXPECT_EQ(count(json, "outstanding"), 7u);
  EXPECT_EQ(count(json, "threads"), 1u);
  EXPECT_EQ(count(json.at("query_set").as_object(), "count"), default_queries().size());
  EXPECT_EQ(count(json, "queries_sent"), 2000u);
  EXPECT_EQ(count(json, "responses_received"), 1000u);
  EXPECT_EQ(count(json, "truncated"), 1000u);
  for (const char* zero :
       {"lost", "lost_on_close", "malformed", "mismatched", "abandoned", "oversized", "tc_retried",
        "tc_retry_answered", "out_of_order", "late", "unexpected", "duplicates"}) {
    EXPECT_EQ(count(json, zero), 0u) << zero;
  }
  EXPECT_FALSE(json.at("interrupted").as_bool());
  const auto& rcodes = json.at("rcodes").as_object();
  ASSERT_EQ(rcodes.size(), 1u) << text;
  EXPECT_EQ(count(rcodes, "NOERROR"), 1000u);
  // One latency per answer, and the histogram holds exactly those.
  const auto& latency = json.at("latency_ns").as_object();
  EXPECT_EQ(count(latency, "count"), 1000u);
  std::uint64_t in_buckets = 0;
  for (const auto& bucket : latency.at("histogram").as_array()) {
    in_buckets += bucket.as_array().at(1).to_number<std::uint64_t>();
  }
  EXPECT_EQ(in_buckets, 1000u);
  EXPECT_LE(count(latency, "min"), count(latency, "p50"));
  EXPECT_LE(count(latency, "p50"), count(latency, "p99"));
  EXPECT_LE(count(latency, "p99"), count(latency, "max"));
  // No answer took longer than the run.
  EXPECT_LE(count(latency, "max"), static_cast<std::uint64_t>(r.elapsed_seconds * 1e9) + 1);
  EXPECT_EQ(json.at("elapsed_seconds").to_number<double>(), r.elapsed_seconds);
  EXPECT_NEAR(json.at("qps").to_number<double>(), 1000 / r.elapsed_seconds, 1e-6 * r.qps);
  EXPECT_EQ(count(json.at("connections").as_object(), "opened"), 0u);

  const run_result back = run_result_from_json(text, "test");
  EXPECT_EQ(back.queries_sent, 2000u);
  EXPECT_EQ(back.responses_received, 1000u);
  EXPECT_EQ(back.truncated, 1000u);
  EXPECT_EQ(back.rcodes[0], 1000u);
  EXPECT_EQ(back.port, responder.port());
  EXPECT_EQ(back.clients, 3u);
  EXPECT_EQ(back.latency.count(), 1000u);
  EXPECT_EQ(back.latency.percentile(50), r.latency.percentile(50));
  EXPECT_EQ(back.latency.max(), r.latency.max());
  EXPECT_EQ(to_json(back), text);
}

TEST(udp_load_test, bad_specs_are_refused_before_sending) {
  load_spec spec;
  spec.traffic.clients = 0;
  EXPECT_THROW(run_load(spec), setup_error);
  spec.traffic.clients = 1;
  spec.connections.queries_per_connection = 10;
  EXPECT_THROW(run_load(spec), setup_error);
  spec.connections.queries_per_connection = 0;
  spec.target.server = "no-such-host.invalid";
  EXPECT_THROW(run_load(spec), setup_error);
}

}  // namespace
}  // namespace dnstransport
