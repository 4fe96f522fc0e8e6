// make_run_plan: what a load's spec becomes before anything is sent (no socket is opened,
// no thread started), checked without running it.
#include "load/load_steps.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <dnstransport/error.hpp>
#include <dnstransport/query_source.hpp>
#include <dnstransport/tls.hpp>

namespace dnstransport::detail {
namespace {

load_spec udp_spec() {
  load_spec spec;
  spec.target.server = "127.0.0.1";
  spec.target.port = 5300;
  spec.traffic.clients = 4;
  spec.traffic.outstanding = 10;
  return spec;
}

TEST(make_run_plan_test, a_closed_loop_plan_names_the_run_and_points_at_what_it_sends) {
  load_spec spec = udp_spec();
  spec.generator.threads = 8;
  const auto p = make_run_plan(spec);
  EXPECT_EQ(p->threads, 4u);  // at most one per client
  EXPECT_EQ(p->result.threads, 4u);
  ASSERT_EQ(p->result.warnings.size(), 1u);
  EXPECT_NE(p->result.warnings[0].find("load_spec::generator.threads 8 reduced to 4"),
            std::string::npos);
  EXPECT_EQ(p->result.transport, transport_kind::udp);
  EXPECT_TRUE(p->result.tls_backend.empty());
  EXPECT_EQ(p->plan.arrivals, run_plan::schedule::closed);
  EXPECT_EQ(p->plan.queries, p->queries.get());
  EXPECT_EQ(p->plan.transport, p->transport.get());
  EXPECT_EQ(p->plan.connections_gauge, &p->connections_gauge);
  EXPECT_EQ(p->plan.server_port, 5300);
  EXPECT_EQ(p->plan.timeout_ns, 2'000'000'000u);
  // UDP answers are checked against each query's size limit (512 without EDNS).
  ASSERT_EQ(p->plan.udp_answer_limits.size(), p->queries->size());
  EXPECT_EQ(p->result.query_count_in_set, p->queries->size());
  EXPECT_EQ(p->plan.question_of.size(), p->queries->size());
}

TEST(make_run_plan_test, an_open_loop_plan_deals_the_rate_over_the_clients) {
  load_spec spec = udp_spec();
  spec.traffic.rate = 1000;
  spec.traffic.arrivals = arrival_mode::poisson;
  const auto p = make_run_plan(spec);
  EXPECT_EQ(p->plan.arrivals, run_plan::schedule::poisson);
  EXPECT_DOUBLE_EQ(p->plan.rate_per_client, 250);
  EXPECT_DOUBLE_EQ(p->result.rate, 1000);
  EXPECT_EQ(p->result.arrivals, arrival_mode::poisson);
  EXPECT_DOUBLE_EQ(p->duration_seconds, spec.traffic.duration_seconds);
}

TEST(make_run_plan_test, few_distinct_questions_are_told_apart_by_letter_case_over_tls) {
  load_spec spec = udp_spec();
  spec.target.transport = transport_kind::tls;
  spec.tls.backend = available_tls_backends().front();
  spec.traffic.outstanding = 20;
  spec.traffic.queries = std::make_shared<const query_set>(
      parse_text_queries("a.example A\nB.example A\nb.EXAMPLE A\n", "two.txt"));
  const auto p = make_run_plan(spec);
  EXPECT_EQ(p->result.tls_backend, tls_backend_name(spec.tls.backend));
  EXPECT_EQ(p->plan.distinct_questions, 2u);
  EXPECT_EQ(p->plan.questions_apart, in_flight_questions::mode::letter_case);
  EXPECT_EQ(p->plan.question_patterns, (std::vector<std::uint32_t>{256, 256}));
  // Each query's own case: b.EXAMPLE has its last seven letters in upper case.
  EXPECT_EQ(p->plan.query_case, (std::vector<std::uint16_t>{0, 1, 0b11111110}));
  EXPECT_EQ(p->plan.in_flight_limit(), 20u);
  EXPECT_TRUE(p->result.warnings.empty()) << p->result.warnings.front();
  EXPECT_TRUE(p->plan.udp_answer_limits.empty());  // streams carry any size
}

TEST(make_run_plan_test, names_with_too_few_letter_case_forms_are_a_warning) {
  load_spec spec = udp_spec();
  spec.traffic.outstanding = 20;
  spec.traffic.queries = std::make_shared<const query_set>(
      parse_text_queries("1.a A\n2.b A\n1.2.3.4 A\n", "few-letters.txt"));
  const auto p = make_run_plan(spec);
  EXPECT_EQ(p->plan.question_patterns, (std::vector<std::uint32_t>{2, 2, 1}));
  EXPECT_EQ(p->plan.in_flight_limit(), 5u);
  ASSERT_EQ(p->result.warnings.size(), 1u);
  EXPECT_NE(p->result.warnings[0].find("at most 5 queries in flight per client"), std::string::npos)
      << p->result.warnings[0];
}

TEST(make_run_plan_test, enough_distinct_questions_keep_one_of_each_in_flight) {
  load_spec spec = udp_spec();
  spec.traffic.outstanding = 2;
  spec.traffic.queries = std::make_shared<const query_set>(
      parse_text_queries("a.example A\nb.example A\n", "two.txt"));
  const auto p = make_run_plan(spec);
  EXPECT_EQ(p->plan.questions_apart, in_flight_questions::mode::one_each);
  EXPECT_TRUE(p->plan.query_case.empty());
  EXPECT_EQ(p->plan.in_flight_limit(), 2u);
}

TEST(make_run_plan_test, a_spec_that_does_not_hold_is_refused_before_anything_is_made) {
  load_spec spec = udp_spec();
  spec.traffic.clients = 0;
  EXPECT_THROW(make_run_plan(spec), setup_error);
}

}  // namespace
}  // namespace dnstransport::detail
