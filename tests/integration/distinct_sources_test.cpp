// connection_settings::distinct_sources: the server sees exactly that many client addresses,
// whatever the number of clients: claimed in turn by PROXY headers (the next for each UDP
// datagram and each connection), or bound in turn from a source range over TCP; and what
// cannot give that many is refused, naming the setting. The built-in responder counts its
// answers by client address (server_stats::client_addresses), which is what is checked.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include <dnstransport/error.hpp>
#include <dnstransport/load.hpp>
#include <dnstransport/server.hpp>

namespace dnstransport {
namespace {

server_options responder_of(transport_kind t, bool proxy) {
  server_options options;
  options.listen[t] = endpoint{"127.0.0.1", 0};
  options.set_proxy_protocol(proxy ? proxy_policy::required : proxy_policy::off);
  return options;
}

load_spec counted_load(transport_kind t, std::uint16_t port, unsigned clients,
                       std::uint64_t count) {
  load_spec spec;
  spec.target.transport = t;
  spec.target.port = port;
  spec.traffic.clients = clients;
  spec.traffic.outstanding = 2;
  spec.traffic.count = count;
  spec.traffic.timeout_seconds = 20;
  return spec;
}

void claim(load_spec& spec, std::uint64_t distinct) {
  spec.connections.proxy.version = proxy_protocol::v2;
  spec.connections.proxy.sources = {"10.9.0.0/16"};
  spec.connections.distinct_sources = distinct;
}

TEST(distinct_sources_test, more_addresses_than_clients_are_claimed_in_turn_datagram_by_datagram) {
  server responder(responder_of(transport_kind::udp, true));
  // 4 clients of 250 queries, 100 addresses: each client claims 25 of them in turn, each ten
  // times.
  load_spec spec = counted_load(transport_kind::udp, responder.port(transport_kind::udp), 4, 1000);
  claim(spec, 100);
  const run_result r = run_load(spec);
  responder.stop();
  const server_stats st = responder.stats();
  EXPECT_EQ(r.responses_received, 1000u);
  EXPECT_EQ(r.proxy_addresses, 100u);
  EXPECT_EQ(st.client_addresses, 100u);
  ASSERT_FALSE(st.top_clients.empty());
  for (const client_answers& c : st.top_clients) EXPECT_EQ(c.answers, 10u) << c.address;
}

TEST(distinct_sources_test,
     more_addresses_than_clients_are_claimed_in_turn_connection_by_connection) {
  server responder(responder_of(transport_kind::tcp, true));
  // 4 clients of 50 connections of 5 queries, 20 addresses: each client's connections take
  // 5 of them in turn.
  load_spec spec = counted_load(transport_kind::tcp, responder.port(transport_kind::tcp), 4, 1000);
  spec.connections.queries_per_connection = 5;
  claim(spec, 20);
  const run_result r = run_load(spec);
  responder.stop();
  const server_stats st = responder.stats();
  EXPECT_EQ(r.responses_received, 1000u);
  EXPECT_EQ(st.proxy_headers, r.connections.opened);
  EXPECT_EQ(st.client_addresses, 20u);
}

TEST(distinct_sources_test, fewer_addresses_than_clients_are_shared) {
  server responder(responder_of(transport_kind::udp, true));
  load_spec spec = counted_load(transport_kind::udp, responder.port(transport_kind::udp), 8, 400);
  claim(spec, 2);
  const run_result r = run_load(spec);
  responder.stop();
  EXPECT_EQ(r.responses_received, 400u);
  EXPECT_EQ(r.proxy_addresses, 2u);
  const server_stats st = responder.stats();
  EXPECT_EQ(st.client_addresses, 2u);
  EXPECT_EQ(st.top_clients, (std::vector<client_answers>{{"10.9.0.1", 200}, {"10.9.0.2", 200}}));
}

TEST(distinct_sources_test, a_source_range_is_bound_in_turn_by_connection) {
  server responder(responder_of(transport_kind::tcp, false));
  load_spec spec = counted_load(transport_kind::tcp, responder.port(transport_kind::tcp), 4, 300);
  spec.connections.queries_per_connection = 1;
  spec.connections.sources = {"127.5.0.0/24"};
  spec.connections.distinct_sources = 30;
  const run_result r = run_load(spec);
  responder.stop();
  EXPECT_EQ(r.responses_received, 300u);
  EXPECT_EQ(r.source_addresses, 30u);
  EXPECT_FALSE(r.sources_per_client);
  const server_stats st = responder.stats();
  EXPECT_EQ(st.client_addresses, 30u);
  for (const client_answers& c : st.top_clients) EXPECT_EQ(c.answers, 10u) << c.address;
}

// Each refusal names the setting, before anything is sent.
void expect_refused(const load_spec& spec, const std::string& named) {
  try {
    run_load(spec);
    FAIL() << "taken; expected a refusal naming " << named;
  } catch (const setup_error& e) {
    EXPECT_NE(std::string(e.what()).find("distinct_sources"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(named), std::string::npos) << e.what();
  }
}

TEST(distinct_sources_test, what_cannot_give_that_many_addresses_is_refused) {
  // No port is listened on: each is refused before a query leaves.
  load_spec nowhere = counted_load(transport_kind::udp, 9, 4, 10);
  nowhere.connections.distinct_sources = 10;
  expect_refused(nowhere, "connections.proxy.version");  // neither headers nor sources

  load_spec narrow = nowhere;
  claim(narrow, 10);
  narrow.connections.proxy.sources = {"10.9.0.0/29"};  // 6 hosts
  expect_refused(narrow, "connections.proxy.sources");

  load_spec huge = nowhere;
  claim(huge, connection_settings::max_distinct_sources + 1);
  expect_refused(huge, "1048576");

  // Over UDP each client keeps one socket: 10 addresses need 10 clients.
  load_spec sockets = nowhere;
  sockets.connections.sources = {"127.5.0.0/24"};
  expect_refused(sockets, "traffic.clients");
}

}  // namespace
}  // namespace dnstransport
