// Runs real UDP loads over loopback against the built-in responder.
#include <dnstransport/load.hpp>

#include <gtest/gtest.h>

#include <dnstransport/error.hpp>
#include <dnstransport/report.hpp>
#include <dnstransport/server.hpp>

namespace dnstransport {
namespace {

std::uint64_t accounted(const run_result& r) {
  return r.responses_received + r.lost + r.lost_on_close + r.malformed + r.mismatched + r.abandoned;
}

// The built-in responder on an ephemeral UDP port of 127.0.0.1 only.
server_options udp_only() {
  server_options options;
  options.udp = endpoint{"127.0.0.1", 0};
  return options;
}

TEST(udp_load_test, every_query_answered_at_a_modest_rate) {
  server responder(udp_only());

  load_spec spec;
  spec.port = responder.udp_port();
  spec.clients = 4;
  spec.outstanding = 20;
  spec.rate = 4000;
  spec.duration_seconds = 1;
  const run_result r = run_load(spec);

  EXPECT_GT(r.queries_sent, 3000u);
  EXPECT_EQ(r.responses_received, r.queries_sent);
  EXPECT_EQ(r.lost, 0u);
  EXPECT_EQ(r.malformed + r.mismatched + r.unexpected, 0u);
  EXPECT_EQ(accounted(r), r.queries_sent);
  EXPECT_EQ(r.latency.count(), r.responses_received);
  EXPECT_NEAR(r.qps, 4000, 600);
  EXPECT_EQ(r.rcodes[0], r.responses_received);  // the responder answers NOERROR
  EXPECT_GT(r.client_cpu_seconds, 0);
  EXPECT_GE(responder.stats().udp_queries, r.queries_sent);
}

TEST(udp_load_test, count_mode_sends_exactly_count) {
  server_options options;
  options.udp = endpoint{"127.0.0.1", 0};
  options.mode = answer_mode::echo;
  server responder(options);

  load_spec spec;
  spec.port = responder.udp_port();
  spec.clients = 3;
  spec.threads = 2;
  spec.outstanding = 50;
  spec.count = 10000;
  const run_result r = run_load(spec);
  EXPECT_EQ(r.queries_sent, 10000u);
  EXPECT_EQ(r.responses_received, 10000u);
  EXPECT_EQ(r.threads, 2u);
}

TEST(udp_load_test, nothing_listening_is_loss_not_a_crash) {
  // Bind and close a responder to find a port that is free now.
  std::uint16_t port = 0;
  {
    server_options options;
    options.udp = endpoint{"127.0.0.1", 0};
    server probe(options);
    port = probe.udp_port();
  }
  load_spec spec;
  spec.port = port;
  spec.clients = 2;
  spec.outstanding = 5;
  spec.count = 40;
  spec.timeout_seconds = 0.3;
  const run_result r = run_load(spec);
  EXPECT_EQ(r.responses_received, 0u);
  EXPECT_EQ(r.queries_sent, r.lost);
  EXPECT_GT(r.lost, 0u);
}

TEST(udp_load_test, warmup_is_left_out_of_the_figures) {
  server responder(udp_only());

  load_spec spec;
  spec.port = responder.udp_port();
  spec.rate = 2000;
  spec.warmup_seconds = 0.5;
  spec.duration_seconds = 0.5;
  const run_result r = run_load(spec);
  // About half of what the responder answered belongs to the warm-up.
  EXPECT_LT(r.queries_sent, responder.stats().udp_queries * 3 / 4);
  EXPECT_EQ(r.responses_received, r.queries_sent);
  EXPECT_NEAR(r.elapsed_seconds, 0.5, 0.1);
}

// 100 clients at 1 query/s each: their queries are spread over the second, so half a
// second carries about half of them, not one burst of 100 at the start.
TEST(udp_load_test, paced_clients_are_spread_over_the_interval) {
  server responder(udp_only());

  load_spec spec;
  spec.port = responder.udp_port();
  spec.clients = 100;
  spec.outstanding = 1;
  spec.rate = 100;
  spec.duration_seconds = 0.5;
  const run_result r = run_load(spec);
  EXPECT_NEAR(static_cast<double>(r.queries_sent), 50, 8);
  EXPECT_EQ(r.responses_received, r.queries_sent);
}

TEST(udp_load_test, one_datagram_per_call_still_answers_everything) {
  server responder(udp_only());

  load_spec spec;
  spec.port = responder.udp_port();
  spec.clients = 2;
  spec.outstanding = 50;
  spec.count = 2000;
  spec.gather_writes = false;
  const run_result r = run_load(spec);
  EXPECT_EQ(r.queries_sent, 2000u);
  EXPECT_EQ(r.responses_received, 2000u);
  EXPECT_EQ(responder.stats().udp_queries, 2000u);
}

TEST(udp_load_test, stop_flag_ends_the_run_early_with_results) {
  server responder(udp_only());

  std::atomic<bool> stop{false};
  load_spec spec;
  spec.port = responder.udp_port();
  spec.duration_seconds = 30;
  spec.rate = 1000;
  spec.stop = &stop;
  spec.progress_interval_seconds = 0.1;
  int calls = 0;
  spec.on_progress = [&](const load_progress&) {
    if (++calls == 3) stop = true;
  };
  const auto started = std::chrono::steady_clock::now();
  const run_result r = run_load(spec);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(2));
  EXPECT_TRUE(r.interrupted);
  EXPECT_GT(r.responses_received, 0u);
  EXPECT_EQ(accounted(r), r.queries_sent);
}

TEST(udp_load_test, json_round_trip_keeps_every_figure) {
  server responder(udp_only());
  load_spec spec;
  spec.port = responder.udp_port();
  spec.count = 2000;
  const run_result r = run_load(spec);
  const run_result back = run_result_from_json(to_json(r), "test");
  EXPECT_EQ(to_json(back), to_json(r));
  EXPECT_EQ(format_table(back), format_table(r));
}

TEST(udp_load_test, bad_specs_are_refused_before_sending) {
  load_spec spec;
  spec.clients = 0;
  EXPECT_THROW(run_load(spec), setup_error);
  spec.clients = 1;
  spec.queries_per_connection = 10;
  EXPECT_THROW(run_load(spec), setup_error);
  spec.queries_per_connection = 0;
  spec.server = "no-such-host.invalid";
  EXPECT_THROW(run_load(spec), setup_error);
}

}  // namespace
}  // namespace dnstransport
