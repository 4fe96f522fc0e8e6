// DNS over QUIC against a responder that breaks the connection or the protocol part-way:
// CONNECTION_CLOSE with an error code after N queries, stream resets on some queries, an
// answer whose 2-octet length lies, a server that forgets its connections so that their
// packets get stateless resets, one that opens a stream of its own, and one that grants no
// streams beyond its first limit. Each run
// ends in time, accounts for every query once, and names what happened.
#include <dnstransport/load.hpp>

#include <gtest/gtest.h>

#ifdef DNSTRANSPORT_HAVE_DOQ

#include <dnstransport/server.hpp>

#include "hostile_checks.hpp"

namespace dnstransport::hostile {
namespace {

server_options doq_only_server() {
  server_options o;
  o.listen[transport_kind::doq] = endpoint{"127.0.0.1", 0};
  return o;
}

load_spec hostile_doq_spec(std::uint16_t port, std::uint64_t count) {
  load_spec spec;
  spec.target.transport = transport_kind::doq;
  spec.tls.backend = tls_backend::gnutls;
  spec.target.port = port;
  spec.traffic.clients = 1;
  spec.traffic.outstanding = 4;
  spec.traffic.count = count;
  spec.traffic.timeout_seconds = 3;
  return spec;
}

std::uint64_t at(const std::map<std::string, std::uint64_t>& counts, const std::string& key) {
  const auto found = counts.find(key);
  return found == counts.end() ? 0 : found->second;
}

TEST(hostile_doq_test, connection_close_after_n_queries_is_counted_by_its_error_code) {
  server_options o = doq_only_server();
  o.close_after_queries = 10;
  o.doq_close_code = 4;  // DOQ_EXCESSIVE_LOAD
  server responder(o);
  const run_result r =
      run_checked(hostile_doq_spec(responder.port(transport_kind::doq), 100)).result;
  // Every connection carries ten answers, then the server closes it; the client opens
  // another for the queries left.
  const std::uint64_t closes = at(r.quic.closes, "DOQ_EXCESSIVE_LOAD");
  EXPECT_GE(closes, 5u) << summary(r);
  EXPECT_GE(closes + 1, r.connections.opened) << summary(r);
  EXPECT_EQ(r.connections.closed_by_server, closes) << summary(r);
  EXPECT_LE(r.responses_received, 10 * r.connections.opened) << summary(r);
  EXPECT_GE(r.responses_received, 10 * closes) << summary(r);
  EXPECT_EQ(r.lost, 0u) << summary(r);
  // Queries sent after the tenth were in flight when the close came.
  EXPECT_EQ(r.responses_received + r.lost_on_close, r.queries_sent) << summary(r);
}

TEST(hostile_doq_test, a_server_that_opens_a_stream_of_its_own_is_cut_off) {
  server_options o = doq_only_server();
  o.doq_open_stream_after = 10;
  server responder(o);
  const run_result r =
      run_checked(hostile_doq_spec(responder.port(transport_kind::doq), 100)).result;
  // The client granted the server no streams: its QUIC stack ends each connection with
  // STREAM_LIMIT_ERROR once the server opens one, after ten answers, and the client opens
  // another for the queries left.
  const std::uint64_t cut_off = at(r.connections.failures, "quic_STREAM_LIMIT_ERROR");
  EXPECT_GE(cut_off, 5u) << summary(r);
  EXPECT_EQ(r.connections.closed_protocol_error, cut_off) << summary(r);
  EXPECT_EQ(r.connections.reset_by_server, 0u) << summary(r);
  EXPECT_GE(cut_off + 1, r.connections.opened) << summary(r);
  // It opens the stream once its send queue is empty: after ten answers or a few more.
  EXPECT_GE(r.responses_received, 10 * cut_off) << summary(r);
  EXPECT_EQ(r.lost, 0u) << summary(r);
  // The server's own stream carries nothing the client takes for an answer.
  EXPECT_EQ(r.unexpected + r.duplicates + r.malformed, 0u) << summary(r);
  EXPECT_EQ(r.responses_received + r.lost_on_close, r.queries_sent) << summary(r);
  EXPECT_NE(r.connections.first_failure.find("quic_STREAM_LIMIT_ERROR"), std::string::npos)
      << r.connections.first_failure;
}

TEST(hostile_doq_test, streams_reset_by_the_server_fail_those_queries_only) {
  server_options o = doq_only_server();
  o.doq_reset_every = 3;
  server responder(o);
  const run_result r =
      run_checked(hostile_doq_spec(responder.port(transport_kind::doq), 90)).result;
  EXPECT_EQ(r.queries_sent, 90u) << summary(r);
  EXPECT_EQ(r.connections.opened, 1u) << summary(r);  // a stream reset keeps the connection
  EXPECT_EQ(r.quic_failed, 30u) << summary(r);
  EXPECT_EQ(at(r.quic_failures, "stream_reset_DOQ_INTERNAL_ERROR"), 30u) << summary(r);
  EXPECT_EQ(r.responses_received, 60u) << summary(r);
  EXPECT_EQ(r.lost, 0u);
}

TEST(hostile_doq_test, an_answer_whose_length_lies_is_a_length_mismatch_not_an_answer) {
  server_options o = doq_only_server();
  o.doq_lie_every = 4;
  server responder(o);
  const run_result r =
      run_checked(hostile_doq_spec(responder.port(transport_kind::doq), 40)).result;
  EXPECT_EQ(r.queries_sent, 40u) << summary(r);
  EXPECT_EQ(r.quic_failed, 10u) << summary(r);
  EXPECT_EQ(at(r.quic_failures, "length_mismatch"), 10u) << summary(r);
  EXPECT_EQ(r.responses_received, 30u) << summary(r);
  EXPECT_EQ(r.malformed, 0u);
}

TEST(hostile_doq_test, a_server_that_forgets_its_connections_sends_stateless_resets) {
  server_options o = doq_only_server();
  o.doq_stateless_reset_after = 5;
  server responder(o);
  load_spec spec = hostile_doq_spec(responder.port(transport_kind::doq), 30);
  spec.traffic.outstanding =
      1;  // the sixth query of a connection is the packet that gets the reset
  const run_result r = run_checked(spec).result;
  responder.stop();
  EXPECT_GE(r.quic.stateless_resets, 1u) << summary(r);
  EXPECT_EQ(at(r.quic.closes, "stateless_reset"), r.quic.stateless_resets) << summary(r);
  EXPECT_EQ(r.connections.reset_by_server, r.quic.stateless_resets) << summary(r);
  EXPECT_GE(responder.stats().doq_stateless_resets, r.quic.stateless_resets);
  // At most five answers per connection, and the queries caught by a reset are lost on
  // close, never counted as answers.
  EXPECT_LE(r.responses_received, 5 * r.connections.opened) << summary(r);
  EXPECT_EQ(r.responses_received + r.lost_on_close, r.queries_sent) << summary(r);
  EXPECT_GE(r.responses_received, 25u) << summary(r);
  EXPECT_EQ(r.lost, 0u) << summary(r);
}

// A server that grants its first 10 streams and never more (Knot DNS 3.2 does so with 100):
// once every query is answered and none can be sent, the client replaces the connection.
TEST(hostile_doq_test, a_server_that_grants_no_more_streams_gets_new_connections) {
  server_options o = doq_only_server();
  o.doq_max_streams = 10;
  o.doq_fixed_streams = true;
  server responder(o);
  load_spec spec = hostile_doq_spec(responder.port(transport_kind::doq), 50);
  const run_result r = run_checked(spec).result;
  EXPECT_EQ(r.responses_received, 50u) << summary(r);
  EXPECT_EQ(r.connections.opened, 5u) << summary(r);
  EXPECT_EQ(r.quic.streams_exhausted, 4u) << summary(r);
  EXPECT_EQ(r.lost, 0u);
}

}  // namespace
}  // namespace dnstransport::hostile

#endif
