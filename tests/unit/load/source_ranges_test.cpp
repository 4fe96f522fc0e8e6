// Source addresses from addresses and CIDR ranges: a range's hosts in order, as many as asked,
// how many it holds in all, and the entries it refuses.
#include "load/source_ranges.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <dnstransport/error.hpp>
#include <dnstransport/group.hpp>

namespace dnstransport::detail {
namespace {

std::vector<std::string> texts(const source_list& s) {
  std::vector<std::string> out;
  for (const auto& a : s.addresses) out.push_back(a.to_string());
  return out;
}

source_list v4(const std::vector<std::string>& entries, std::uint64_t wanted) {
  return expand_sources(entries, wanted, true, "--source");
}

source_list v6(const std::vector<std::string>& entries, std::uint64_t wanted) {
  return expand_sources(entries, wanted, false, "--source");
}

TEST(source_ranges_test, an_ipv4_range_gives_its_hosts_without_network_and_broadcast) {
  const auto s = v4({"127.1.0.0/30"}, 10);
  EXPECT_EQ(texts(s), (std::vector<std::string>{"127.1.0.1", "127.1.0.2"}));
  EXPECT_EQ(s.available, 2u);
  // A /31 and a /32 are all their addresses; a host part in the entry is the network's.
  EXPECT_EQ(texts(v4({"10.0.0.0/31"}, 10)), (std::vector<std::string>{"10.0.0.0", "10.0.0.1"}));
  EXPECT_EQ(texts(v4({"10.0.0.7/32"}, 10)), std::vector<std::string>{"10.0.0.7"});
  EXPECT_EQ(texts(v4({"127.1.0.9/30"}, 1)), std::vector<std::string>{"127.1.0.9"});
}

TEST(source_ranges_test, a_wide_range_is_read_as_far_as_wanted_and_counted_whole) {
  const auto s = v4({"127.0.0.0/16"}, 3);
  EXPECT_EQ(texts(s), (std::vector<std::string>{"127.0.0.1", "127.0.0.2", "127.0.0.3"}));
  EXPECT_EQ(s.available, 65534u);
  // Across an octet: the 256th host of 127.2.0.0/16 is 127.2.1.0.
  EXPECT_EQ(v4({"127.2.0.0/16"}, 256).addresses.back().to_string(), "127.2.1.0");
  const auto all = v4({"0.0.0.0/0"}, 1);
  EXPECT_EQ(all.available, (std::uint64_t{1} << 32) - 2);
}

TEST(source_ranges_test, ipv6_ranges_leave_out_the_subnet_router_anycast_address) {
  const auto s = v6({"fd00::/126"}, 10);
  EXPECT_EQ(texts(s), (std::vector<std::string>{"fd00::1", "fd00::2", "fd00::3"}));
  EXPECT_EQ(s.available, 3u);
  EXPECT_EQ(texts(v6({"fd00::5/128"}, 10)), std::vector<std::string>{"fd00::5"});
  // Carries through the bytes; a /64 counts 2^63 at most.
  EXPECT_EQ(v6({"fd00::/112"}, 256).addresses.back().to_string(), "fd00::100");
  EXPECT_EQ(v6({"fd00:0:0:1::/64"}, 1).available, std::uint64_t{1} << 63);
  EXPECT_EQ(v6({"fd00::ff:ff00/120"}, 300).addresses.size(), 255u);
}

TEST(source_ranges_test, entries_are_read_in_order_and_summed) {
  const auto s = v4({"127.0.0.9", "127.3.0.0/30", "127.0.0.10"}, 10);
  EXPECT_EQ(texts(s),
            (std::vector<std::string>{"127.0.0.9", "127.3.0.1", "127.3.0.2", "127.0.0.10"}));
  EXPECT_EQ(s.available, 4u);
  EXPECT_EQ(texts(v4({"127.0.0.9", "127.3.0.0/30"}, 2)),
            (std::vector<std::string>{"127.0.0.9", "127.3.0.1"}));
}

TEST(source_ranges_test, what_is_not_an_address_or_range_of_the_family_is_refused_by_name) {
  const auto refused = [](const std::vector<std::string>& entries, bool is_v4,
                          const std::string& says) {
    try {
      expand_sources(entries, 4, is_v4, "--source");
      ADD_FAILURE() << entries.front() << " was taken";
    } catch (const setup_error& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("--source"), std::string::npos) << e.what();
    }
  };
  refused({"127.0.0.0/33"}, true, "\"127.0.0.0/33\" is not a range");
  refused({"fd00::/129"}, false, "\"fd00::/129\" is not a range");
  refused({"localhost"}, true, "\"localhost\" is neither an IP address nor a range");
  refused({"127.0.0.0/x"}, true, "is not a range");
  refused({"fd00::/112"}, true, "fd00::/112 is not of the server's family (IPv4)");
  refused({"127.0.0.1"}, false, "127.0.0.1 is not of the server's family (IPv6)");
}

TEST(source_ranges_test, one_address_per_client_unless_taken_in_turn) {
  load_spec spec;
  spec.traffic.clients = 20;
  EXPECT_EQ(sources_wanted(spec), 20u);
  spec.connections.source_mode = source_mode::per_client;
  EXPECT_EQ(sources_wanted(spec), 20u);
  spec.connections.source_mode = source_mode::round_robin;
  EXPECT_EQ(sources_wanted(spec), 65536u);
  spec.traffic.clients = 100000;
  EXPECT_EQ(sources_wanted(spec), 100000u);
}

// Under mpirun each member takes every size-th address of the range read out for the whole
// group: disjoint shares, each with an address per client of its own.
TEST(source_ranges_test, a_group_shares_a_range_out_disjointly_one_address_per_client) {
  load_spec spec;
  spec.traffic.clients = 7;
  spec.connections.sources = {"127.5.0.0/24"};
  std::vector<std::string> all;
  for (unsigned rank = 0; rank < 3; ++rank) {
    const load_spec mine = share_of(spec, rank, 3);
    EXPECT_EQ(mine.connections.sources.size(), mine.traffic.clients) << rank;
    all.insert(all.end(), mine.connections.sources.begin(), mine.connections.sources.end());
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<std::string>{"127.5.0.1", "127.5.0.2", "127.5.0.3", "127.5.0.4",
                                           "127.5.0.5", "127.5.0.6", "127.5.0.7"}));
}

}  // namespace
}  // namespace dnstransport::detail
