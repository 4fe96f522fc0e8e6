// Idle clients and per-client rates over loopback against the built-in responder: a client
// sending one query every 500 ms (--client-rate 2) closes its connection after 100 ms with
// nothing to do (--idle 0.1), so every query opens a connection (resumed with --tls-resume,
// 0-RTT with DoQ --early-data; DoH alike); with an idle timeout longer than the gap, one
// connection per client carries everything. The gap leaves an answer 400 ms to arrive before
// the idle timeout would outlast it: a sanitizer build's slowest resumed handshakes take a
// good part of 100 ms. The connection figures (opened per second, open at
// once, handshakes per query) and the usage errors of both flags.
#include <dnstransport/load.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <dnstransport/error.hpp>
#include <dnstransport/report.hpp>
#include <dnstransport/server.hpp>

#include "hostile_checks.hpp"

namespace dnstransport::hostile {
namespace {

// 10 clients, 2 queries per second each, for 2 s of constant arrivals: client i of 10 has
// its k-th query at (k + i/10) × 500 ms, so k = 0..3 fall in the window: 40 queries.
constexpr unsigned clients = 10;
constexpr double client_rate = 2;
constexpr double run_seconds = 2;
constexpr std::uint64_t queries = 40;

server_options server_for(transport_kind t) {
  server_options o;
  if (t == transport_kind::tcp) o.listen[transport_kind::tcp] = endpoint{"127.0.0.1", 0};
  if (t == transport_kind::tls || t == transport_kind::doh) {
    o.listen[t] = endpoint{"127.0.0.1", 0};
    o.certificate_directory = (std::filesystem::path(::testing::TempDir()) /
                               ("idle-clients-" + std::to_string(::getpid())))
                                  .string();
  }
  if (t == transport_kind::doq) {
    o.listen[transport_kind::doq] = endpoint{"127.0.0.1", 0};
    o.doq_early_data = true;
  }
  return o;
}

std::uint16_t port_of(const server& s, transport_kind t) {
  if (t == transport_kind::tcp) return s.port(transport_kind::tcp);
  if (t == transport_kind::tls) return s.port(transport_kind::tls);
  if (t == transport_kind::doh) return s.port(transport_kind::doh);
  return s.port(transport_kind::doq);
}

load_spec idle_spec(const server& s, transport_kind t, double idle_seconds) {
  load_spec spec;
  spec.target.transport = t;
  spec.target.port = port_of(s, t);
  if (t == transport_kind::doq) spec.tls.backend = tls_backend::gnutls;
  spec.traffic.clients = clients;
  spec.traffic.outstanding = 1;
  spec.traffic.client_rate = client_rate;
  spec.connections.idle_seconds = idle_seconds;
  spec.traffic.duration_seconds = run_seconds;
  spec.traffic.timeout_seconds = generous_timeout_seconds;
  return spec;
}

// Each query finds its client's connection closed for idleness (100 ms after the previous
// answer, up to 400 ms before the next query): a connection per query. A client keeps its
// last connection until it idles out or the run ends: client i's last query leaves at
// 1,500 + 50 i ms, so the last client's (idle from 2,050 ms on) ends with the run, and the
// first ones' close idle unless their answers were slow.
void expect_a_connection_per_query(const run_result& r) {
  EXPECT_EQ(r.rate, clients * client_rate);
  EXPECT_EQ(r.client_rate, client_rate);
  EXPECT_EQ(r.queries_scheduled(), queries);
  expect_all_in(r.responses_received, r);
  EXPECT_EQ(r.queries_sent, queries) << summary(r);
  EXPECT_EQ(r.connections.opened, queries) << summary(r);
  EXPECT_EQ(r.connections.closed_idle + r.connections.closed_by_client, queries) << summary(r);
  EXPECT_GE(r.connections.closed_idle, queries - clients) << summary(r);
  EXPECT_LE(r.connections.closed_idle, queries - 1) << summary(r);
  EXPECT_EQ(r.connections.failed, 0u) << r.connections.first_failure;
  EXPECT_DOUBLE_EQ(r.queries_per_connection_achieved(), 1.0);
  EXPECT_NEAR(r.connections_per_second(), static_cast<double>(queries) / r.elapsed_seconds, 1e-9);
  // 30 connections each open for at least the 100 ms idle timeout in the 2 s window: at
  // least 1.5 open on average; a client has at most one open.
  EXPECT_GE(r.connections.concurrent_mean, 1.5);
  EXPECT_LE(r.connections.concurrent_mean, static_cast<double>(clients));
  EXPECT_GE(r.connections.concurrent_max, 1u);
  EXPECT_LE(r.connections.concurrent_max, clients);
}

TEST(idle_clients_test, tcp_idle_timeout_shorter_than_the_gap_opens_a_connection_per_query) {
  server responder(server_for(transport_kind::tcp));
  const run_result r = run_load(idle_spec(responder, transport_kind::tcp, 0.1));
  expect_a_connection_per_query(r);
  EXPECT_EQ(r.handshakes_per_query(), 0.0);  // plain TCP has no handshake above it
  responder.stop();
  EXPECT_EQ(responder.stats().connections_accepted, queries);
}

TEST(idle_clients_test, tcp_idle_timeout_longer_than_the_gap_keeps_one_connection_per_client) {
  server responder(server_for(transport_kind::tcp));
  const run_result r = run_load(idle_spec(responder, transport_kind::tcp, 1.0));
  expect_all_in(r.responses_received, r);
  EXPECT_EQ(r.queries_sent, queries);
  EXPECT_EQ(r.connections.opened, clients) << summary(r);
  EXPECT_EQ(r.connections.closed_idle, 0u);
  EXPECT_EQ(r.connections.closed_by_client, clients);
  // Every client connects within the first 500 ms and keeps its connection until its last
  // answer, after 1,500 ms: all 10 are open at once in between, each for at least 3/4 of
  // the window.
  EXPECT_EQ(r.connections.concurrent_max, clients);
  EXPECT_GE(r.connections.concurrent_mean, 0.7 * clients);
  EXPECT_LE(r.connections.concurrent_mean, static_cast<double>(clients));
}

TEST(idle_clients_test, tls_connections_reopened_after_idling_resume_their_session) {
  server responder(server_for(transport_kind::tls));
  load_spec spec = idle_spec(responder, transport_kind::tls, 0.1);
  spec.tls.resume = true;
  const run_result r = run_load(spec);
  expect_a_connection_per_query(r);
  // A client's first connection has no ticket; every later one resumes.
  EXPECT_EQ(r.handshakes_full, clients);
  EXPECT_EQ(r.handshakes_resumed, queries - clients);
  EXPECT_DOUBLE_EQ(r.handshakes_per_query(), 1.0);
  responder.stop();
  EXPECT_EQ(responder.stats().tls_resumed, queries - clients);

  // The figures read back from the JSON, and write the same document again.
  const std::string text = to_json(r);
  const run_result back = run_result_from_json(text, "idle.json");
  EXPECT_EQ(back.client_rate, client_rate);
  EXPECT_EQ(back.idle_seconds, 0.1);
  EXPECT_EQ(back.connections.closed_idle, r.connections.closed_idle);
  EXPECT_EQ(back.connections.closed_by_client, r.connections.closed_by_client);
  EXPECT_EQ(back.connections.concurrent_max, r.connections.concurrent_max);
  EXPECT_NEAR(back.connections.concurrent_mean, r.connections.concurrent_mean, 1e-9);
  EXPECT_DOUBLE_EQ(back.handshakes_per_query(), 1.0);
  EXPECT_EQ(to_json(back), text);
}

// With --early-data each reconnection's query rides in the resumed ClientHello's 0-RTT.
TEST(idle_clients_test, tls_connections_reopened_after_idling_send_their_query_in_0rtt) {
  server responder(server_for(transport_kind::tls));
  load_spec spec = idle_spec(responder, transport_kind::tls, 0.1);
  spec.tls.resume = true;
  spec.tls.early_data = true;
  const run_result r = run_load(spec);
  expect_a_connection_per_query(r);
  EXPECT_EQ(r.handshakes_resumed, queries - clients);
  EXPECT_EQ(r.early_data.offered, queries - clients);
  EXPECT_EQ(r.early_data.accepted, queries - clients);
  EXPECT_EQ(r.early_data.queries_in_early_data, queries - clients);
  EXPECT_EQ(r.early_data.queries_resent, 0u);
}

// DoH runs on the stream client's connection life cycle: the same idle closes, each new
// connection resumed.
TEST(idle_clients_test, doh_connections_reopened_after_idling_resume_their_session) {
  server responder(server_for(transport_kind::doh));
  load_spec spec = idle_spec(responder, transport_kind::doh, 0.1);
  spec.tls.resume = true;
  const run_result r = run_load(spec);
  expect_a_connection_per_query(r);
  EXPECT_EQ(r.handshakes_full, clients);
  EXPECT_EQ(r.handshakes_resumed, queries - clients);
  EXPECT_EQ(r.http_failed, 0u);
}

#ifdef DNSTRANSPORT_HAVE_DOQ
TEST(idle_clients_test, doq_connections_reopened_after_idling_send_their_query_in_0rtt) {
  server responder(server_for(transport_kind::doq));
  load_spec spec = idle_spec(responder, transport_kind::doq, 0.1);
  spec.tls.resume = true;
  spec.tls.early_data = true;
  const run_result r = run_load(spec);
  expect_a_connection_per_query(r);
  EXPECT_EQ(r.handshakes_full, clients);
  EXPECT_EQ(r.handshakes_resumed, queries - clients);
  EXPECT_EQ(r.early_data.offered, queries - clients);
  EXPECT_EQ(r.early_data.accepted, queries - clients);
  EXPECT_EQ(r.early_data.queries_in_early_data, queries - clients);
  EXPECT_TRUE(r.quic.closes.empty());  // the client closed every connection
}
#endif

std::string validation_error(const load_spec& spec) {
  try {
    validate(spec);
  } catch (const setup_error& e) {
    return e.what();
  }
  return "no setup_error";
}

TEST(idle_clients_test, bad_settings_are_refused_naming_the_flag) {
  load_spec spec;
  spec.target.transport = transport_kind::tcp;
  spec.connections.idle_seconds = -1;
  EXPECT_NE(validation_error(spec).find("load_spec::connections.idle_seconds must be"),
            std::string::npos);
  spec.connections.idle_seconds = 1;
  spec.target.transport = transport_kind::udp;
  EXPECT_NE(validation_error(spec).find(
                "load_spec::connections.idle_seconds applies to transports with connections"),
            std::string::npos);
  spec.connections.idle_seconds = 0;
  spec.traffic.client_rate = -0.5;
  EXPECT_NE(validation_error(spec).find("load_spec::traffic.client_rate must be"),
            std::string::npos);
  spec.traffic.client_rate = 0.5;
  spec.traffic.rate = 100;
  const std::string both = validation_error(spec);
  EXPECT_NE(both.find("load_spec::traffic.rate and load_spec::traffic.client_rate"),
            std::string::npos)
      << both;
}

TEST(idle_clients_test, the_total_rate_is_the_clients_times_the_client_rate) {
  load_spec spec;
  spec.traffic.clients = 10000;
  spec.traffic.client_rate = 0.2;
  EXPECT_DOUBLE_EQ(total_rate(spec), 2000.0);
  spec.traffic.client_rate = 0;
  spec.traffic.rate = 500;
  EXPECT_DOUBLE_EQ(total_rate(spec), 500.0);
  spec.traffic.rate = 0;
  EXPECT_EQ(total_rate(spec), 0.0);
}

}  // namespace
}  // namespace dnstransport::hostile
