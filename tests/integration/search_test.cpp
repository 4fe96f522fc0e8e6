// `search` against a responder of known capacity (server_options::rate_limit): it finds the
// limit within 10 % over UDP (queries over it are dropped) and 15 % over TCP and TLS (they
// wait), and it stops on time, on request, and on bad input.
// The tests that find a capacity (finds_*, a_latency_bound_*, a_searched_sweep_*) measure a
// rate: they run alone (RUN_SERIAL) and in the Release build only (label capacity; the
// sanitizer stages leave them out, as their figure would be the sanitizer's cost), so that
// another test or a sanitizer cannot stall a step under the limit into losing queries. The
// others (the stop, the refusals) hold on any machine, and run everywhere.
#include <dnstransport/search.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>

#include <dnstransport/error.hpp>
#include <dnstransport/report.hpp>
#include <dnstransport/server.hpp>
#include <dnstransport/sweep.hpp>

namespace dnstransport {
namespace {

using namespace std::chrono_literals;

constexpr double responder_limit = 4000;

search_spec search_of(transport_kind transport, std::uint16_t port) {
  search_spec spec;
  spec.load.target.transport = transport;
  spec.load.target.port = port;
  spec.load.traffic.clients = 2;
  spec.load.traffic.outstanding = 50;
  spec.load.traffic.timeout_seconds = 1;
  spec.load.output.interval_seconds = 0;
  spec.load.tls.backend = tls_backend::gnutls;
  spec.start_rate = responder_limit / 4;
  spec.step_seconds = 0.5;
  spec.settle_seconds = 0.2;
  spec.repeats = 2;
  spec.precision = 0.04;
  return spec;
}

struct limited_server {
  explicit limited_server(transport_kind transport) : responder(options(transport)) {}
  static server_options options(transport_kind transport) {
    server_options o;
    o.rate_limit = responder_limit;
    // UDP: 20 ms' worth (80 queries, 4 % of a step). A sanitizer-built generator stalls for
    // 10-15 ms at times and then sends what it owes at once (under ThreadSanitizer at 3,600
    // q/s, 20-35 of 1,800 queries were dropped with the default 5 ms), while a step 10 % over
    // the limit (200 queries too many) still fails. Streams wait for their tokens instead of
    // losing queries: they keep the default, which the latency bound below relies on.
    if (transport == transport_kind::udp) o.rate_limit_burst_seconds = 0.02;
    o.listen[transport] = endpoint{"127.0.0.1", 0};
    return o;
  }
  server responder;
};

void expect_found(transport_kind transport, double tolerance) {
  limited_server s(transport);
  const search_result r = run_search(search_of(transport, s.responder.port(transport)));
  EXPECT_EQ(r.end_reason, "converged");
  EXPECT_NEAR(r.max_rate, responder_limit, responder_limit * tolerance)
      << transport_name(transport);
  EXPECT_GT(r.failed_rate, r.max_rate);
  EXPECT_LE(r.failed_rate - r.max_rate, r.max_rate * 0.04 + 1e-9);
  // The ramp doubled from 1,000 to the first failure, then bisected.
  ASSERT_GE(r.steps.size(), 4u);
  EXPECT_EQ(r.steps[0].rate, responder_limit / 4);
  EXPECT_EQ(r.steps[1].rate, responder_limit / 2);
  EXPECT_TRUE(r.steps[0].passed);
  // Every step is accounted for, and the last bisection rate that passed passed twice.
  unsigned passes_at_max = 0;
  for (const auto& step : r.steps) {
    EXPECT_EQ(step.passed, step.verdict == "pass");
    EXPECT_EQ(step.scheduled, step.run.queries_scheduled());
    EXPECT_EQ(step.passed, step.answered == step.scheduled) << step.verdict;
    if (step.rate == r.max_rate && step.passed) ++passes_at_max;
  }
  EXPECT_GE(passes_at_max, 2u);
}

TEST(search_test, finds_the_limit_of_a_udp_server_within_10_percent) {
  expect_found(transport_kind::udp, 0.10);
}

TEST(search_test, finds_the_limit_of_a_tcp_server_within_15_percent) {
  expect_found(transport_kind::tcp, 0.15);
}

TEST(search_test, finds_the_limit_of_a_tls_server_within_15_percent) {
  expect_found(transport_kind::tls, 0.15);
}

// A p99 bound fails steps whose latency is over it, whatever was answered: against a TCP
// server that delays answers over its limit, the bound keeps the result at or under it.
TEST(search_test, a_latency_bound_fails_slow_steps) {
  limited_server s(transport_kind::tcp);
  search_spec spec = search_of(transport_kind::tcp, s.responder.port(transport_kind::tcp));
  spec.max_p99_ms = 20;
  spec.load.traffic.outstanding = 500;  // room for a long queue: only the latency bound fails it
  const search_result r = run_search(spec);
  EXPECT_LE(r.max_rate, responder_limit * 1.05);
  bool latency_failure = false;
  for (const auto& step : r.steps) {
    if (!step.passed && step.verdict.starts_with("p99")) latency_failure = true;
    if (step.passed) {
      EXPECT_LE(step.p99_ms, 20);
    }
  }
  EXPECT_TRUE(latency_failure);
}

// Ctrl-C keeps the steps done; --max-time starts no step that would end after it.
TEST(search_test, stop_and_max_time_end_the_search_with_its_steps) {
  limited_server s(transport_kind::udp);
  std::atomic<bool> stop{false};
  search_spec spec = search_of(transport_kind::udp, s.responder.port(transport_kind::udp));
  spec.stop = &stop;
  unsigned steps = 0;
  spec.on_step = [&](const search_step&) {
    if (++steps == 2) stop = true;
  };
  const search_result stopped = run_search(spec);
  EXPECT_TRUE(stopped.interrupted);
  EXPECT_EQ(stopped.end_reason, "interrupted");
  ASSERT_EQ(stopped.steps.size(), 2u);
  // The highest rate of a step that passed (responder_limit / 2 where the machine keeps up
  // with the second step; a loaded sanitizer build may fail it).
  double passed = 0;
  for (const auto& step : stopped.steps) {
    if (step.passed) passed = std::max(passed, step.rate);
  }
  EXPECT_EQ(stopped.max_rate, passed);
  EXPECT_EQ(stopped.steps[1].rate, responder_limit / 2);

  spec = search_of(transport_kind::udp, s.responder.port(transport_kind::udp));
  spec.max_time_seconds = 1.5;  // three 0.5 s steps do not fit with the pauses
  const auto started = std::chrono::steady_clock::now();
  const search_result timed = run_search(spec);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 4s);
  EXPECT_EQ(timed.end_reason, "max_time");
  EXPECT_EQ(timed.steps.size(), 2u);

  // Through JSON and back.
  const search_result back = search_result_from_json(to_json(timed), "search.json");
  EXPECT_EQ(back.steps.size(), timed.steps.size());
  EXPECT_EQ(back.max_rate, timed.max_rate);
  EXPECT_EQ(back.end_reason, "max_time");
  EXPECT_EQ(back.steps[1].answered, timed.steps[1].answered);
  EXPECT_EQ(back.steps[1].run.queries_sent, timed.steps[1].run.queries_sent);
  EXPECT_NE(format_search(back).find("highest rate answered in full: 2,000 queries/s"),
            std::string::npos)
      << format_search(back);
}

// sweep --search: every point is measured as the highest rate it answers in full, so a
// server limited to the same rate on UDP and TCP shows TCP at about 100 % of UDP.
TEST(search_test, a_searched_sweep_compares_lossless_rates) {
  server_options o = limited_server::options(transport_kind::udp);
  o.listen[transport_kind::tcp] = endpoint{"127.0.0.1", 0};
  server responder(o);
  sweep_plan plan;
  plan.base.target.port = responder.port(transport_kind::udp);
  plan.base.traffic.timeout_seconds = 1;
  plan.base.traffic.outstanding = 50;
  plan.base.output.interval_seconds = 0;
  plan.ports[transport_kind::udp] = responder.port(transport_kind::udp);
  plan.ports[transport_kind::tcp] = responder.port(transport_kind::tcp);
  plan.transports = {{transport_kind::udp, std::nullopt}, {transport_kind::tcp, std::nullopt}};
  plan.clients = {2};
  plan.queries_per_connection = {0};
  plan.repeats = 2;
  plan.duration_seconds = 0.5;
  plan.pause_seconds = 0.2;
  plan.search = true;
  plan.search_criteria.start_rate = responder_limit / 4;
  plan.search_criteria.precision = 0.04;
  const sweep_result r = run_sweep(plan);
  ASSERT_EQ(r.points.size(), 2u);
  for (const auto& p : r.points) {
    ASSERT_TRUE(p.search.has_value()) << describe(p.point);
    EXPECT_NEAR(p.search->max_rate, responder_limit, responder_limit * 0.15) << describe(p.point);
    // The point's runs are the passing repetitions at the rate found: all answered.
    ASSERT_GE(p.repeats.size(), 2u);
    for (const auto& run : p.repeats) {
      EXPECT_DOUBLE_EQ(run.rate, p.search->max_rate);
      EXPECT_EQ(run.responses_received, run.queries_scheduled());
    }
    EXPECT_NEAR(p.summary.qps.mean, p.search->max_rate, p.search->max_rate * 0.05);
  }
  ASSERT_EQ(r.percent_of_udp.size(), 1u);
  EXPECT_NEAR(r.percent_of_udp[0].percent, 100, 25);
  const sweep_result back = sweep_result_from_json(to_json(r), "sweep.json");
  EXPECT_TRUE(back.plan.search);
  EXPECT_DOUBLE_EQ(back.plan.search_criteria.start_rate, responder_limit / 4);
  ASSERT_TRUE(back.points[1].search.has_value());
  EXPECT_DOUBLE_EQ(back.points[1].search->max_rate, r.points[1].search->max_rate);
  EXPECT_NE(format_tables(back).find("measured by search"), std::string::npos);
}

TEST(search_test, bad_criteria_are_refused_naming_the_flag) {
  const auto refused = [](auto change, std::string_view flag) {
    search_spec spec;
    spec.load.target.port = 5300;
    change(spec);
    try {
      validate(spec);
      ADD_FAILURE() << "accepted, expected an error naming " << flag;
    } catch (const setup_error& e) {
      EXPECT_NE(std::string(e.what()).find(flag), std::string::npos) << e.what();
    }
  };
  refused([](search_spec& s) { s.min_answered_percent = 0; }, "search_spec::min_answered_percent");
  refused([](search_spec& s) { s.min_answered_percent = 101; },
          "search_spec::min_answered_percent");
  refused([](search_spec& s) { s.start_rate = 0; }, "search_spec::start_rate");
  refused([](search_spec& s) { s.repeats = 0; }, "search_spec::repeats");
  refused([](search_spec& s) { s.precision = 1; }, "search_spec::precision");
  refused([](search_spec& s) { s.max_time_seconds = -1; }, "search_spec::max_time_seconds");
  refused([](search_spec& s) { s.load.traffic.arrivals = arrival_mode::closed; },
          "load_spec::traffic.arrivals");
  refused([](search_spec& s) { s.load.traffic.count = 10; }, "load_spec::traffic.count");
  refused([](search_spec& s) { s.load.traffic.clients = 0; }, "load_spec::traffic.clients");
}

}  // namespace
}  // namespace dnstransport
