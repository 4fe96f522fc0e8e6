// The UDP client against a scripted in-memory peer (no socket): answers, drops, duplicates,
// answers that overtake, truncated answers (counted, or retried over scripted TCP), wrong IDs,
// malformed, mismatched and oversized answers, partial and refused sends, a socket that does
// not open and an ICMP error on receive. Every expectation is an exact count that follows
// from the script.
#include "transport/udp/udp_transport.hpp"

#include <gtest/gtest.h>

#include <cerrno>

#include <dnstransport/message.hpp>

#include "scripted_datagram.hpp"
#include "scripted_run.hpp"
#include "scripted_stream.hpp"
#include "transport/stream/stream_transport.hpp"

namespace dnstransport::detail {
namespace {

using scripted::dns_reply;

// The timeout of runs where some queries are never answered: long enough that an answer the
// peer sends at once is never late, however busy the machine.
constexpr double lost_after = 0.25;

struct udp_run {
  counters counts;
  scripted::socket_log sockets;
  scripted::dns_log dns;
  scripted::peer_log tcp;  // with tc_retry: the scripted TCP peer's
};

struct udp_case {
  scripted::dns_script dns;
  scripted::socket_script sockets;
  std::uint64_t count = 100;
  unsigned clients = 1;
  unsigned outstanding = 10;
  double timeout_seconds = 5;
  bool tc_retry = false;
  scripted::peer_script tcp;  // with tc_retry: the scripted TCP peer's
};

// `c.count` queries over `c.clients` clients, each with `c.outstanding` in flight, in count
// mode, against the scripted peer.
udp_run run_udp(const udp_case& c) {
  udp_run out;
  std::unique_ptr<stream_transport> tc_retry;
  if (c.tc_retry) {
    tc_retry = std::make_unique<stream_transport>(stream_settings{}, make_tcp_connector(),
                                                  scripted::make_socket_factory(c.tcp, out.tcp));
  }
  const auto transport = make_udp_transport(
      std::move(tc_retry), scripted::make_datagram_socket_factory(
                               c.sockets, out.sockets, scripted::dns_peer(c.dns, out.dns)));
  out.counts = scripted::run_on_one_worker(*transport, {.count = c.count,
                                                        .clients = c.clients,
                                                        .outstanding = c.outstanding,
                                                        .timeout_seconds = c.timeout_seconds});
  return out;
}

// Each query sent ended in exactly one outcome.
void expect_all_ended(const udp_run& r, std::uint64_t count) {
  EXPECT_EQ(r.counts.queries.queries_sent, count);
  EXPECT_EQ(queries_ended(r.counts.queries), count);
}

TEST(udp_client_test, every_query_is_answered_once_over_one_socket_per_client) {
  udp_case c;
  c.count = 200;
  c.clients = 2;
  const auto r = run_udp(c);
  expect_all_ended(r, 200);
  EXPECT_EQ(r.counts.queries.responses_received, 200u);
  EXPECT_EQ(r.dns.queries_received, 200u);
  EXPECT_EQ(r.sockets.sockets_opened, 2u);
  EXPECT_EQ(r.counts.queries.duplicates + r.counts.queries.unexpected + r.counts.queries.late, 0u);
}

TEST(udp_client_test, dropped_queries_are_lost_after_the_timeout) {
  udp_case c;
  c.dns.replies = {dns_reply::answer, dns_reply::answer, dns_reply::answer, dns_reply::drop};
  c.outstanding = 30;
  c.timeout_seconds = lost_after;
  const auto r = run_udp(c);
  expect_all_ended(r, 100);
  EXPECT_EQ(r.counts.queries.responses_received, 75u);
  EXPECT_EQ(r.counts.queries.lost, 25u);
  EXPECT_EQ(r.counts.queries.late, 0u);
}

TEST(udp_client_test, a_duplicated_answer_counts_once_and_its_copy_as_a_duplicate) {
  udp_case c;
  c.dns.replies = {dns_reply::duplicate, dns_reply::answer};
  const auto r = run_udp(c);
  expect_all_ended(r, 100);
  EXPECT_EQ(r.counts.queries.responses_received, 100u);
  EXPECT_EQ(r.counts.queries.duplicates, 50u);
  EXPECT_EQ(r.dns.answers_sent, 150u);
}

TEST(udp_client_test, answers_that_overtake_each_other_are_all_matched) {
  udp_case c;
  c.dns.replies = {dns_reply::hold, dns_reply::answer, dns_reply::hold, dns_reply::hold,
                   dns_reply::answer};
  const auto r = run_udp(c);
  expect_all_ended(r, 100);
  EXPECT_EQ(r.counts.queries.responses_received, 100u);
  EXPECT_EQ(r.counts.queries.duplicates + r.counts.queries.unexpected, 0u);
}

TEST(udp_client_test, truncated_answers_are_counted_truncated_without_a_retry) {
  udp_case c;
  c.dns.replies = {dns_reply::truncated, dns_reply::answer};
  const auto r = run_udp(c);
  expect_all_ended(r, 100);
  EXPECT_EQ(r.counts.queries.truncated, 50u);
  EXPECT_EQ(r.counts.queries.responses_received, 50u);
  EXPECT_EQ(r.counts.queries.tc_retried, 0u);
}

TEST(udp_client_test, truncated_answers_are_retried_over_tcp_when_asked) {
  udp_case c;
  c.dns.replies = {dns_reply::truncated, dns_reply::answer};
  c.clients = 2;
  c.tc_retry = true;
  const auto r = run_udp(c);
  expect_all_ended(r, 100);
  EXPECT_EQ(r.counts.queries.truncated, 0u);
  EXPECT_EQ(r.counts.queries.tc_retried, 50u);
  EXPECT_EQ(r.counts.queries.tc_retry_answered, 50u);
  EXPECT_EQ(r.counts.queries.responses_received, 100u);
  EXPECT_EQ(r.tcp.queries_received, 50u);
  // One TCP connection per UDP client, kept while it may still need it.
  EXPECT_EQ(r.tcp.connections, 2u);
}

TEST(udp_client_test, an_answer_with_a_wrong_id_is_unexpected_and_its_query_lost) {
  udp_case c;
  c.dns.replies = {dns_reply::wrong_id, dns_reply::answer, dns_reply::answer, dns_reply::answer};
  c.outstanding = 30;
  c.timeout_seconds = lost_after;
  const auto r = run_udp(c);
  expect_all_ended(r, 100);
  EXPECT_EQ(r.counts.queries.unexpected, 25u);
  EXPECT_EQ(r.counts.queries.lost, 25u);
  EXPECT_EQ(r.counts.queries.responses_received, 75u);
  EXPECT_EQ(r.counts.queries.mismatched, 0u);
}

TEST(udp_client_test, malformed_mismatched_and_oversized_answers_each_have_their_count) {
  udp_case c;
  c.dns.replies = {dns_reply::malformed, dns_reply::mismatched, dns_reply::oversized,
                   dns_reply::answer};
  const auto r = run_udp(c);
  expect_all_ended(r, 100);
  EXPECT_EQ(r.counts.queries.malformed, 25u);
  EXPECT_EQ(r.counts.queries.mismatched, 25u);
  EXPECT_EQ(r.counts.queries.oversized, 25u);
  EXPECT_EQ(r.counts.queries.responses_received, 25u);
}

TEST(udp_client_test, every_outcome_of_a_mixed_script_adds_up_to_the_queries_sent) {
  udp_case c;
  c.dns.replies = {dns_reply::answer,     dns_reply::drop,      dns_reply::duplicate,
                   dns_reply::truncated,  dns_reply::wrong_id,  dns_reply::malformed,
                   dns_reply::mismatched, dns_reply::oversized, dns_reply::hold,
                   dns_reply::answer};
  c.count = 200;
  c.clients = 2;
  c.outstanding = 30;
  c.timeout_seconds = lost_after;
  const auto r = run_udp(c);
  expect_all_ended(r, 200);
  const query_counters& q = r.counts.queries;
  EXPECT_EQ(q.responses_received, 80u);  // answer twice, duplicate, hold
  EXPECT_EQ(q.lost, 40u);                // drop, wrong_id
  EXPECT_EQ(q.truncated, 20u);
  EXPECT_EQ(q.malformed, 20u);
  EXPECT_EQ(q.mismatched, 20u);
  EXPECT_EQ(q.oversized, 20u);
  EXPECT_EQ(q.duplicates, 20u);
  EXPECT_EQ(q.unexpected, 20u);
  EXPECT_EQ(r.dns.queries_received, 200u);
}

TEST(udp_client_test, partial_sends_keep_the_queries_not_taken_for_the_next_send) {
  udp_case c;
  c.sockets.send_limits = {3};  // fewer than the client's batch of 10
  const auto r = run_udp(c);
  expect_all_ended(r, 100);
  EXPECT_EQ(r.counts.queries.responses_received, 100u);
  // Each query left once, at most three per call.
  EXPECT_EQ(r.sockets.datagrams_from_clients, 100u);
  EXPECT_GE(r.sockets.send_calls, 34u);
  EXPECT_GT(r.sockets.partial_sends, 0u);
}

TEST(udp_client_test, a_send_that_would_block_is_tried_again_once_writable) {
  udp_case c;
  c.sockets.send_limits = {0, SIZE_MAX};  // every other send call fails with EAGAIN
  const auto r = run_udp(c);
  expect_all_ended(r, 100);
  EXPECT_EQ(r.counts.queries.responses_received, 100u);
  EXPECT_EQ(r.sockets.datagrams_from_clients, 100u);
  EXPECT_EQ(r.sockets.refused_sends * 2, r.sockets.send_calls + r.sockets.send_calls % 2);
  EXPECT_TRUE(r.counts.connections.failures.empty());  // EAGAIN is no error
}

TEST(udp_client_test, a_pending_icmp_error_is_counted_once_and_reading_goes_on) {
  udp_case c;
  c.sockets.receive_errors = {ECONNREFUSED};
  const auto r = run_udp(c);
  expect_all_ended(r, 100);
  EXPECT_EQ(r.counts.queries.responses_received, 100u);
  EXPECT_EQ(r.counts.connections.failures.at("ECONNREFUSED"), 1u);
  EXPECT_NE(r.counts.connections.first_failure.find("udp receive"), std::string::npos);
}

TEST(udp_client_test, a_socket_that_does_not_open_ends_its_client_with_the_errno) {
  udp_case c;
  c.sockets.open_error = EMFILE;
  c.clients = 2;
  const auto r = run_udp(c);
  EXPECT_EQ(r.counts.queries.queries_sent, 0u);
  EXPECT_EQ(r.sockets.sockets_opened, 0u);
  EXPECT_EQ(r.counts.connections.failures.at("EMFILE"), 2u);
  EXPECT_NE(r.counts.connections.first_failure.find("udp socket"), std::string::npos);
}

}  // namespace
}  // namespace dnstransport::detail
