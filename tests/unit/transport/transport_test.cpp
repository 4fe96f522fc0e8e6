#include <dnstransport/transport.hpp>

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace dnstransport {
namespace {

TEST(transport_test, every_transport_is_registered_once_under_its_own_kind) {
  std::set<transport_kind> kinds;
  std::set<std::string> names;
  for (const auto& t : all_transports()) {
    EXPECT_TRUE(kinds.insert(t.kind).second) << t.name;
    EXPECT_TRUE(names.insert(std::string(t.name)).second) << t.name;
    EXPECT_EQ(&traits_of(t.kind), &t) << t.name;
    EXPECT_EQ(transport_name(t.kind), t.name);
    EXPECT_EQ(parse_transport(t.name), t.kind) << t.name;
  }
  EXPECT_EQ(kinds, (std::set{transport_kind::udp, transport_kind::tcp, transport_kind::tls,
                             transport_kind::doh, transport_kind::doq}));
}

TEST(transport_test, traits_say_what_applies_to_each_transport) {
  const auto& udp = traits_of(transport_kind::udp);
  EXPECT_EQ(udp.default_port, 53);
  EXPECT_FALSE(udp.has_connections);
  EXPECT_FALSE(udp.has_tls);
  const auto& tcp = traits_of(transport_kind::tcp);
  EXPECT_EQ(tcp.default_port, 53);
  EXPECT_TRUE(tcp.has_connections);
  EXPECT_FALSE(tcp.has_tls);
  const auto& tls = traits_of(transport_kind::tls);
  EXPECT_EQ(tls.default_port, 853);  // RFC 7858
  EXPECT_TRUE(tls.has_connections);
  EXPECT_TRUE(tls.has_tls);
  const auto& doh = traits_of(transport_kind::doh);
  EXPECT_EQ(doh.default_port, 443);  // RFC 8484: https
  EXPECT_TRUE(doh.has_connections);
  EXPECT_TRUE(doh.has_tls);
  EXPECT_FALSE(doh.gnutls_only);
  const auto& doq = traits_of(transport_kind::doq);
  EXPECT_EQ(doq.default_port, 853);  // RFC 9250: UDP 853
  EXPECT_TRUE(doq.has_connections);
  EXPECT_TRUE(doq.has_tls);
  EXPECT_TRUE(doq.gnutls_only);  // ngtcp2's crypto helper; OpenSSL 3.0 has no QUIC API
}

TEST(transport_test, traits_say_what_a_connection_runs_over_and_what_reads_may_wait) {
  // TCP connections: connect latency, edns-tcp-keepalive (RFC 7828), the server's sockets.
  EXPECT_FALSE(traits_of(transport_kind::udp).over_tcp);
  EXPECT_TRUE(traits_of(transport_kind::tcp).over_tcp);
  EXPECT_TRUE(traits_of(transport_kind::tls).over_tcp);
  EXPECT_TRUE(traits_of(transport_kind::doh).over_tcp);
  EXPECT_FALSE(traits_of(transport_kind::doq).over_tcp);  // RFC 9250 forbids the keepalive
  for (const auto& t : all_transports()) {
    EXPECT_EQ(t.over_quic, t.kind == transport_kind::doq) << t.name;
    EXPECT_EQ(t.tls13_only, t.over_quic) << t.name;  // QUIC carries TLS 1.3 only
    EXPECT_FALSE(t.long_name.empty()) << t.name;
  }
  EXPECT_EQ(traits_of(transport_kind::doq).long_name, "DNS over QUIC");
}

TEST(transport_test, per_transport_holds_one_value_per_transport_by_kind) {
  per_transport<int> counts;
  for (const int c : counts) EXPECT_EQ(c, 0);
  counts[transport_kind::tls] = 7;
  counts[transport_kind::doq] = 9;
  EXPECT_EQ(counts[transport_kind::tls], 7);
  EXPECT_EQ(counts[transport_kind::doq], 9);
  EXPECT_EQ(counts[transport_kind::udp], 0);
  int sum = 0;
  for (const int c : counts) sum += c;
  EXPECT_EQ(sum, 16);
  per_transport<int> same = counts;
  EXPECT_EQ(same, counts);
  same[transport_kind::udp] = 1;
  EXPECT_NE(same, counts);
}

TEST(transport_test, default_ports_are_the_registered_ones) {
  const auto ports = default_ports();
  for (const auto& t : all_transports()) EXPECT_EQ(ports[t.kind], t.default_port) << t.name;
  EXPECT_EQ(ports[transport_kind::doh], 443);
}

TEST(transport_test, names_where_a_trait_holds_list_the_compiled_transports_in_order) {
  EXPECT_EQ(transport_names_where(&transport_traits::over_tcp), "tcp, tls, doh");
  EXPECT_EQ(transport_names_where(&transport_traits::has_tls),
            traits_of(transport_kind::doq).compiled ? "tls, doh, doq" : "tls, doh");
  EXPECT_EQ(transport_names_where(&transport_traits::has_connections),
            traits_of(transport_kind::doq).compiled ? "tcp, tls, doh, doq" : "tcp, tls, doh");
}

TEST(transport_test, names_parse_with_the_dot_and_https_aliases_and_nothing_else) {
  EXPECT_EQ(parse_transport("dot"), transport_kind::tls);
  EXPECT_EQ(parse_transport("https"), transport_kind::doh);
  EXPECT_EQ(parse_transport("UDP"), std::nullopt);
  EXPECT_EQ(parse_transport(""), std::nullopt);
  EXPECT_EQ(parse_transport("tls-gnutls"), std::nullopt);
  EXPECT_EQ(parse_transport("doh-gnutls"), std::nullopt);
  EXPECT_EQ(parse_transport("DoH"), std::nullopt);
  EXPECT_EQ(parse_transport("quic"), std::nullopt);
}

}  // namespace
}  // namespace dnstransport
