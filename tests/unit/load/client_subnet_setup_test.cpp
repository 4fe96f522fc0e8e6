// EDNS Client Subnet as a run sets it up and the clients send it: the range read and refused,
// the option every query carries, where its address is, and the subnets numbered in the
// range (per client, in order; per query, drawn).
#include "load/client_subnet_setup.hpp"

#include <gtest/gtest.h>

#include <array>
#include <set>
#include <string>
#include <vector>

#include <dnstransport/error.hpp>
#include <dnstransport/message.hpp>
#include <dnstransport/query_source.hpp>

namespace dnstransport::detail {
namespace {

client_subnets read(const std::string& range, std::optional<unsigned> source = std::nullopt,
                    client_subnet_mode mode = client_subnet_mode::per_client) {
  client_subnet_settings settings;
  settings.range = range;
  settings.source_prefix = source;
  settings.mode = mode;
  return read_client_subnets(settings, "--ecs");
}

std::vector<std::uint8_t> address(const client_subnets& s, std::uint64_t subnet) {
  std::vector<std::uint8_t> out(s.address_size);
  s.write_address(subnet, out.data());
  return out;
}

std::string refusal(const std::string& range, std::optional<unsigned> source = std::nullopt) {
  try {
    read(range, source);
  } catch (const setup_error& e) {
    return e.what();
  }
  return "";
}

TEST(client_subnet_setup_test, prefixes_default_to_24_and_56_or_the_ranges_own) {
  const auto v4 = read("10.0.0.0/8");
  EXPECT_EQ(v4.family, 1);
  EXPECT_EQ(v4.source_prefix, 24u);
  EXPECT_EQ(v4.address_size, 3u);
  EXPECT_EQ(v4.count, 65536u);
  const auto v6 = read("2001:db8::/32");
  EXPECT_EQ(v6.family, 2);
  EXPECT_EQ(v6.source_prefix, 56u);
  EXPECT_EQ(v6.address_size, 7u);
  EXPECT_EQ(v6.count, std::uint64_t{1} << 24);
  // A range narrower than the default is one subnet of its own prefix.
  const auto host = read("192.0.2.7/32");
  EXPECT_EQ(host.source_prefix, 32u);
  EXPECT_EQ(host.count, 1u);
  EXPECT_EQ(address(host, 0), (std::vector<std::uint8_t>{192, 0, 2, 7}));
  // Given: an odd prefix takes the octets it needs.
  const auto odd = read("198.51.100.0/22", 25);
  EXPECT_EQ(odd.address_size, 4u);
  EXPECT_EQ(odd.count, 8u);
  // A /0 source prefix (a client that asks for no tailoring) has no address at all.
  const auto none = read("0.0.0.0/0", 0);
  EXPECT_EQ(none.address_size, 0u);
  EXPECT_EQ(none.count, 1u);
}

TEST(client_subnet_setup_test, the_subnets_of_a_range_are_numbered_in_order) {
  const auto v4 = read("10.0.0.0/8");
  EXPECT_EQ(address(v4, 0), (std::vector<std::uint8_t>{10, 0, 0}));
  EXPECT_EQ(address(v4, 1), (std::vector<std::uint8_t>{10, 0, 1}));
  EXPECT_EQ(address(v4, 256), (std::vector<std::uint8_t>{10, 1, 0}));
  EXPECT_EQ(address(v4, 65535), (std::vector<std::uint8_t>{10, 255, 255}));
  // A source prefix inside an octet: the number ends at the prefix's bit.
  const auto odd = read("198.51.100.0/22", 25);
  EXPECT_EQ(address(odd, 1), (std::vector<std::uint8_t>{198, 51, 100, 128}));
  EXPECT_EQ(address(odd, 7), (std::vector<std::uint8_t>{198, 51, 103, 128}));
  // IPv6: bits across the 64-bit halves too.
  const auto v6 = read("2001:db8::/32");
  EXPECT_EQ(address(v6, 1), (std::vector<std::uint8_t>{0x20, 0x01, 0x0d, 0xb8, 0, 0, 1}));
  EXPECT_EQ(address(v6, 0x10203), (std::vector<std::uint8_t>{0x20, 0x01, 0x0d, 0xb8, 1, 2, 3}));
  const auto wide = read("fd00::/8", 120);
  EXPECT_EQ(wide.count, std::uint64_t{1} << 63);
  std::array<std::uint8_t, 15> expected{};
  expected[0] = 0xfd;
  expected[7] = 0x01;  // 2^56, shifted 8 bits: the low bit of octet 7
  expected[14] = 0x05;
  const auto got = address(wide, (std::uint64_t{1} << 56) + 5);
  EXPECT_EQ(got, std::vector<std::uint8_t>(expected.begin(), expected.end()));
}

TEST(client_subnet_setup_test, clients_take_subnets_in_turn_and_queries_draw_theirs) {
  auto s = read("10.0.0.0/30", 32);
  ASSERT_EQ(s.count, 4u);
  EXPECT_EQ(s.subnet_of(0, 99), 0u);
  EXPECT_EQ(s.subnet_of(3, 0), 3u);
  EXPECT_EQ(s.subnet_of(5, 0), 1u);  // shared in turn
  s.first = 2;                       // another process's share
  EXPECT_EQ(s.subnet_of(0, 0), 2u);
  const auto drawn = read("10.0.0.0/8", 24, client_subnet_mode::per_query);
  std::set<std::uint64_t> seen;
  for (std::uint64_t q = 0; q < 1000; ++q) {
    const std::uint64_t subnet = drawn.subnet_of(0, q);
    EXPECT_LT(subnet, drawn.count);
    EXPECT_EQ(drawn.subnet_of(0, q), subnet) << "a query sent again keeps its subnet";
    seen.insert(subnet);
  }
  EXPECT_GT(seen.size(), 990u);
  EXPECT_NE(drawn.subnet_of(0, 1), drawn.subnet_of(1, 1));
}

TEST(client_subnet_setup_test, ranges_that_do_not_read_or_fit_are_refused_naming_the_flag) {
  EXPECT_NE(refusal("10.0.0.0").find("--ecs: \"10.0.0.0\" is not an IPv4 or IPv6 network"),
            std::string::npos);
  EXPECT_NE(refusal("10.0.0.0/33").find("is not an IPv4 or IPv6 network"), std::string::npos);
  EXPECT_NE(refusal("example.com/24").find("is not an IPv4"), std::string::npos);
  EXPECT_NE(refusal("10.0.0.0/8", 33).find("longer than an IPv4 address (32 bits)"),
            std::string::npos);
  EXPECT_NE(refusal("2001:db8::/32", 129).find("longer than an IPv6 address (128 bits)"),
            std::string::npos);
  EXPECT_NE(refusal("10.0.0.0/16", 8).find("shorter than the range's /16"), std::string::npos);
  EXPECT_EQ(refusal("10.0.0.0/16", 16), "");
}

TEST(client_subnet_setup_test, every_query_carries_the_option_and_its_address_is_found) {
  const auto s = read("10.0.0.0/8");
  const edns_option option = client_subnet_option(s);
  EXPECT_EQ(option.code, edns_option_code::client_subnet);
  EXPECT_EQ(option.data, (std::vector<std::uint8_t>{0, 1, 24, 0, 0, 0, 0}));
  edns_config edns;
  edns.enabled = true;
  edns.options.push_back(option);
  edns.padding_block = 128;  // after the subnet: its address does not move the padding
  query_set queries;
  queries.add(add_edns_options(encode_query("www.example.com", rr_type::a), edns));
  queries.add(encode_query("example.net", rr_type::aaaa));  // none
  const auto at = client_subnet_addresses(queries);
  ASSERT_EQ(at.size(), 2u);
  EXPECT_EQ(at[1], 0u);
  const auto q = queries[0];
  ASSERT_GT(at[0], 8u);
  EXPECT_EQ(q[at[0] - 8], 0);
  EXPECT_EQ(q[at[0] - 7], edns_option_code::client_subnet);
  EXPECT_EQ(q[at[0] - 4], 0);
  EXPECT_EQ(q[at[0] - 3], 1);   // FAMILY
  EXPECT_EQ(q[at[0] - 2], 24);  // SOURCE PREFIX-LENGTH
  EXPECT_EQ(q.size() % 128, 0u);
}

}  // namespace
}  // namespace dnstransport::detail
