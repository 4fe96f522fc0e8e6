// The PROXY protocol (connection_settings::proxy, --proxy-protocol): a server behind a proxy
// (the tests' hostile_server, reading the headers as dnsdist does from a trusted proxy) sees
// each client's claimed address in a header before each UDP query and at the start of each
// TCP and TLS connection, before the TLS handshake, and answers every query.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <set>
#include <string>

#include <fmt/format.h>

#include <dnstransport/error.hpp>
#include <dnstransport/load.hpp>
#include <dnstransport/report.hpp>
#include <dnstransport/server.hpp>

#include "cli_runs.hpp"
#include "hostile_server.hpp"
#include "misbehaviour.hpp"

namespace dnstransport {
namespace {

using hostile::answer_all;
using hostile::hostile_server;
using hostile::proxied_client;

hostile::hostile_options behind_a_proxy(transport_kind transport) {
  hostile::hostile_options options;
  options.transport = transport;
  options.proxy_protocol = true;
  return options;
}

load_spec proxied_load(transport_kind transport, std::uint16_t port, unsigned clients,
                       std::uint64_t count) {
  load_spec spec;
  spec.target.transport = transport;
  spec.target.port = port;
  spec.traffic.clients = clients;
  spec.traffic.outstanding = 2;
  spec.traffic.count = count;
  spec.traffic.timeout_seconds = 20;
  spec.connections.proxy.version = proxy_protocol::v2;
  spec.connections.proxy.sources = {"10.9.0.0/29"};  // 6 hosts
  return spec;
}

std::map<std::string, unsigned> by_source(const std::vector<proxied_client>& headers) {
  std::map<std::string, unsigned> out;
  for (const auto& h : headers) ++out[h.source];
  return out;
}

TEST(proxy_protocol_test, every_udp_query_carries_its_clients_address) {
  hostile_server server(behind_a_proxy(transport_kind::udp), answer_all());
  const run_result r = run_load(proxied_load(transport_kind::udp, server.port(), 4, 80));
  EXPECT_EQ(r.responses_received, 80u);
  EXPECT_EQ(r.proxy_protocol, "v2");
  EXPECT_EQ(r.proxy_addresses, 4u);
  EXPECT_EQ(server.proxy_refused(), 0u);
  const auto headers = server.proxied();
  ASSERT_EQ(headers.size(), 80u);  // one per datagram
  const auto sources = by_source(headers);
  ASSERT_EQ(sources.size(), 4u);
  for (unsigned i = 1; i <= 4; ++i) EXPECT_EQ(sources.at(fmt::format("10.9.0.{}", i)), 20u) << i;
  for (const auto& h : headers) {
    EXPECT_FALSE(h.stream);
    EXPECT_EQ(h.version, 2);
    EXPECT_EQ(h.destination, "127.0.0.1");
    EXPECT_EQ(h.destination_port, server.port());
    EXPECT_GE(h.source_port, 1024);
  }
  // The real source is this machine's still.
  EXPECT_EQ(server.sources(), std::set<std::string>{"127.0.0.1"});
}

TEST(proxy_protocol_test, each_tcp_connection_starts_with_one_header_and_its_tlvs) {
  hostile_server server(behind_a_proxy(transport_kind::tcp), answer_all());
  load_spec spec = proxied_load(transport_kind::tcp, server.port(), 3, 30);
  spec.connections.queries_per_connection = 5;
  spec.connections.proxy.tlvs = {{0x04, {0x00}}, {0xE0, {0xde, 0xad, 0xbe, 0xef}}};
  const run_result r = run_load(spec);
  EXPECT_EQ(r.responses_received, 30u);
  EXPECT_EQ(server.proxy_refused(), 0u);
  const auto headers = server.proxied();
  EXPECT_EQ(headers.size(), server.connections());  // one per connection
  EXPECT_EQ(headers.size(), r.connections.opened);
  EXPECT_EQ(by_source(headers).size(), 3u);
  for (const auto& h : headers) {
    EXPECT_TRUE(h.stream);
    ASSERT_EQ(h.tlvs.size(), 2u);
    EXPECT_EQ(h.tlvs[0].first, 0x04);
    EXPECT_EQ(h.tlvs[1].second, (hostile::bytes{0xde, 0xad, 0xbe, 0xef}));
  }
}

TEST(proxy_protocol_test, a_tls_connection_sends_its_header_before_the_handshake) {
  for (const proxy_protocol version : {proxy_protocol::v1, proxy_protocol::v2}) {
    hostile_server server(behind_a_proxy(transport_kind::tls), answer_all());
    load_spec spec = proxied_load(transport_kind::tls, server.port(), 2, 20);
    spec.connections.queries_per_connection = 10;
    spec.connections.proxy.version = version;
    spec.connections.proxy.sources = {"2001:db8::/126"};  // IPv6 claimed over IPv4
    const run_result r = run_load(spec);
    EXPECT_EQ(r.responses_received, 20u) << proxy_protocol_name(version);
    EXPECT_EQ(r.handshakes_full + r.handshakes_resumed, r.connections.opened);
    const auto headers = server.proxied();
    ASSERT_EQ(headers.size(), r.connections.opened);
    for (const auto& h : headers) {
      EXPECT_EQ(h.version, version == proxy_protocol::v1 ? 1 : 2);
      // Mixed families: the server's IPv4 address mapped into IPv6.
      EXPECT_EQ(h.destination, "::ffff:127.0.0.1");
    }
    EXPECT_EQ(by_source(headers).size(), 2u);
    EXPECT_TRUE(by_source(headers).contains("2001:db8::1"));
  }
}

TEST(proxy_protocol_test, random_addresses_are_the_same_for_the_same_seed) {
  const auto draw = [](std::uint64_t seed) {
    hostile_server server(behind_a_proxy(transport_kind::udp), answer_all());
    load_spec spec = proxied_load(transport_kind::udp, server.port(), 4, 8);
    spec.connections.proxy.sources = {"10.0.0.0/8"};
    spec.connections.proxy.random = true;
    spec.connections.proxy.seed = seed;
    const run_result r = run_load(spec);
    EXPECT_EQ(r.responses_received, 8u);
    std::set<std::string> seen;
    for (const auto& h : server.proxied()) seen.insert(h.source);
    return seen;
  };
  const auto first = draw(7);
  EXPECT_EQ(first.size(), 4u);  // 4 draws from 16 million addresses
  EXPECT_EQ(draw(7), first);
  EXPECT_NE(draw(8), first);
  EXPECT_FALSE(first.contains("10.0.0.1"));  // not the range in order
}

TEST(proxy_protocol_test, settings_that_cannot_work_are_refused_naming_them) {
  const auto refused = [](load_spec spec, const std::string& names) {
    try {
      validate(spec);
      ADD_FAILURE() << "not refused: " << names;
    } catch (const setup_error& e) {
      EXPECT_NE(std::string(e.what()).find(names), std::string::npos) << e.what();
    }
  };
  load_spec spec = proxied_load(transport_kind::udp, 53, 1, 1);
  spec.connections.proxy.sources.clear();
  refused(spec, "connections.proxy.sources");
  spec = proxied_load(transport_kind::doq, 853, 1, 1);
  spec.tls.backend = tls_backend::gnutls;
  refused(spec, "connections.proxy.version");
  spec = proxied_load(transport_kind::udp, 53, 1, 1);
  spec.connections.proxy.version = proxy_protocol::v1;
  refused(spec, "connections.proxy.version");
  spec = proxied_load(transport_kind::tcp, 53, 1, 1);
  spec.connections.proxy.version = proxy_protocol::v1;
  spec.connections.proxy.tlvs = {{1, {}}};
  refused(spec, "connections.proxy.tlvs");
  spec = proxied_load(transport_kind::udp, 53, 1, 1);
  spec.traffic.tc_retry_tcp = true;
  refused(spec, "traffic.tc_retry_tcp");
}

// The built-in responder reads the headers of a load that sends them, over every transport
// that can carry one; a load without them is dropped (UDP) or closed (streams), and counted.
TEST(proxy_protocol_test, the_built_in_responder_reads_the_headers_and_drops_what_lacks_one) {
  server_options options;
  options.set_proxy_protocol(proxy_policy::required);
  for (const transport_kind t :
       {transport_kind::udp, transport_kind::tcp, transport_kind::tls, transport_kind::doh}) {
    options.listen[t] = endpoint{"127.0.0.1", 0};
  }
  server responder(options);
  std::uint64_t headers = 0;
  for (const transport_kind t :
       {transport_kind::udp, transport_kind::tcp, transport_kind::tls, transport_kind::doh}) {
    load_spec spec = proxied_load(t, responder.port(t), 3, 30);
    if (traits_of(t).has_connections) spec.connections.queries_per_connection = 10;
    const run_result r = run_load(spec);
    EXPECT_EQ(r.responses_received, 30u) << transport_name(t);
    headers += traits_of(t).has_connections ? r.connections.opened : r.queries_sent;
  }
  const server_stats read = responder.stats();
  EXPECT_EQ(read.proxy_headers, headers);
  EXPECT_EQ(read.proxy_refused, 0u);
  for (const transport_kind t : {transport_kind::udp, transport_kind::tcp}) {
    load_spec plain = proxied_load(t, responder.port(t), 1, 2);
    plain.connections.proxy = {};
    plain.traffic.timeout_seconds = 0.3;
    const run_result r = run_load(plain);
    EXPECT_EQ(r.responses_received, 0u) << transport_name(t);
  }
  EXPECT_GE(responder.stats().proxy_refused, 2u);  // a datagram, a connection (or more)
  // The clients it answered are the addresses the headers claimed: 40 answers each, 10 per
  // transport; the loads without headers got none. Counted once it has stopped.
  EXPECT_EQ(responder.stats().client_addresses, 0u);
  responder.stop();
  const server_stats stopped = responder.stats();
  EXPECT_EQ(stopped.client_addresses, 3u);
  EXPECT_EQ(stopped.top_clients,
            (std::vector<client_answers>{{"10.9.0.1", 40}, {"10.9.0.2", 40}, {"10.9.0.3", 40}}));
}

// A server that does not accept PROXY headers from this machine, as dnsdist without
// setProxyProtocolACL does: it reads what the connection starts with and hangs up.
hostile::connection_script hangs_up_after_the_header() {
  return [](hostile::stream_peer& peer) {
    peer.read_some(16, std::chrono::seconds(5));
    peer.close();
  };
}

TEST(proxy_protocol_test, a_server_that_hangs_up_on_the_header_is_counted_as_refusing_it) {
  for (const transport_kind t : {transport_kind::tcp, transport_kind::tls}) {
    SCOPED_TRACE(transport_name(t));
    hostile::hostile_options options;
    options.transport = t;
    options.tls_handshake = false;  // the header comes before TLS: no handshake to answer
    hostile_server server(options, hangs_up_after_the_header());
    load_spec spec = proxied_load(t, server.port(), 2, 0);
    spec.traffic.count = 0;
    spec.traffic.duration_seconds = 0.3;
    spec.traffic.timeout_seconds = 0.3;
    const run_result r = run_load(spec);
    EXPECT_EQ(r.responses_received, 0u);
    const connection_stats& c = r.connections;
    ASSERT_GT(c.proxy_refused, 0u);
    // Each one counted where it ended too: closed, reset, or a handshake the server ended.
    EXPECT_LE(c.proxy_refused, c.closed_by_server + c.reset_by_server + c.failed);
    // Over TLS the handshake never completes: ended by the server (tls_closed, or a reset).
    if (t == transport_kind::tls) {
      EXPECT_GT(c.failed, 0u);
    }
    ASSERT_FALSE(r.warnings.empty());
    EXPECT_NE(r.warnings.back().find("no query was answered and the server ended "),
              std::string::npos)
        << r.warnings.back();
    EXPECT_NE(r.warnings.back().find("the queries carried PROXY protocol headers"),
              std::string::npos);
    EXPECT_NE(format_table(r).find("PROXY header refused"), std::string::npos);
  }
}

// dnsdist's place for the header over DoT: the first octets inside the TLS session.
TEST(proxy_protocol_test, inside_tls_the_header_is_the_sessions_first_octets) {
  hostile::hostile_options options;
  options.transport = transport_kind::tls;
  std::atomic<unsigned> headers{0};
  hostile_server server(options, [&headers](hostile::stream_peer& peer) {
    // A version 2 header for IPv4 is 28 octets: 12 of signature, 4 of version, command,
    // family and length, 12 of addresses and ports.
    hostile::bytes header;
    while (header.size() < 28 && !peer.gone()) {
      const auto more = peer.read_some(28 - header.size(), std::chrono::seconds(5));
      if (more.empty()) return;
      header.insert(header.end(), more.begin(), more.end());
    }
    static constexpr std::uint8_t signature[12] = {0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d,
                                                   0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a};
    if (!std::equal(std::begin(signature), std::end(signature), header.begin()) ||
        header[16] != 10 || header[17] != 9 || header[18] != 0) {
      return;  // not a header claiming 10.9.0.x: hang up
    }
    ++headers;
    while (const auto query = peer.read_message()) {
      if (!peer.write_message(hostile::answer_to(*query))) return;
    }
  });
  load_spec spec = proxied_load(transport_kind::tls, server.port(), 2, 40);
  spec.connections.proxy.inside_tls = true;
  const run_result r = run_load(spec);
  EXPECT_EQ(r.responses_received, 40u);
  EXPECT_EQ(r.connections.failed, 0u) << r.connections.first_failure;
  EXPECT_EQ(headers.load(), r.connections.opened);
  // Before the handshake instead, the server's TLS library takes the header's octets for a
  // TLS record and the handshake fails: nothing is answered.
  spec.connections.proxy.inside_tls = false;
  spec.traffic.count = 0;
  spec.traffic.duration_seconds = 0.3;
  spec.traffic.timeout_seconds = 0.3;
  EXPECT_EQ(run_load(spec).responses_received, 0u);
  // Only with a TLS session to put it in, and not with queries in 0-RTT before it.
  for (const bool early : {false, true}) {
    load_spec refused = proxied_load(early ? transport_kind::tls : transport_kind::tcp, 853, 1, 1);
    refused.connections.proxy.inside_tls = true;
    refused.tls.early_data = early;
    refused.tls.resume = early;
    try {
      run_load(refused);
      ADD_FAILURE() << "not refused, early data " << early;
    } catch (const setup_error& e) {
      EXPECT_NE(std::string(e.what()).find("connections.proxy.inside_tls"), std::string::npos)
          << e.what();
    }
  }
}

TEST(proxy_protocol_test, a_connection_without_a_header_is_never_counted_as_refusing_one) {
  hostile::hostile_options options;
  options.transport = transport_kind::tcp;
  hostile_server server(options, hangs_up_after_the_header());
  load_spec spec = proxied_load(transport_kind::tcp, server.port(), 2, 0);
  spec.connections.proxy = {};
  spec.traffic.count = 0;
  spec.traffic.duration_seconds = 0.3;
  spec.traffic.timeout_seconds = 0.3;
  const run_result r = run_load(spec);
  EXPECT_GT(r.connections.closed_by_server + r.connections.reset_by_server, 0u);
  EXPECT_EQ(r.connections.proxy_refused, 0u);
  for (const auto& w : r.warnings) EXPECT_EQ(w.find("PROXY"), std::string::npos) << w;
}

TEST(proxy_protocol_test, a_udp_server_that_drops_headed_queries_is_named_in_a_warning) {
  hostile::hostile_options options;  // reads no header: the datagrams do not parse
  hostile_server server(options, [](std::span<const std::uint8_t>, std::uint64_t) {
    return std::vector<hostile::reply>{};
  });
  load_spec spec = proxied_load(transport_kind::udp, server.port(), 2, 0);
  spec.traffic.count = 0;
  spec.traffic.duration_seconds = 0.3;
  spec.traffic.timeout_seconds = 0.3;
  const run_result r = run_load(spec);
  EXPECT_EQ(r.responses_received, 0u);
  ASSERT_FALSE(r.warnings.empty());
  EXPECT_NE(r.warnings.back().find("setProxyProtocolACL"), std::string::npos) << r.warnings.back();
}

#ifdef DNSTRANSPORT_CLI_PATH
// proxy_policy::optional (as Knot Resolver's net.proxy_allowed): a datagram or connection
// with a header is from the address it claims, one without from its peer; per listener.
TEST(proxy_protocol_test, an_optional_listener_takes_queries_with_and_without_a_header) {
  server_options options;
  options.listen[transport_kind::udp] = endpoint{"127.0.0.1", 0};
  options.listen[transport_kind::tcp] = endpoint{"127.0.0.1", 0};
  options.proxy_protocol[transport_kind::udp] = proxy_policy::optional;
  options.proxy_protocol[transport_kind::tcp] = proxy_policy::required;
  server responder(options);
  for (const transport_kind t : {transport_kind::udp, transport_kind::tcp}) {
    EXPECT_EQ(run_load(proxied_load(t, responder.port(t), 2, 20)).responses_received, 20u)
        << transport_name(t);
  }
  load_spec plain = proxied_load(transport_kind::udp, responder.port(transport_kind::udp), 1, 10);
  plain.connections.proxy = {};
  EXPECT_EQ(run_load(plain).responses_received, 10u);  // optional: the peer's own
  load_spec refused = proxied_load(transport_kind::tcp, responder.port(transport_kind::tcp), 1, 2);
  refused.connections.proxy = {};
  refused.traffic.timeout_seconds = 0.3;
  EXPECT_EQ(run_load(refused).responses_received, 0u);  // required on tcp
  responder.stop();
  const server_stats st = responder.stats();
  EXPECT_EQ(st.proxy_headers, 20u + 2u);  // one per datagram, one per connection
  EXPECT_GE(st.proxy_refused, 1u);
  EXPECT_EQ(st.client_addresses, 3u);  // 10.9.0.1, 10.9.0.2 and 127.0.0.1
  EXPECT_EQ(st.top_clients.back().address, "127.0.0.1");

  server_options quic;
  quic.listen[transport_kind::doq] = endpoint{"127.0.0.1", 0};
  quic.proxy_protocol[transport_kind::doq] = proxy_policy::optional;
  EXPECT_THROW(server{quic}, setup_error);
  quic.set_proxy_protocol(proxy_policy::required);  // every listener that can read one
  EXPECT_EQ(quic.proxy_protocol[transport_kind::doq], proxy_policy::off);
  EXPECT_EQ(quic.proxy_protocol[transport_kind::doh], proxy_policy::required);
}

TEST(proxy_protocol_test, the_cli_runs_against_its_responder_and_refuses_what_cannot_be_sent) {
  const hostile::process_result r = hostile::run_process(
      hostile::cli, {"run", "--transport", "tcp", "--proxy-protocol", "v2", "--proxy-source",
                     "10.0.0.0/8", "--queries-per-connection", "5", "--duration", "0.3"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("PROXY protocol          v2, headers carrying 8 client addresses"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("lost"), r.out.find("lost (timed out)        0"));
  hostile::expect_refused({"run", "--server", "127.0.0.1:9", "--proxy-protocol", "v2",
                           "--proxy-source", "10.0.0.0/8", "--proxy-tlv", "300=00"},
                          "--proxy-tlv");
  hostile::expect_refused({"run", "--server", "127.0.0.1:9", "--proxy-protocol", "v3"},
                          "--proxy-protocol");
  hostile::expect_refused({"serve", "--listen", "127.0.0.1:0", "--proxy-protocol", "maybe"},
                          "--proxy-protocol");
  hostile::expect_refused({"serve", "--listen", "127.0.0.1:0", "--proxy-protocol", "dns=required"},
                          "--proxy-protocol");
}
#endif

}  // namespace
}  // namespace dnstransport
