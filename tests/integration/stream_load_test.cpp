// TCP and TLS loads over loopback against the built-in responder: framing, pipelining,
// queries per connection, server-initiated closes, both TLS backends, resumption, verification,
// and the generator's own wake-ups and system calls per answer.
#include <dnstransport/load.hpp>

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <tuple>

#include <dnstransport/server.hpp>
#include <dnstransport/tls.hpp>

#include "hostile_checks.hpp"
#include "hostile_server.hpp"
#include "scratch_dir.hpp"

namespace dnstransport {
namespace {

using hostile::scratch_directory;

std::string backend_name(const ::testing::TestParamInfo<tls_backend>& param) {
  return std::string(tls_backend_name(param.param));
}

server_options stream_server(transport_kind t) {
  server_options o;
  if (t == transport_kind::tcp) o.listen[transport_kind::tcp] = endpoint{"127.0.0.1", 0};
  if (t == transport_kind::tls) o.listen[transport_kind::tls] = endpoint{"127.0.0.1", 0};
  return o;
}

load_spec stream_spec_for(const server& s, transport_kind t) {
  load_spec spec;
  spec.target.transport = t;
  spec.target.port =
      t == transport_kind::tcp ? s.port(transport_kind::tcp) : s.port(transport_kind::tls);
  // The responder answers everything: a long timeout costs nothing and no busy machine
  // turns an answer into a loss.
  spec.traffic.timeout_seconds = 10;
  return spec;
}

TEST(stream_load_test, tcp_persistent_connections_answer_everything) {
  server responder(stream_server(transport_kind::tcp));
  load_spec spec = stream_spec_for(responder, transport_kind::tcp);
  spec.traffic.clients = 4;
  spec.traffic.outstanding = 50;
  spec.traffic.count = 20000;
  const run_result r = run_load(spec);
  EXPECT_EQ(r.queries_sent, 20000u);
  EXPECT_EQ(r.responses_received, 20000u);
  EXPECT_EQ(r.connections.opened, 4u);
  EXPECT_EQ(r.connections.closed_by_client, 4u);
  EXPECT_EQ(r.connections.failed, 0u);
  EXPECT_EQ(r.connect_latency.count(), 4u);
  EXPECT_EQ(r.first_query_latency.count(), 4u);
  EXPECT_EQ(queries_ended(r), r.queries_sent);
}

TEST(stream_load_test, abortive_close_still_counts_everything) {
  server responder(stream_server(transport_kind::tcp));
  load_spec spec = stream_spec_for(responder, transport_kind::tcp);
  spec.traffic.count = 200;
  spec.traffic.outstanding = 1;
  spec.connections.queries_per_connection = 1;
  spec.connections.close = close_mode::rst;
  const run_result r = run_load(spec);
  EXPECT_EQ(r.responses_received, 200u);
  EXPECT_EQ(r.connections.opened, 200u);
}

TEST(stream_load_test, server_closing_mid_pipeline_is_counted_and_survived) {
  server_options o = stream_server(transport_kind::tcp);
  o.close_after_queries = 5;
  server responder(o);
  load_spec spec = stream_spec_for(responder, transport_kind::tcp);
  spec.traffic.clients = 2;
  spec.traffic.outstanding = 20;
  spec.traffic.count = 1000;
  const run_result r = hostile::run_checked(spec).result;
  responder.stop();
  const server_stats served = responder.stats();
  EXPECT_EQ(r.queries_sent, 1000u);
  EXPECT_EQ(queries_ended(r), r.queries_sent);
  // Every answer the server wrote arrived and was counted, on the connection it came on.
  EXPECT_EQ(r.responses_received, served.queries[transport_kind::tcp]);
  EXPECT_EQ(r.connections.answered, r.responses_received);
  EXPECT_EQ(r.responses_received + r.lost_on_close, r.queries_sent);
  // Each connection ends closed by the server after exactly 5 answers, or by its client at
  // the end (at most one a client, with the last 5 answers or fewer): the answers are 5 a
  // server close, and the ones on those last connections.
  const std::uint64_t server_closes =
      r.connections.closed_by_server + r.connections.reset_by_server;
  EXPECT_EQ(r.connections.opened, served.connections_accepted);
  EXPECT_EQ(r.connections.opened, server_closes + r.connections.closed_by_client);
  EXPECT_LE(r.connections.closed_by_client, 2u);
  EXPECT_GE(r.responses_received, 5 * server_closes);
  EXPECT_LE(r.responses_received, 5 * (server_closes + r.connections.closed_by_client));
  // The queries a connection carried past its 5 answers were in flight when it closed.
  EXPECT_GT(r.lost_on_close, 0u);
}

TEST(stream_load_test, idle_timeout_closes_are_followed_by_reconnects) {
  server_options o = stream_server(transport_kind::tcp);
  o.idle_timeout_seconds = 0.05;
  server responder(o);
  load_spec spec = stream_spec_for(responder, transport_kind::tcp);
  spec.traffic.rate = 2;  // one query every 500 ms: the server closes 50 ms after each answer
  spec.traffic.count = 4;
  spec.traffic.outstanding = 1;
  spec.traffic.timeout_seconds = 10;
  const run_result r = hostile::run_checked(spec).result;
  EXPECT_EQ(r.queries_sent, 4u);
  EXPECT_EQ(r.responses_received, 4u);
  // Every query after the first found its connection closed by the server; the last one is
  // closed by whichever side comes first (the client at the end, or the server's timeout).
  EXPECT_EQ(r.connections.opened, 4u);
  EXPECT_GE(r.connections.closed_by_server, 3u);
  EXPECT_EQ(r.connections.closed_by_server + r.connections.closed_by_client, 4u);
  EXPECT_EQ(queries_ended(r), r.queries_sent);
}

TEST(stream_load_test, reversed_answers_are_matched_and_counted_out_of_order) {
  server_options o = stream_server(transport_kind::tcp);
  o.reverse_order = true;
  server responder(o);
  load_spec spec = stream_spec_for(responder, transport_kind::tcp);
  spec.traffic.outstanding = 50;
  spec.traffic.count = 5000;
  const run_result r = hostile::run_checked(spec).result;
  EXPECT_EQ(r.responses_received, 5000u);
  EXPECT_GT(r.out_of_order, 0u);
}

TEST(stream_load_test, refused_connections_are_failures_with_errno) {
  // Nothing listens on the port; in count mode each client gives up after three refused
  // connects in a row.
  const hostile::unlistened_tcp_port closed;
  load_spec spec;
  spec.target.transport = transport_kind::tcp;
  spec.target.port = closed.port();
  spec.traffic.clients = 2;
  spec.traffic.count = 100;
  const run_result r = hostile::run_checked(spec).result;
  EXPECT_EQ(r.queries_sent, 0u);
  EXPECT_EQ(r.connections.opened, 0u);
  EXPECT_EQ(r.connections.failed, 6u);
  EXPECT_EQ(r.connections.failures.at("ECONNREFUSED"), 6u);
  EXPECT_NE(r.connections.first_failure.find("refused"), std::string::npos);
}

// One query in flight on one connection: each answer costs one wake-up, one recv (the whole
// answer, shorter than the buffer, so no second read) and one sendmsg (the next query).
// Besides those: the connection's set-up (socket, ioctl, SO_TIMESTAMPNS, TCP_NODELAY,
// IP_BIND_ADDRESS_NO_PORT, bind, connect, SO_ERROR once writable: one wake-up) and close,
// and the 10 ms ticks.
TEST(stream_load_test, tcp_one_query_in_flight_costs_a_wakeup_and_two_calls_per_answer) {
  server responder(stream_server(transport_kind::tcp));
  load_spec spec = stream_spec_for(responder, transport_kind::tcp);
  spec.traffic.outstanding = 1;
  spec.traffic.count = 500;
  const run_result r = run_load(spec);
  ASSERT_EQ(r.responses_received, 500u);
  EXPECT_GE(r.generator.syscalls, 2 * 500u);
  EXPECT_LE(r.generator.syscalls, 2 * 500u + 9);
  const auto ticks = static_cast<std::uint64_t>(r.elapsed_seconds * 100) + 3;
  EXPECT_GE(r.generator.wakeups, 500u);
  EXPECT_LE(r.generator.wakeups, 500u + 1 + ticks);
}

// All the queries a client may send go in one gathered write: far fewer calls per answer
// than one write per query, which alone costs one call per answer.
TEST(stream_load_test, tcp_gathered_writes_cost_fewer_calls_per_answer_than_one_per_query) {
  server responder(stream_server(transport_kind::tcp));
  load_spec spec = stream_spec_for(responder, transport_kind::tcp);
  spec.traffic.outstanding = 50;
  spec.traffic.count = 10000;
  const run_result gathered = run_load(spec);
  spec.generator.gather_writes = false;
  const run_result one_by_one = run_load(spec);
  ASSERT_EQ(gathered.responses_received, 10000u);
  ASSERT_EQ(one_by_one.responses_received, 10000u);
  EXPECT_GE(one_by_one.syscalls_per_answer(), 1);
  EXPECT_LT(gathered.syscalls_per_answer(), 1);
  EXPECT_LT(gathered.syscalls_per_answer(), one_by_one.syscalls_per_answer());
}

// Each backend's reads and writes on the socket are counted (OpenSSL through our read BIO and
// its socket BIO's callback, GnuTLS through its transport functions): one query in flight costs at
// least a write and a read per answer, and a record's header and body may be two reads. The
// handshake adds a few dozen calls.
class tls_generator_test : public ::testing::TestWithParam<tls_backend> {};

TEST_P(tls_generator_test, library_reads_and_writes_are_counted) {
  server_options o = stream_server(transport_kind::tls);
  o.certificate_directory = scratch_directory("tls-generator");
  server responder(o);
  load_spec spec = stream_spec_for(responder, transport_kind::tls);
  spec.tls.backend = GetParam();
  spec.traffic.outstanding = 1;
  spec.traffic.count = 300;
  const run_result r = run_load(spec);
  ASSERT_EQ(r.responses_received, 300u) << r.connections.first_failure;
  EXPECT_GE(r.generator.syscalls, 2 * 300u);
  EXPECT_LE(r.generator.syscalls, 4 * 300u + 100);
  EXPECT_GE(r.generator.wakeups, 300u);
}

// The clients read ahead (OpenSSL's read-ahead, a read buffer under GnuTLS): a record's
// header and body come in one read, so one query in flight costs a write and a read per
// answer, as over plain TCP, not a write and two reads.
TEST_P(tls_generator_test, one_read_per_answer) {
  server_options o = stream_server(transport_kind::tls);
  o.certificate_directory = scratch_directory("tls-read-ahead");
  server responder(o);
  load_spec spec = stream_spec_for(responder, transport_kind::tls);
  spec.tls.backend = GetParam();
  spec.traffic.outstanding = 1;
  spec.traffic.count = 1000;
  const run_result r = run_load(spec);
  ASSERT_EQ(r.responses_received, 1000u) << r.connections.first_failure;
  EXPECT_GE(r.syscalls_per_answer(), 2);
  EXPECT_LT(r.syscalls_per_answer(), 2.5);
}

INSTANTIATE_TEST_SUITE_P(stream_load_test, tls_generator_test,
                         ::testing::Values(tls_backend::openssl, tls_backend::gnutls),
                         backend_name);

using tls_case = std::tuple<tls_backend, tls_backend, tls_version, bool>;

std::string tls_case_name(const ::testing::TestParamInfo<tls_case>& param) {
  const auto [client, server, version, resume] = param.param;
  std::string name = std::string(tls_backend_name(client)) + "_to_" +
                     std::string(tls_backend_name(server)) + "_v" +
                     std::string(tls_version_name(version)) + (resume ? "_resume" : "");
  std::replace(name.begin(), name.end(), '.', '_');
  return name;
}

class tls_matrix_test : public ::testing::TestWithParam<tls_case> {};

TEST_P(tls_matrix_test, handshakes_answers_and_resumption) {
  const auto [client_backend, server_backend, version, resume] = GetParam();
  server_options o = stream_server(transport_kind::tls);
  o.tls_options.backend = server_backend;
  o.certificate_directory = scratch_directory("tls-matrix");
  server responder(o);
  load_spec spec = stream_spec_for(responder, transport_kind::tls);
  spec.tls.backend = client_backend;
  spec.tls.min_version = spec.tls.max_version = version;
  spec.tls.resume = resume;
  spec.traffic.clients = 2;
  spec.traffic.outstanding = 5;
  spec.traffic.count = 100;
  spec.connections.queries_per_connection = 10;
  spec.traffic.timeout_seconds = 10;
  const run_result r = run_load(spec);
  EXPECT_EQ(r.responses_received, 100u) << r.connections.first_failure;
  // 50 queries per client, 10 per connection: five connections each, one after the other.
  EXPECT_EQ(r.connections.opened, 10u);
  EXPECT_EQ(r.connections.failed, 0u) << r.connections.first_failure;
  EXPECT_EQ(r.handshakes_full + r.handshakes_resumed, 10u);
  if (resume) {
    // A client's first connection has no ticket; every later one offers the ticket the
    // previous connection got (the responder renews tickets), and the responder takes it.
    EXPECT_EQ(r.handshakes_full, 2u);
    EXPECT_EQ(r.handshakes_resumed, 8u);
  } else {
    EXPECT_EQ(r.handshakes_full, 10u);
    EXPECT_EQ(r.handshakes_resumed, 0u);
  }
  // The responder saw the same handshakes.
  responder.stop();
  EXPECT_EQ(responder.stats().tls_resumed, r.handshakes_resumed);
  EXPECT_EQ(responder.stats().connections_accepted, 10u);
  EXPECT_EQ(responder.stats().queries[transport_kind::tls], 100u);
  EXPECT_EQ(r.handshake_latency.count(), 10u);
}

INSTANTIATE_TEST_SUITE_P(
    stream_load_test, tls_matrix_test,
    ::testing::Combine(::testing::Values(tls_backend::openssl, tls_backend::gnutls),
                       ::testing::Values(tls_backend::openssl, tls_backend::gnutls),
                       ::testing::Values(tls_version::v1_2, tls_version::v1_3), ::testing::Bool()),
    tls_case_name);

class tls_verify_test : public ::testing::TestWithParam<tls_backend> {};

TEST_P(tls_verify_test, right_ca_passes_wrong_ca_fails_every_handshake) {
  const std::filesystem::path dir = scratch_directory("tls-verify");
  server_options o = stream_server(transport_kind::tls);
  o.certificate_directory = (dir / "server").string();
  server responder(o);
  const auto wrong = generate_self_signed_certificate(dir / "other");

  load_spec spec = stream_spec_for(responder, transport_kind::tls);
  spec.tls.backend = GetParam();
  spec.tls.verify = true;
  spec.tls.server_name = "localhost";
  spec.tls.ca_file = responder.certificate().certificate_file;
  spec.traffic.count = 20;
  spec.connections.queries_per_connection = 1;
  const run_result good = run_load(spec);
  EXPECT_EQ(good.responses_received, 20u) << good.connections.first_failure;
  // The chain is the same on every connection: verified in full once (or once per client
  // whose first handshake ran before another's verdict was in), then taken as verified.
  EXPECT_GE(good.connections.certificates_verified, 1u);
  EXPECT_LE(good.connections.certificates_verified, spec.traffic.clients);
  EXPECT_EQ(good.connections.certificates_verified + good.connections.certificates_reused, 20u);

  // Each client gives up after three handshakes in a row failed (count mode).
  spec.tls.ca_file = wrong.certificate_file;
  const run_result bad = hostile::run_checked(spec).result;
  EXPECT_EQ(bad.queries_sent, 0u);
  EXPECT_EQ(bad.connections.failed, 3u * spec.traffic.clients);
  EXPECT_EQ(bad.connections.failures.at("tls_certificate"), 3u * spec.traffic.clients);
  EXPECT_FALSE(bad.connections.first_failure.empty());
  // A chain that failed is never taken as verified: each handshake checked it again.
  EXPECT_EQ(bad.connections.certificates_verified, 3u * spec.traffic.clients);
  EXPECT_EQ(bad.connections.certificates_reused, 0u);
}

INSTANTIATE_TEST_SUITE_P(stream_load_test, tls_verify_test,
                         ::testing::Values(tls_backend::openssl, tls_backend::gnutls),
                         backend_name);

TEST(stream_load_test, tls_client_against_plain_tcp_port_fails_as_not_tls) {
  server responder(stream_server(transport_kind::tcp));
  load_spec spec;
  spec.target.transport = transport_kind::tls;
  spec.target.port = responder.port(transport_kind::tcp);
  // The responder waits for the rest of a "message" whose length is the ClientHello's
  // first two bytes, so the handshake times out, three times per client (count mode).
  spec.traffic.clients = 2;
  spec.traffic.count = 100;
  spec.traffic.timeout_seconds = 0.3;
  const run_result r = hostile::run_checked(spec).result;
  EXPECT_EQ(r.queries_sent, 0u);
  EXPECT_EQ(r.connections.failed, 6u);
  EXPECT_EQ(r.connections.failures.at("ETIMEDOUT"), 6u);
}

}  // namespace
}  // namespace dnstransport
