// The DoQ client against the library's own DoQ responder with the datagrams passed in memory
// (scripted_quic.hpp; no socket): persistent connections, queries per connection,
// resumption, 0-RTT accepted and refused, the server's stream limit (raised, or never), its
// CONNECTION_CLOSE, stream resets, lying lengths, stateless resets and a stream of its own,
// Retry, a silent server, and lost datagrams. Every expectation on the queries and
// connections is an exact count that follows from the script, but for the one case where
// QUIC's own timers may move a query from one outcome to another (said there).
#ifdef DNSTRANSPORT_HAVE_DOQ
#include "transport/doq/doq_transport.hpp"

#include <gtest/gtest.h>

#include "scripted_quic.hpp"
#include "scripted_run.hpp"

namespace dnstransport::detail {
namespace {

struct doq_case {
  scripted::quic_script quic;
  doq_settings settings;
  std::uint64_t count = 100;
  unsigned clients = 1;
  unsigned outstanding = 10;
  double timeout_seconds = 5;
};

struct doq_run {
  counters counts;
  scripted::quic_log quic;
  scripted::socket_log sockets;
  std::uint64_t server_connections = 0;
  std::uint64_t server_answers = 0;
  std::uint64_t server_resumed = 0;
  std::uint64_t server_early_data = 0;
  std::uint64_t server_retries = 0;
  std::uint64_t server_stateless_resets = 0;
};

// `c.count` queries over `c.clients` clients, each with `c.outstanding` in flight, in count
// mode, against the in-memory responder.
doq_run run_doq(const doq_case& c) {
  doq_run out;
  scripted::quic_responder responder(c.quic);
  const scripted::socket_script sockets;
  const doq_transport transport(
      c.settings, responder.client_tls(),
      scripted::make_datagram_socket_factory(sockets, out.sockets, responder.peers()));
  out.counts = scripted::run_on_one_worker(transport, {.count = c.count,
                                                       .clients = c.clients,
                                                       .outstanding = c.outstanding,
                                                       .timeout_seconds = c.timeout_seconds});
  out.quic = responder.log();
  const server_counters& s = responder.counters();
  out.server_connections = s.connections_accepted.load();
  out.server_answers = s.queries[transport_kind::doq].load();
  out.server_resumed = s.tls_resumed.load();
  out.server_early_data = s.doq_early_data.load();
  out.server_retries = s.doq_retries.load();
  out.server_stateless_resets = s.doq_stateless_resets.load();
  return out;
}

std::uint64_t at(const std::map<std::string, std::uint64_t>& counts, const std::string& key) {
  const auto found = counts.find(key);
  return found == counts.end() ? 0 : found->second;
}

// Each query sent ended in exactly one outcome.
void expect_all_ended(const doq_run& r, std::uint64_t count) {
  EXPECT_EQ(r.counts.queries.queries_sent, count);
  EXPECT_EQ(queries_ended(r.counts.queries), count);
}

TEST(doq_client_test, queries_in_flight_share_one_connection_per_client) {
  doq_case c;
  c.count = 200;
  c.clients = 2;
  const auto r = run_doq(c);
  expect_all_ended(r, 200);
  EXPECT_EQ(r.counts.queries.responses_received, 200u);
  EXPECT_EQ(r.server_answers, 200u);
  EXPECT_EQ(r.counts.connections.opened, 2u);
  EXPECT_EQ(r.counts.connections.handshakes_full, 2u);
  EXPECT_EQ(r.counts.connections.closed_by_client, 2u);
  EXPECT_EQ(r.server_connections, 2u);
  EXPECT_EQ(r.sockets.sockets_opened, 2u);
  EXPECT_EQ(r.counts.connections.answered, 200u);
  EXPECT_EQ(r.counts.connections.first_query_latency.count(), 2u);
}

class doq_queries_per_connection_test : public ::testing::TestWithParam<std::uint64_t> {};

TEST_P(doq_queries_per_connection_test, each_client_opens_its_queries_over_n_connections) {
  const std::uint64_t n = GetParam();
  doq_case c;
  c.settings.queries_per_connection = n;
  c.count = 40;  // twenty per client
  c.clients = 2;
  c.outstanding = 5;
  const auto r = run_doq(c);
  expect_all_ended(r, 40);
  EXPECT_EQ(r.counts.queries.responses_received, 40u);
  const std::uint64_t per_client = n == 0 ? 1 : (20 + n - 1) / n;  // 0: one for the run
  EXPECT_EQ(r.counts.connections.opened, 2 * per_client);
  EXPECT_EQ(r.counts.connections.closed_by_client, 2 * per_client);
  EXPECT_EQ(r.server_connections, 2 * per_client);
  // One socket per client, kept across its connections.
  EXPECT_EQ(r.sockets.sockets_opened, 2u);
}

INSTANTIATE_TEST_SUITE_P(doq_client_test, doq_queries_per_connection_test,
                         ::testing::Values(1u, 3u, 20u, 0u));

TEST(doq_client_test, later_connections_resume_the_newest_ticket) {
  doq_case c;
  c.settings.queries_per_connection = 10;
  c.settings.resume = true;
  c.count = 50;
  const auto r = run_doq(c);
  expect_all_ended(r, 50);
  EXPECT_EQ(r.counts.queries.responses_received, 50u);
  EXPECT_EQ(r.counts.connections.opened, 5u);
  EXPECT_EQ(r.counts.connections.handshakes_full, 1u);
  EXPECT_EQ(r.counts.connections.handshakes_resumed, 4u);
  EXPECT_EQ(r.server_resumed, 4u);
  EXPECT_EQ(r.counts.early_data.offered, 0u);  // no 0-RTT unless asked for
}

TEST(doq_client_test, resumed_connections_send_their_queries_in_0rtt) {
  doq_case c;
  c.settings.queries_per_connection = 5;
  c.settings.resume = true;
  c.settings.early_data = true;
  c.count = 40;
  c.clients = 2;
  c.outstanding = 5;
  const auto r = run_doq(c);
  expect_all_ended(r, 40);
  EXPECT_EQ(r.counts.queries.responses_received, 40u);
  // Each client's first connection has no ticket yet; the three later ones resume, and their
  // five queries ride in 0-RTT.
  EXPECT_EQ(r.counts.connections.handshakes_full, 2u);
  EXPECT_EQ(r.counts.connections.handshakes_resumed, 6u);
  EXPECT_EQ(r.counts.early_data.offered, 6u);
  EXPECT_EQ(r.counts.early_data.accepted, 6u);
  EXPECT_EQ(r.counts.early_data.rejected, 0u);
  EXPECT_EQ(r.counts.early_data.queries_in_early_data, 30u);
  EXPECT_EQ(r.counts.early_data.queries_resent, 0u);
  EXPECT_EQ(r.server_early_data, 6u);
}

TEST(doq_client_test, refused_0rtt_queries_go_again_on_new_streams_and_count_once) {
  doq_case c;
  c.quic.server.doq_early_data = false;
  c.settings.queries_per_connection = 5;
  c.settings.resume = true;
  c.settings.early_data = true;
  c.count = 40;
  c.clients = 2;
  c.outstanding = 5;
  const auto r = run_doq(c);
  expect_all_ended(r, 40);
  EXPECT_EQ(r.counts.queries.responses_received, 40u);
  EXPECT_EQ(r.counts.connections.handshakes_resumed, 6u);
  EXPECT_EQ(r.counts.early_data.offered, 6u);
  EXPECT_EQ(r.counts.early_data.accepted, 0u);
  EXPECT_EQ(r.counts.early_data.rejected, 6u);
  EXPECT_EQ(r.counts.early_data.queries_in_early_data, 30u);
  EXPECT_EQ(r.counts.early_data.queries_resent, 30u);
  EXPECT_EQ(r.server_early_data, 0u);
  EXPECT_EQ(r.server_answers, 40u);
}

TEST(doq_client_test, a_stream_limit_below_the_queries_in_flight_is_waited_for) {
  doq_case c;
  c.quic.server.doq_max_streams = 3;
  c.count = 60;
  c.outstanding = 10;
  const auto r = run_doq(c);
  expect_all_ended(r, 60);
  EXPECT_EQ(r.counts.queries.responses_received, 60u);
  EXPECT_EQ(r.counts.connections.opened, 1u);
  EXPECT_EQ(r.counts.quic.streams_exhausted, 0u);
}

// A server that grants its first 10 streams and never more (as Knot DNS 3.2 does with 100):
// once every query is answered and none can be sent, the client replaces the connection.
TEST(doq_client_test, a_server_that_never_raises_its_stream_limit_gets_new_connections) {
  doq_case c;
  c.quic.server.doq_max_streams = 10;
  c.quic.server.doq_fixed_streams = true;
  c.count = 50;
  c.outstanding = 4;
  const auto r = run_doq(c);
  expect_all_ended(r, 50);
  EXPECT_EQ(r.counts.queries.responses_received, 50u);
  EXPECT_EQ(r.counts.connections.opened, 5u);
  EXPECT_EQ(r.counts.quic.streams_exhausted, 4u);
}

TEST(doq_client_test, a_connection_close_after_k_answers_is_counted_by_its_code) {
  doq_case c;
  c.quic.server.close_after_queries = 5;
  c.quic.server.doq_close_code = 4;  // DOQ_EXCESSIVE_LOAD
  c.count = 20;
  c.outstanding = 1;  // the close comes with the fifth answer, before a sixth query
  const auto r = run_doq(c);
  expect_all_ended(r, 20);
  EXPECT_EQ(r.counts.queries.responses_received, 20u);
  EXPECT_EQ(r.counts.queries.lost_on_close, 0u);
  EXPECT_EQ(r.counts.connections.opened, 4u);
  EXPECT_EQ(r.counts.connections.closed_by_server, 4u);
  EXPECT_EQ(r.counts.connections.closed_by_client, 0u);
  EXPECT_EQ(at(r.counts.quic.closes, "DOQ_EXCESSIVE_LOAD"), 4u);
}

TEST(doq_client_test, streams_the_server_resets_fail_those_queries_only) {
  doq_case c;
  c.quic.server.doq_reset_every = 4;
  c.count = 40;
  c.outstanding = 4;
  const auto r = run_doq(c);
  expect_all_ended(r, 40);
  EXPECT_EQ(r.counts.connections.opened, 1u);  // a stream reset keeps the connection
  EXPECT_EQ(r.counts.queries.quic_failed, 10u);
  EXPECT_EQ(at(r.counts.queries.quic_failures, "stream_reset_DOQ_INTERNAL_ERROR"), 10u);
  EXPECT_EQ(r.counts.queries.responses_received, 30u);
}

TEST(doq_client_test, an_answer_whose_length_lies_is_a_length_mismatch) {
  doq_case c;
  c.quic.server.doq_lie_every = 4;
  c.count = 40;
  c.outstanding = 4;
  const auto r = run_doq(c);
  expect_all_ended(r, 40);
  EXPECT_EQ(r.counts.queries.quic_failed, 10u);
  EXPECT_EQ(at(r.counts.queries.quic_failures, "length_mismatch"), 10u);
  EXPECT_EQ(r.counts.queries.responses_received, 30u);
  EXPECT_EQ(r.counts.queries.malformed, 0u);
}

// The server forgets each connection after its fifth answer. The packet that gets the reset
// is the client's sixth query (lost on close), unless a packet of the client's own timers (a
// probe, an ACK) reaches the server first, as on a starved CPU it can: the reset then ends
// the connection before the sixth query leaves, and that query goes on the next one. The
// split between answered and lost varies with it; these relations do not.
TEST(doq_client_test, a_server_that_forgets_its_connection_is_heard_as_a_stateless_reset) {
  doq_case c;
  c.quic.server.doq_stateless_reset_after = 5;
  c.count = 30;
  c.outstanding = 1;
  const auto r = run_doq(c);
  expect_all_ended(r, 30);
  const std::uint64_t resets = r.counts.quic.stateless_resets;
  EXPECT_GE(resets, 5u);
  EXPECT_EQ(r.counts.connections.reset_by_server, resets);
  EXPECT_EQ(at(r.counts.quic.closes, "stateless_reset"), resets);
  // Every connection ends with a reset but the last, which may end with the run.
  EXPECT_EQ(r.counts.connections.opened, resets + r.counts.connections.closed_by_client);
  // Each reset connection had five answers and lost at most the one query in flight.
  EXPECT_GE(r.counts.queries.responses_received, 5 * resets);
  EXPECT_LE(r.counts.queries.lost_on_close, resets);
  EXPECT_EQ(r.counts.queries.lost, 0u);
  EXPECT_GE(r.server_stateless_resets, resets);
}

TEST(doq_client_test, a_server_that_opens_a_stream_of_its_own_is_cut_off) {
  doq_case c;
  c.quic.server.doq_open_stream_after = 5;
  c.count = 20;
  c.outstanding = 1;
  const auto r = run_doq(c);
  expect_all_ended(r, 20);
  EXPECT_EQ(r.counts.queries.responses_received, 20u);
  EXPECT_EQ(r.counts.connections.opened, 4u);
  EXPECT_EQ(at(r.counts.connections.failures, "quic_STREAM_LIMIT_ERROR"), 4u);
  // Our QUIC stack ended each connection over the server's error: closed by us for it, not
  // reset by the server.
  EXPECT_EQ(r.counts.connections.closed_protocol_error, 4u);
  EXPECT_EQ(r.counts.connections.reset_by_server, 0u);
  EXPECT_EQ(r.counts.queries.unexpected + r.counts.queries.duplicates, 0u);
}

TEST(doq_client_test, a_retry_before_every_connection_is_followed_and_counted) {
  doq_case c;
  c.quic.server.doq_retry = true;
  c.settings.queries_per_connection = 10;
  c.count = 30;
  const auto r = run_doq(c);
  expect_all_ended(r, 30);
  EXPECT_EQ(r.counts.queries.responses_received, 30u);
  EXPECT_EQ(r.counts.connections.opened, 3u);
  EXPECT_EQ(r.counts.quic.retries, 3u);
  EXPECT_EQ(r.server_retries, 3u);
}

TEST(doq_client_test, a_silent_server_fails_three_handshakes_and_the_client_gives_up) {
  doq_case c;
  c.quic.lose_every_to_server = 1;  // every datagram to the server is lost
  c.count = 10;
  c.timeout_seconds = 0.1;
  const auto r = run_doq(c);
  EXPECT_EQ(r.counts.queries.queries_sent, 0u);
  EXPECT_EQ(r.counts.connections.opened, 0u);
  EXPECT_EQ(r.counts.connections.failed, 3u);
  EXPECT_EQ(at(r.counts.connections.failures, "quic_handshake_timeout"), 3u);
  EXPECT_EQ(r.quic.datagrams_to_server, 0u);
}

TEST(doq_client_test, lost_datagrams_are_sent_again_and_every_query_is_answered) {
  doq_case c;
  c.quic.lose_every_to_server = 7;
  c.quic.lose_every_to_client = 5;
  c.count = 100;
  const auto r = run_doq(c);
  expect_all_ended(r, 100);
  EXPECT_EQ(r.counts.queries.responses_received, 100u);
  EXPECT_EQ(r.counts.connections.opened, 1u);
  EXPECT_GT(r.quic.lost, 0u);
  EXPECT_EQ(r.server_answers, 100u);
}

}  // namespace
}  // namespace dnstransport::detail

#endif
