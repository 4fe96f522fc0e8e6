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
