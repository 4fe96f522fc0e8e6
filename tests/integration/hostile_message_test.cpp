// Servers that answer queries wrongly, over UDP, TCP and TLS (each TLS library as client,
// the other as server): every misbehaviour must land in its own counter, every query sent
// in exactly one bucket, and the run must end on time.
#include <dnstransport/load.hpp>

#include <dnstransport/message.hpp>
#include <dnstransport/report.hpp>

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "hostile_checks.hpp"
#include "hostile_server.hpp"
#include "misbehaviour.hpp"

namespace dnstransport::hostile {
namespace {

// `count` queries, each given all the time it needs: for cases where every query must end
// in one bucket.
load_spec counted_patiently(std::uint64_t count) {
  load_spec spec;
  spec.traffic.count = count;
  spec.traffic.timeout_seconds = generous_timeout_seconds;
  return spec;
}

class hostile_message_test : public ::testing::TestWithParam<transport_variant> {
 protected:
  bool datagrams() const { return GetParam().transport == transport_kind::udp; }

  // Two clients, ten queries in flight each, 0.3 s of load (unless a count is given), 0.3 s
  // timeout (unless given: runs where every query must end in one bucket give a count and
  // generous_timeout_seconds, so that neither the end nor the outcome depends on timing).
  bounded_run run_against(const message_script& script, load_spec spec = {}) {
    const transport_variant& v = GetParam();
    hostile_options options;
    options.transport = v.transport;
    options.tls.backend = v.server;
    hostile_server server(options, script);
    spec.target.transport = v.transport;
    spec.target.port = server.port();
    spec.tls.backend = v.client;
    if (spec.traffic.count == 0 &&
        spec.traffic.duration_seconds == load_spec{}.traffic.duration_seconds) {
      spec.traffic.duration_seconds = 0.3;
    }
    if (spec.traffic.timeout_seconds == load_spec{}.traffic.timeout_seconds)
      spec.traffic.timeout_seconds = 0.3;
    spec.traffic.clients = 2;
    if (spec.traffic.outstanding == load_spec{}.traffic.outstanding) spec.traffic.outstanding = 10;
    bounded_run run = run_checked(spec);
    const run_result& r = run.result;
    EXPECT_GT(r.queries_sent, 0u);
    // Whatever the answers, the connections themselves were fine.
    EXPECT_EQ(r.connections.failed, 0u) << r.connections.first_failure;
    EXPECT_EQ(r.connections.reset_by_server, 0u);
    return run;
  }
};

TEST_P(hostile_message_test, correct_answers_are_all_counted_answered) {
  const run_result r = run_against(answer_all(), counted_patiently(400)).result;
  EXPECT_EQ(r.queries_sent, 400u);
  expect_all_in(r.responses_received, r);
}

TEST_P(hostile_message_test, wrong_id_is_unexpected_and_the_query_lost) {
  load_spec spec;
  spec.traffic.count = 40;
  const run_result r = run_against(wrong_id(), spec).result;
  EXPECT_EQ(r.queries_sent, 40u);
  EXPECT_EQ(r.responses_received, 0u);
  EXPECT_EQ(r.lost, r.queries_sent);
  // Every answer came back while its query was in flight, with the id of the query its slot
  // held before (late when that one timed out) or of none.
  EXPECT_EQ(r.unexpected + r.late, r.queries_sent);
  EXPECT_GT(r.unexpected, 0u);
}

TEST_P(hostile_message_test, qr_not_set_is_mismatched) {
  const run_result r = run_against(qr_not_set(), counted_patiently(200)).result;
  EXPECT_EQ(r.queries_sent, 200u);
  expect_all_in(r.mismatched, r);
}

TEST_P(hostile_message_test, wrong_question_is_mismatched) {
  const run_result r = run_against(wrong_question(), counted_patiently(200)).result;
  EXPECT_EQ(r.queries_sent, 200u);
  expect_all_in(r.mismatched, r);
}

TEST_P(hostile_message_test, truncated_answers_are_counted_truncated_not_answered) {
  const run_result r = run_against(truncated_answers(), counted_patiently(200)).result;
  EXPECT_EQ(r.queries_sent, 200u);
  expect_all_in(r.truncated, r);
  EXPECT_EQ(r.responses_received, 0u);
  EXPECT_EQ(r.tc_retried, 0u);
  EXPECT_EQ(r.qps, 0.0);
}

TEST_P(hostile_message_test, answers_with_the_ad_bit_are_answers_counted_authenticated) {
  const run_result r = run_against(authenticated_every_other(), counted_patiently(400)).result;
  EXPECT_EQ(r.queries_sent, 400u);
  expect_all_in(r.responses_received, r);
  EXPECT_EQ(r.authenticated_answers, 200u);
  EXPECT_NE(format_table(r).find("authenticated (AD)"), std::string::npos) << format_table(r);
}

// A server that answers every query with a neighbour's id: whatever the offset, no answer
// may be counted (two queries of a client in flight never ask the same question).
TEST_P(hostile_message_test, answers_with_a_neighbours_id_are_never_counted) {
  for (const std::uint16_t offset : {1, 2, 3, 16, 255, 256, 257, 0x4000, 0x8000, 0xffff}) {
    SCOPED_TRACE(fmt::format("id offset {}", offset));
    load_spec spec;
    spec.traffic.count = 300;
    spec.traffic.outstanding = 50;
    spec.traffic.timeout_seconds = 0.2;
    const run_result r = run_against(id_offset(offset), spec).result;
    EXPECT_EQ(r.queries_sent, 300u);
    EXPECT_EQ(r.responses_received, 0u);
    EXPECT_EQ(r.responses_received + r.lost + r.mismatched + r.lost_on_close, r.queries_sent);
    EXPECT_GT(r.unexpected + r.late + r.duplicates + r.mismatched, 0u);
  }
}

// A query list of `names`, each asked once.
std::shared_ptr<const query_set> query_list_of(std::initializer_list<const char*> names) {
  query_set set;
  for (const char* name : names) set.add(encode_query(name, rr_type::a));
  return std::make_shared<const query_set>(std::move(set));
}

TEST_P(hostile_message_test, a_list_of_few_questions_is_told_apart_by_letter_case) {
  // Three questions asked over and over, 50 in flight a client: queries of one question in
  // flight at once differ in the letter case of the name (DNS 0x20), so an answer with a
  // neighbour's id fails the question check, as it would with 50 questions.
  const auto queries = query_list_of({"a.example", "b.example", "c.example"});
  for (const std::uint16_t offset : {1, 2, 3, 0x4000, 0xffff}) {
    SCOPED_TRACE(fmt::format("id offset {}", offset));
    load_spec spec;
    spec.traffic.queries = queries;
    spec.traffic.count = 300;
    spec.traffic.outstanding = 50;
    spec.traffic.timeout_seconds = 0.2;
    const run_result r = run_against(id_offset(offset), spec).result;
    EXPECT_EQ(r.queries_sent, 300u);
    EXPECT_EQ(r.responses_received, 0u);
    EXPECT_EQ(r.lost + r.mismatched + r.lost_on_close, r.queries_sent);
    EXPECT_EQ(r.in_flight_max, 50u);
    // Those that found a query of another question were mismatched by name; of the same
    // question, by its letter case.
    EXPECT_LE(r.case_not_echoed, r.mismatched);
    EXPECT_GT(r.case_not_echoed + r.unexpected + r.late + r.duplicates, 0u);
  }
  // And a correct server gets every query answered, with 50 in flight and no warning.
  load_spec spec = counted_patiently(300);
  spec.traffic.queries = queries;
  spec.traffic.outstanding = 50;
  const run_result r = run_against(answer_all(), spec).result;
  EXPECT_EQ(r.queries_sent, 300u);
  expect_all_in(r.responses_received, r);
  EXPECT_EQ(r.in_flight_max, 50u);
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
}

TEST_P(hostile_message_test, one_name_keeps_every_query_in_flight) {
  load_spec spec = counted_patiently(400);
  spec.traffic.queries = query_list_of({"www.example.com"});
  spec.traffic.outstanding = 64;
  const run_result r = run_against(answer_all(), spec).result;
  EXPECT_EQ(r.queries_sent, 400u);
  expect_all_in(r.responses_received, r);
  EXPECT_EQ(r.in_flight_max, 64u);
  EXPECT_EQ(r.case_not_echoed, 0u);
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
}

TEST_P(hostile_message_test, a_name_with_few_letters_caps_what_is_in_flight_and_says_so) {
  // "1.a" has two letter-case forms: two queries of it in flight at once, no more.
  load_spec spec = counted_patiently(100);
  spec.traffic.queries = query_list_of({"1.a"});
  spec.traffic.outstanding = 10;
  const run_result r = run_against(answer_all(), spec).result;
  EXPECT_EQ(r.queries_sent, 100u);
  expect_all_in(r.responses_received, r);
  EXPECT_EQ(r.in_flight_max, 2u);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("at most 2 queries in flight per client, not "), std::string::npos)
      << r.warnings[0];
}

// A server that answers with the question in lower case: the answers to queries sent in
// another case cannot be told from another query's, so they are mismatched, counted as the
// case not echoed, and the run says what the server did.
TEST_P(hostile_message_test, a_server_that_does_not_echo_the_letter_case_is_named) {
  load_spec spec = counted_patiently(300);
  spec.traffic.queries = query_list_of({"www.example.com"});
  spec.traffic.outstanding = 20;
  const run_result r = run_against(lower_case_question(), spec).result;
  EXPECT_EQ(r.queries_sent, 300u);
  EXPECT_EQ(r.responses_received + r.mismatched, r.queries_sent) << summary(r);
  EXPECT_EQ(r.case_not_echoed, r.mismatched);
  // The first query of each client goes in the name's own (lower) case; the others not.
  EXPECT_GT(r.case_not_echoed, r.queries_sent / 2);
  EXPECT_GT(r.responses_received, 0u);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("the server did not echo the letter case of the question"),
            std::string::npos)
      << r.warnings[0];
  const std::string table = format_table(r);
  EXPECT_NE(table.find("case not echoed"), std::string::npos) << table;
  // With as many distinct questions as in flight nothing is told apart by case, and the same
  // server's answers to names written in mixed case are all taken, as before.
  query_set mixed;
  for (int i = 0; i < 20; ++i) {
    mixed.add(encode_query(fmt::format("Host{}.Example.COM", i), rr_type::a));
  }
  load_spec plain = counted_patiently(300);
  plain.traffic.queries = std::make_shared<const query_set>(std::move(mixed));
  plain.traffic.outstanding = 20;
  const run_result p = run_against(lower_case_question(), plain).result;
  expect_all_in(p.responses_received, p);
}

TEST_P(hostile_message_test, garbage_is_unexpected_and_short_answers_malformed) {
  const run_result r = run_against(garbage_and_short(datagrams()), counted_patiently(200)).result;
  EXPECT_EQ(r.queries_sent, 200u);
  expect_all_in(r.malformed, r);
  EXPECT_EQ(r.responses_received, 0u);
  // An empty datagram (UDP only), one octet, and junk with a foreign id, per query.
  EXPECT_EQ(r.unexpected, r.malformed * (datagrams() ? 3 : 2));
}

TEST_P(hostile_message_test, duplicate_answers_are_counted_once_and_as_duplicates) {
  const run_result r = run_against(duplicate_answers(), counted_patiently(200)).result;
  EXPECT_EQ(r.queries_sent, 200u);
  expect_all_in(r.responses_received, r);
  // The last duplicates may arrive after the run ended.
  EXPECT_GE(r.duplicates + r.unexpected, r.responses_received * 9 / 10);
  EXPECT_LE(r.duplicates + r.unexpected, r.responses_received);
  EXPECT_GT(r.duplicates, 0u);
}

TEST_P(hostile_message_test, answers_after_the_timeout_are_lost_then_late) {
  // Five rounds of 20 queries, each lost after 0.3 s; the answers come 0.45 s after their
  // query, while the next round is in flight (only the last round's may come after the end).
  load_spec spec;
  spec.traffic.count = 100;
  const run_result r = run_against(answer_all(std::chrono::milliseconds(450)), spec).result;
  EXPECT_EQ(r.queries_sent, 100u);
  EXPECT_EQ(r.responses_received, 0u);
  EXPECT_EQ(r.lost, r.queries_sent);
  EXPECT_GT(r.late, 0u);
  EXPECT_LE(r.late + r.unexpected, r.queries_sent);
}

TEST_P(hostile_message_test, compression_loop_is_malformed) {
  const run_result r = run_against(compression_loop(), counted_patiently(200)).result;
  EXPECT_EQ(r.queries_sent, 200u);
  expect_all_in(r.malformed, r);
}

TEST_P(hostile_message_test, pointer_past_the_end_is_malformed) {
  const run_result r = run_against(pointer_past_end(), counted_patiently(200)).result;
  EXPECT_EQ(r.queries_sent, 200u);
  expect_all_in(r.malformed, r);
}

TEST_P(hostile_message_test, the_largest_answers_are_answers_on_streams_and_oversized_on_udp) {
  // UDP: far over 512 (the queries carry no EDNS), a protocol violation; streams: the
  // largest message, which they may carry.
  load_spec spec = counted_patiently(100);
  spec.traffic.outstanding = 4;
  const run_result r = run_against(oversized_answers(datagrams() ? 4096 : 65535), spec).result;
  EXPECT_EQ(r.queries_sent, 100u);
  if (datagrams()) {
    expect_all_in(r.oversized, r);
    EXPECT_EQ(r.responses_received, 0u);
  } else {
    expect_all_in(r.responses_received, r);
    EXPECT_EQ(r.oversized, 0u);
  }
}

TEST_P(hostile_message_test, junk_carrying_the_right_id_is_malformed) {
  // UDP: the largest datagram a query without EDNS allows (a larger one is oversized, checked
  // first); 64 KiB frames over TLS take a while on a loaded machine: no query may time out.
  load_spec spec = counted_patiently(100);
  spec.traffic.outstanding = 4;
  const run_result r = run_against(junk_frames(datagrams() ? 512 : 65535), spec).result;
  EXPECT_EQ(r.queries_sent, 100u);
  expect_all_in(r.malformed, r);
}

TEST_P(hostile_message_test, answering_only_some_queries_loses_the_rest) {
  // The answered half comes at once, so a one-second timeout only ever expires the dropped
  // half, however loaded the machine.
  load_spec spec;
  spec.traffic.count = 40;
  spec.traffic.timeout_seconds = 1;
  const run_result r = run_against(answer_every_other(), spec).result;
  EXPECT_EQ(r.queries_sent, 40u);
  EXPECT_EQ(r.responses_received, 20u) << summary(r);
  EXPECT_EQ(r.lost, 20u) << summary(r);
}

INSTANTIATE_TEST_SUITE_P(
    hostile, hostile_message_test,
    ::testing::Values(transport_variant{"udp", transport_kind::udp},
                      transport_variant{"tcp", transport_kind::tcp},
                      transport_variant{"tls_openssl_to_gnutls", transport_kind::tls,
                                        tls_backend::openssl, tls_backend::gnutls},
                      transport_variant{"tls_gnutls_to_openssl", transport_kind::tls,
                                        tls_backend::gnutls, tls_backend::openssl}),
    variant_name);

}  // namespace
}  // namespace dnstransport::hostile
