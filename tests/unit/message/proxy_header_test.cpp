// PROXY protocol headers, versions 1 and 2, written octet for octet as the specification
// gives them and read back, and broken ones told apart.
#include "message/proxy_header.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dnstransport::detail {
namespace {

using boost::asio::ip::make_address;

proxied_connection v4_udp() {
  return {make_address("10.1.2.3"), 4321, make_address("192.0.2.53"), 53, false};
}

TEST(proxy_header_test, version_2_ipv4_udp_is_the_specifications_layout) {
  const auto h = proxy_v2_header(v4_udp());
  const std::vector<std::uint8_t> expected = {
      0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A,  // signature
      0x21,                                                                    // v2, PROXY
      0x12,                                                                    // INET, DGRAM
      0x00, 0x0C,                                                              // 12 octets
      10,   1,    2,    3,    192,  0,    2,    53,                            // addresses
      0x10, 0xE1, 0x00, 0x35};                                                 // 4321, 53
  EXPECT_EQ(h, expected);
}

TEST(proxy_header_test, version_2_ipv6_tcp_with_tlvs_reads_back) {
  proxied_connection c{make_address("2001:db8::7"), 1024, make_address("2001:db8::53"), 853, true};
  const auto h = proxy_v2_header(c, {{0x04, {0x00}}, {0xE1, {1, 2, 3}}});
  EXPECT_EQ(h[13], 0x21);                 // INET6, STREAM
  EXPECT_EQ(h.size(), 16u + 36 + 4 + 6);  // addresses and two TLVs
  EXPECT_EQ((h[14] << 8) | h[15], 36 + 4 + 6);
  const auto r = read_proxy_header(h);
  ASSERT_EQ(r.result, proxy_header_read::outcome::complete);
  EXPECT_EQ(r.length, h.size());
  EXPECT_EQ(r.connection.source, c.source);
  EXPECT_EQ(r.connection.destination, c.destination);
  EXPECT_EQ(r.connection.source_port, 1024);
  EXPECT_EQ(r.connection.destination_port, 853);
  EXPECT_TRUE(r.connection.stream);
  ASSERT_EQ(r.tlvs.size(), 2u);
  EXPECT_EQ(r.tlvs[1], (proxy_tlv{0xE1, {1, 2, 3}}));
}

TEST(proxy_header_test, mixed_families_map_the_ipv4_address_into_ipv6) {
  proxied_connection c{make_address("2001:db8::7"), 1, make_address("127.0.0.1"), 2, true};
  const auto r = read_proxy_header(proxy_v2_header(c));
  ASSERT_EQ(r.result, proxy_header_read::outcome::complete);
  EXPECT_EQ(r.connection.destination.to_string(), "::ffff:127.0.0.1");
  EXPECT_EQ(proxy_v1_header(c), "PROXY TCP6 2001:db8::7 ::ffff:127.0.0.1 1 2\r\n");
}

TEST(proxy_header_test, version_1_is_one_line_and_reads_back) {
  proxied_connection c{make_address("10.1.2.3"), 4321, make_address("192.0.2.53"), 853, true};
  const std::string line = proxy_v1_header(c);
  EXPECT_EQ(line, "PROXY TCP4 10.1.2.3 192.0.2.53 4321 853\r\n");
  const std::string with_data = line + "\x16\x03\x01";  // a ClientHello follows
  const auto r = read_proxy_header(
      {reinterpret_cast<const std::uint8_t*>(with_data.data()), with_data.size()});
  ASSERT_EQ(r.result, proxy_header_read::outcome::complete);
  EXPECT_EQ(r.length, line.size());
  EXPECT_EQ(r.connection.source.to_string(), "10.1.2.3");
  EXPECT_EQ(r.connection.destination_port, 853);
}

TEST(proxy_header_test, a_header_in_pieces_is_incomplete_until_whole) {
  const auto h = proxy_v2_header(v4_udp());
  for (std::size_t n = 1; n < h.size(); ++n) {
    EXPECT_EQ(read_proxy_header({h.data(), n}).result, proxy_header_read::outcome::incomplete) << n;
  }
  const std::string v1 = "PROXY TCP4 10.1.2.3 192.0.2.53 4321 853";  // no CRLF yet
  EXPECT_EQ(read_proxy_header({reinterpret_cast<const std::uint8_t*>(v1.data()), v1.size()}).result,
            proxy_header_read::outcome::incomplete);
}

TEST(proxy_header_test, a_dns_query_is_no_header_and_broken_headers_are_invalid) {
  const std::vector<std::uint8_t> query = {0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(read_proxy_header(query).result, proxy_header_read::outcome::none);
  auto h = proxy_v2_header(v4_udp());
  h[12] = 0x31;  // version 3
  EXPECT_EQ(read_proxy_header(h).result, proxy_header_read::outcome::invalid);
  h = proxy_v2_header(v4_udp());
  h[13] = 0x32;  // family 3
  EXPECT_EQ(read_proxy_header(h).result, proxy_header_read::outcome::invalid);
  h = proxy_v2_header(v4_udp(), {{1, {1, 2}}});
  h.back() = 0;
  h[h.size() - 3] = 9;  // a TLV longer than the header
  EXPECT_EQ(read_proxy_header(h).result, proxy_header_read::outcome::invalid);
  const std::string v1 = "PROXY UDP4 10.1.2.3 192.0.2.53 1 2\r\n";
  EXPECT_EQ(read_proxy_header({reinterpret_cast<const std::uint8_t*>(v1.data()), v1.size()}).result,
            proxy_header_read::outcome::invalid);
}

}  // namespace
}  // namespace dnstransport::detail
