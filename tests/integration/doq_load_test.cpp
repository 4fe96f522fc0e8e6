// DNS-over-QUIC loads over loopback: the client transport against the built-in responder
// (persistent connections, a connection per query, resumption and 0-RTT), its usage errors,
// and servers that never finish a handshake (silence, Version Negotiation only).
#include <dnstransport/error.hpp>
#include <dnstransport/load.hpp>

#include <gtest/gtest.h>

#ifdef DNSTRANSPORT_HAVE_DOQ

#include <ngtcp2/ngtcp2.h>

#include <array>
#include <string>

#include <dnstransport/server.hpp>

#include "hostile_checks.hpp"
#include "hostile_server.hpp"
#include "responder_stats.hpp"

namespace dnstransport::hostile {
namespace {

server_options doq_server(bool early_data = true) {
  server_options o;
  o.listen[transport_kind::doq] = endpoint{"127.0.0.1", 0};
  o.doq_early_data = early_data;
  return o;
}

load_spec doq_spec(std::uint16_t port) {
  load_spec spec;
  spec.target.transport = transport_kind::doq;
  spec.tls.backend = tls_backend::gnutls;
  spec.target.port = port;
  spec.traffic.timeout_seconds = generous_timeout_seconds;
  return spec;
}

std::string run_setup_error(const load_spec& spec) {
  try {
    run_load(spec);
  } catch (const setup_error& e) {
    return e.what();
  }
  return "no setup_error";
}

// One query in flight: each answer needs at least one sendmmsg (the query's stream) and one
// recvmmsg (the answer), and a wake-up; ACKs and the connection's timers add some.
TEST(doq_load_test, generator_counts_its_calls_and_wakeups) {
  server responder(doq_server());
  load_spec spec = doq_spec(responder.port(transport_kind::doq));
  spec.traffic.outstanding = 1;
  spec.traffic.count = 300;
  const run_result r = run_checked(spec).result;
  ASSERT_EQ(r.responses_received, 300u) << summary(r);
  EXPECT_GE(r.generator.syscalls, 2 * 300u);
  EXPECT_LE(r.generator.syscalls, 6 * 300u + 100);
  EXPECT_GE(r.generator.wakeups, 300u);
  EXPECT_LE(r.generator.wakeups, 4 * 300u + 100);
}

TEST(doq_load_test, persistent_connections_carry_many_streams_each) {
  server responder(doq_server());
  load_spec spec = doq_spec(responder.port(transport_kind::doq));
  spec.traffic.clients = 4;
  spec.traffic.outstanding = 50;
  spec.traffic.count = 20000;
  const run_result r = run_checked(spec).result;
  expect_all_in(r.responses_received, r);
  EXPECT_EQ(r.queries_sent, 20000u);
  EXPECT_EQ(r.connections.opened, 4u) << summary(r);
  EXPECT_EQ(r.handshakes_full, 4u);
  EXPECT_EQ(r.connections.answered, r.responses_received);
  EXPECT_GT(r.quic.packets_sent, 0u);
  EXPECT_GT(r.quic.packets_received, 0u);
  EXPECT_EQ(r.quic.rtt_samples, 4u);  // each connection's path, sampled as it ended
  EXPECT_GT(r.quic.smoothed_rtt_ms, 0.0);
  EXPECT_TRUE(r.quic.closes.empty());  // we closed every connection
  responder.stop();
  // A stream per query, none sent again: the responder answered each query once.
  EXPECT_EQ(responder.stats().queries[transport_kind::doq], 20000u);
  EXPECT_EQ(responder.stats().connections_accepted, 4u);
}

TEST(doq_load_test, one_query_per_connection_opens_a_connection_per_query) {
  server responder(doq_server());
  load_spec spec = doq_spec(responder.port(transport_kind::doq));
  spec.traffic.clients = 4;
  spec.traffic.outstanding = 1;
  spec.connections.queries_per_connection = 1;
  spec.traffic.count = 200;
  const run_result r = run_checked(spec).result;
  expect_all_in(r.responses_received, r);
  EXPECT_EQ(r.connections.opened, 200u) << summary(r);
  EXPECT_EQ(r.connections.closed_by_client, 200u);
  EXPECT_EQ(r.handshakes_full, 200u);
  EXPECT_EQ(r.handshakes_resumed, 0u);
  EXPECT_EQ(r.first_query_latency.count(), 200u);
  EXPECT_EQ(r.early_data.offered, 0u);
  // Three datagrams each: the Initial, the Finished with the query (its 1-RTT packet in the
  // same datagram), the CONNECTION_CLOSE. The bound leaves room for an ACK more here and
  // there, and probe timeouts.
  EXPECT_LE(r.quic.packets_sent, 200 * 3 + 16 + 2 * r.quic.probe_timeouts) << summary(r);
}

TEST(doq_load_test, resumption_with_early_data_sends_the_query_in_0rtt) {
  server responder(doq_server());
  load_spec spec = doq_spec(responder.port(transport_kind::doq));
  spec.traffic.clients = 2;
  spec.traffic.outstanding = 1;
  spec.connections.queries_per_connection = 1;
  spec.traffic.count = 100;
  spec.tls.resume = true;
  spec.tls.early_data = true;
  const run_result r = run_checked(spec).result;
  expect_all_in(r.responses_received, r);
  // Each client's first connection has no ticket yet; every later one resumes, and its one
  // query rides in 0-RTT.
  EXPECT_EQ(r.handshakes_full, 2u) << summary(r);
  EXPECT_EQ(r.handshakes_resumed, 98u);
  EXPECT_EQ(r.early_data.offered, 98u);
  EXPECT_EQ(r.early_data.accepted, 98u);
  EXPECT_EQ(r.early_data.rejected, 0u);
  EXPECT_EQ(r.early_data.queries_in_early_data, 98u);
  EXPECT_EQ(r.early_data.queries_resent, 0u);
  // The responder counts a connection's early data on its own thread when the client's
  // Finished comes, which may be after the client has its answers and is done.
  EXPECT_TRUE(responder_stats_reach(responder, [](const server_stats& st) {
    return st.doq_early_data >= 98;
  })) << responder.stats().doq_early_data;
  // A resumed connection takes three datagrams: its Initial with the query's 0-RTT packet in
  // the same datagram, the Handshake Finished (the answer came with the server's first
  // flight, so nothing else goes before), the CONNECTION_CLOSE; so does a full handshake.
  // The bound leaves room for an ACK more here and there, and probe timeouts.
  EXPECT_LE(r.quic.packets_sent, 100 * 3 + 16 + 2 * r.quic.probe_timeouts) << summary(r);
}

TEST(doq_load_test, refused_0rtt_queries_are_sent_again_and_counted_once) {
  server responder(doq_server(false));
  load_spec spec = doq_spec(responder.port(transport_kind::doq));
  spec.traffic.clients = 2;
  spec.traffic.outstanding = 1;
  spec.connections.queries_per_connection = 1;
  spec.traffic.count = 40;
  spec.tls.resume = true;
  spec.tls.early_data = true;
  const run_result r = run_checked(spec).result;
  // Every query is answered once, though each resumed connection's query went twice.
  expect_all_in(r.responses_received, r);
  EXPECT_EQ(r.queries_sent, 40u);
  EXPECT_EQ(r.handshakes_resumed, 38u) << summary(r);
  EXPECT_EQ(r.early_data.offered, 38u);
  EXPECT_EQ(r.early_data.accepted, 0u);
  EXPECT_EQ(r.early_data.rejected, 38u);
  EXPECT_EQ(r.early_data.queries_in_early_data, 38u);
  EXPECT_EQ(r.early_data.queries_resent, 38u);
  EXPECT_EQ(responder.stats().doq_early_data, 0u);
}

TEST(doq_load_test, usage_errors_name_the_flag_and_why) {
  load_spec spec = doq_spec(853);
  spec.tls.backend = tls_backend::openssl;
  EXPECT_NE(run_setup_error(spec).find("runs on GnuTLS only"), std::string::npos);
  spec = doq_spec(853);
  spec.tls.early_data = true;
  EXPECT_NE(run_setup_error(spec).find("load_spec::tls.early_data needs load_spec::tls.resume"),
            std::string::npos);
  spec = doq_spec(853);
  spec.tls.max_version = tls_version::v1_2;
  EXPECT_NE(run_setup_error(spec).find("TLS 1.3 only"), std::string::npos);
  spec = doq_spec(853);
  spec.target.transport = transport_kind::tcp;
  spec.tls.resume = spec.tls.early_data = true;
  EXPECT_NE(run_setup_error(spec).find("load_spec::tls.early_data: tcp has no TLS"),
            std::string::npos);
}

// Two responder threads, a DoQ socket each on one port: each connection (a new source port
// every time) lands on either, and a ticket from one thread resumes, with 0-RTT, on the other.
TEST(doq_load_test, several_responder_threads_share_tickets_and_serve_every_connection) {
  server_options o = doq_server();
  o.threads = 2;
  server responder(o);
  load_spec spec = doq_spec(responder.port(transport_kind::doq));
  spec.traffic.clients = 2;
  spec.traffic.outstanding = 1;
  spec.connections.queries_per_connection = 1;
  spec.traffic.count = 100;
  spec.tls.resume = true;
  spec.tls.early_data = true;
  const run_result r = run_checked(spec).result;
  expect_all_in(r.responses_received, r);
  EXPECT_EQ(r.handshakes_resumed, 98u) << summary(r);
  EXPECT_EQ(r.early_data.accepted, 98u) << summary(r);
  load_spec persistent = doq_spec(responder.port(transport_kind::doq));
  persistent.traffic.clients = 8;
  persistent.traffic.outstanding = 20;
  persistent.traffic.count = 8000;
  const run_result p = run_checked(persistent).result;
  expect_all_in(p.responses_received, p);
  EXPECT_EQ(p.connections.opened, 8u) << summary(p);
  responder.stop();
  EXPECT_EQ(responder.stats().connections_accepted, 108u);
  EXPECT_EQ(responder.stats().queries[transport_kind::doq], 8100u);
}

// Address validation: every connection's first Initial gets a Retry, which the client follows
// with the token; each is counted once and the queries are all answered.
TEST(doq_load_test, a_retry_before_every_connection_is_followed_and_counted) {
  server_options o = doq_server();
  o.doq_retry = true;
  server responder(o);
  load_spec spec = doq_spec(responder.port(transport_kind::doq));
  spec.traffic.clients = 2;
  spec.traffic.outstanding = 5;
  spec.traffic.count = 40;
  spec.connections.queries_per_connection = 10;
  spec.tls.resume = true;
  spec.tls.early_data = true;  // 0-RTT goes again after the Retry, with the new Initial
  const run_result r = run_checked(spec).result;
  expect_all_in(r.responses_received, r);
  EXPECT_EQ(r.connections.opened, 4u) << summary(r);
  EXPECT_EQ(r.quic.retries, 4u) << summary(r);
  responder.stop();
  EXPECT_EQ(responder.stats().doq_retries, 4u);
  EXPECT_EQ(responder.stats().connections_accepted, 4u);
  EXPECT_EQ(responder.stats().queries[transport_kind::doq], 40u);
}

// Reads Initials and never answers: every connection attempt ends as a handshake timeout.
TEST(doq_load_test, a_silent_server_ends_every_attempt_as_a_handshake_timeout) {
  hostile_server server(
      {}, [](std::span<const std::uint8_t>, std::uint64_t) { return std::vector<reply>{}; });
  load_spec spec = doq_spec(server.port());
  spec.traffic.clients = 2;
  spec.traffic.count = 10;
  spec.traffic.timeout_seconds = 0.3;
  const run_result r = run_checked(spec).result;
  EXPECT_EQ(r.queries_sent, 0u) << summary(r);  // nothing goes before the handshake
  EXPECT_EQ(r.connections.failed, 6u);          // 3 attempts per client, then it gives up
  EXPECT_EQ(r.connections.failed, r.connections.failures.at("quic_handshake_timeout"));
  EXPECT_EQ(r.connections.opened, 0u);
}

// Answers every Initial with Version Negotiation offering only versions the client lacks.
TEST(doq_load_test, version_negotiation_only_is_counted_and_named) {
  hostile_server server({}, [](std::span<const std::uint8_t> packet, std::uint64_t) {
    ngtcp2_version_cid ids{};
    if (ngtcp2_pkt_decode_version_cid(&ids, packet.data(), packet.size(), 18) != 0) {
      return std::vector<reply>{};
    }
    const std::array<std::uint32_t, 1> versions{0xff00001d};  // draft-29 only
    reply r;
    r.data.resize(256);
    const auto n = ngtcp2_pkt_write_version_negotiation(
        r.data.data(), r.data.size(), 0x42, ids.scid, ids.scidlen, ids.dcid, ids.dcidlen,
        versions.data(), versions.size());
    if (n <= 0) return std::vector<reply>{};
    r.data.resize(static_cast<std::size_t>(n));
    return std::vector<reply>{r};
  });
  load_spec spec = doq_spec(server.port());
  spec.traffic.clients = 1;
  spec.traffic.count = 10;
  spec.traffic.timeout_seconds = 1;
  const run_result r = run_checked(spec).result;
  EXPECT_EQ(r.queries_sent, 0u) << summary(r);
  EXPECT_EQ(r.connections.failed, 3u) << summary(r);
  EXPECT_EQ(r.connections.failures.at("quic_version_negotiation"), 3u);
  EXPECT_EQ(r.quic.version_negotiation, 3u);
}

}  // namespace
}  // namespace dnstransport::hostile

#endif
