// The stream client's state machine against a scripted in-memory peer (no socket): answers
// in pieces, partial writes, closes and resets with queries in flight, queries per
// connection, zero length prefixes, reordered answers, refused connects. Every expectation
// is an exact count that follows from the script.
#include "transport/stream/stream_transport.hpp"

#include <gtest/gtest.h>

#include <cerrno>

#include "scripted_run.hpp"
#include "scripted_stream.hpp"

namespace dnstransport::detail {
namespace {

using scripted::peer_log;
using scripted::peer_script;

struct scripted_run {
  counters counts;
  peer_log log;
};

// `count` queries over `clients` clients with `outstanding` in flight each, against `script`;
// with `rate_per_client`, on a constant open-loop schedule.
scripted_run run_scripted(const peer_script& script, std::uint64_t count, unsigned clients,
                          unsigned outstanding, stream_settings settings = {},
                          double timeout_seconds = 5, double rate_per_client = 0) {
  scripted_run out;
  stream_transport transport(settings, make_tcp_connector(),
                             scripted::make_socket_factory(script, out.log));
  out.counts = scripted::run_on_one_worker(transport, {.count = count,
                                                       .clients = clients,
                                                       .outstanding = outstanding,
                                                       .timeout_seconds = timeout_seconds,
                                                       .rate_per_client = rate_per_client});
  return out;
}

void expect_all_answered(const scripted_run& r, std::uint64_t count) {
  const query_counters& q = r.counts.queries;
  EXPECT_EQ(q.queries_sent, count);
  EXPECT_EQ(q.responses_received, count);
  EXPECT_EQ(q.lost + q.lost_on_close + q.malformed + q.mismatched, 0u);
  EXPECT_EQ(r.log.queries_received, count);
}

TEST(stream_client_test, answers_arriving_one_octet_per_read_are_all_matched) {
  peer_script script;
  script.read_pieces = {1};
  const auto r = run_scripted(script, 200, 2, 10);
  expect_all_answered(r, 200);
  EXPECT_EQ(r.counts.connections.opened, 2u);
  // Every answer is at least a 2-octet prefix and a 12-octet header.
  EXPECT_GE(r.log.reads, 200u * 14);
}

TEST(stream_client_test, frames_split_at_every_offset_are_reassembled) {
  peer_script script;
  script.read_pieces = {3, 7, 1, 50, 2, 13};
  const auto r = run_scripted(script, 300, 3, 20);
  expect_all_answered(r, 300);
}

TEST(stream_client_test, partial_writes_keep_the_rest_and_wait_for_writability) {
  peer_script script;
  script.write_limit = 5;  // less than a query's length prefix and header
  script.want_write_first = true;
  const auto r = run_scripted(script, 200, 2, 10);
  expect_all_answered(r, 200);
  EXPECT_GT(r.log.partial_writes, 200u);
}

TEST(stream_client_test, peer_closing_mid_pipeline_loses_exactly_the_unanswered) {
  peer_script script;
  script.answers_per_connection = 3;
  script.after_answers = peer_script::then::close;
  // One client, 10 in flight: each connection carries 10 queries, 3 answered, 7 lost.
  const auto r = run_scripted(script, 30, 1, 10);
  const query_counters& q = r.counts.queries;
  EXPECT_EQ(q.queries_sent, 30u);
  EXPECT_EQ(q.responses_received, 9u);
  EXPECT_EQ(q.lost_on_close, 21u);
  EXPECT_EQ(q.lost, 0u);
  EXPECT_EQ(r.counts.connections.opened, 3u);
  EXPECT_EQ(r.counts.connections.closed_by_server, 3u);
  EXPECT_EQ(r.counts.connections.reset_by_server, 0u);
  EXPECT_EQ(r.counts.connections.answered, 9u);
}

TEST(stream_client_test, peer_resetting_mid_pipeline_is_counted_as_reset) {
  peer_script script;
  script.answers_per_connection = 3;
  script.after_answers = peer_script::then::reset;
  const auto r = run_scripted(script, 30, 1, 10);
  EXPECT_EQ(r.counts.queries.responses_received, 9u);
  EXPECT_EQ(r.counts.queries.lost_on_close, 21u);
  EXPECT_EQ(r.counts.connections.reset_by_server, 3u);
  EXPECT_EQ(r.counts.connections.closed_by_server, 0u);
}

class queries_per_connection_test : public ::testing::TestWithParam<std::uint64_t> {};

TEST_P(queries_per_connection_test, each_client_opens_its_queries_over_n_connections) {
  const std::uint64_t n = GetParam();
  stream_settings settings;
  settings.queries_per_connection = n;
  // Two clients with 30 queries each.
  const auto r = run_scripted({}, 60, 2, 10, settings);
  expect_all_answered(r, 60);
  const std::uint64_t per_client = n == 0 ? 1 : (30 + n - 1) / n;  // 0: one for the run
  EXPECT_EQ(r.counts.connections.opened, 2 * per_client);
  EXPECT_EQ(r.log.connections, 2 * per_client);
  EXPECT_EQ(r.counts.connections.closed_by_client, 2 * per_client);
  EXPECT_EQ(r.log.closed_by_client, 2 * per_client);
  EXPECT_EQ(r.log.abortive_closes, 0u);
  EXPECT_EQ(r.counts.connections.answered, 60u);
  EXPECT_EQ(r.counts.connections.first_query_latency.count(), 2 * per_client);
  EXPECT_EQ(r.counts.connections.connect_latency.count(), 2 * per_client);
}

INSTANTIATE_TEST_SUITE_P(stream_client_test, queries_per_connection_test,
                         ::testing::Values(1u, 3u, 7u, 30u, 0u));

TEST(stream_client_test, abortive_close_resets_every_connection_it_ends) {
  stream_settings settings;
  settings.queries_per_connection = 4;
  settings.close_with_rst = true;
  const auto r = run_scripted({}, 40, 1, 10, settings);
  expect_all_answered(r, 40);
  EXPECT_EQ(r.counts.connections.opened, 10u);
  EXPECT_EQ(r.log.abortive_closes, 10u);
}

TEST(stream_client_test, zero_length_prefix_drops_the_connection_and_its_pipeline) {
  peer_script script;
  script.zero_length_first = true;
  // Five in flight per connection; the first answer is a zero length prefix every time.
  const auto r = run_scripted(script, 10, 1, 5);
  EXPECT_EQ(r.counts.queries.responses_received, 0u);
  EXPECT_EQ(r.counts.queries.lost_on_close, 10u);
  EXPECT_EQ(r.counts.connections.opened, 2u);
  EXPECT_EQ(r.counts.connections.reset_by_server, 2u);
  EXPECT_EQ(r.counts.connections.failures.at("zero_length_frame"), 2u);
}

TEST(stream_client_test, answers_in_reverse_order_are_matched_and_counted_out_of_order) {
  peer_script script;
  script.reverse_batch = 5;
  // Ten rounds of five: in each, the last query's answer comes first, the other four
  // overtake nothing and arrive after a later one.
  const auto r = run_scripted(script, 50, 1, 5);
  expect_all_answered(r, 50);
  EXPECT_EQ(r.counts.queries.out_of_order, 40u);
}

TEST(stream_client_test, refused_connects_are_counted_by_errno_and_a_count_run_gives_up) {
  peer_script script;
  script.connect_error = ECONNREFUSED;
  const auto r = run_scripted(script, 10, 1, 5);
  EXPECT_EQ(r.counts.queries.queries_sent, 0u);
  EXPECT_EQ(r.counts.connections.opened, 0u);
  EXPECT_EQ(r.counts.connections.failed, 3u);  // three in a row, then the client gives up
  EXPECT_EQ(r.counts.connections.failures.at("ECONNREFUSED"), 3u);
  EXPECT_NE(r.counts.connections.first_failure.find("tcp connect"), std::string::npos);
}

TEST(stream_client_test, a_peer_that_never_answers_times_every_query_out) {
  peer_script script;
  script.answers_per_connection = 0;
  const auto r = run_scripted(script, 8, 2, 4, {}, 0.05);
  EXPECT_EQ(r.counts.queries.queries_sent, 8u);
  EXPECT_EQ(r.counts.queries.lost, 8u);
  EXPECT_EQ(r.counts.queries.responses_received, 0u);
  EXPECT_EQ(r.log.queries_received, 8u);
}

// One query every 100 ms, connections closed after 30 ms with nothing to do: each query
// opens a connection of its own and each but the last is closed for idleness, gracefully
// (FIN), and counted apart from the close at the end.
TEST(stream_client_test, idle_connections_are_closed_and_the_next_query_reconnects) {
  stream_settings settings;
  settings.idle_timeout_ns = 30'000'000;
  const auto r = run_scripted({}, 4, 1, 1, settings, 5, 10);
  expect_all_answered(r, 4);
  EXPECT_EQ(r.counts.connections.opened, 4u);
  EXPECT_EQ(r.counts.connections.closed_idle, 3u);
  EXPECT_EQ(r.counts.connections.closed_by_client, 1u);
  EXPECT_EQ(r.log.connections, 4u);
  EXPECT_EQ(r.log.closed_by_client, 4u);
  EXPECT_EQ(r.log.abortive_closes, 0u);
}

// The same schedule with an idle timeout longer than the gap: one connection throughout.
TEST(stream_client_test, connections_busier_than_the_idle_timeout_are_kept) {
  stream_settings settings;
  settings.idle_timeout_ns = 300'000'000;
  const auto r = run_scripted({}, 4, 1, 1, settings, 5, 10);
  expect_all_answered(r, 4);
  EXPECT_EQ(r.counts.connections.opened, 1u);
  EXPECT_EQ(r.counts.connections.closed_idle, 0u);
  EXPECT_EQ(r.counts.connections.closed_by_client, 1u);
  EXPECT_EQ(r.log.connections, 1u);
}

}  // namespace
}  // namespace dnstransport::detail
