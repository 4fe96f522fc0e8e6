#include <dnstransport/pcap.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <dnstransport/error.hpp>

#include "error_text.hpp"
#include "pcap_writer.hpp"
#include "scratch_dir.hpp"
#include "wire_bytes.hpp"

namespace dnstransport {
namespace {

using namespace test_pcap;
using error_text::contains;
using error_text::setup_error_of;
using wire_bytes::to_bytes;

constexpr std::uint64_t second = 1'000'000'000;
constexpr std::uint64_t t0 = 1'700'000'000 * second + 123'456'000;  // microsecond-exact

// What the capture held, ids set to 0 as in every query set.
bytes kept(std::string_view name, std::uint16_t type) {
  return dns_query(name, type, 0);
}

// Every case the parser tells apart, on Ethernet: 16 records.
capture mixed_ethernet_capture() {
  const address client4 = ip("192.0.2.1");
  const address other4 = ip("192.0.2.2");
  const address server4 = ip("192.0.2.53");
  const address client6 = ip("2001:db8::1");
  const address other6 = ip("2001:db8::2");
  const address server6 = ip("2001:db8::53");
  capture c(link_ethernet);
  // 1: a UDP query over IPv4.
  c.add(t0, ethernet(udp(client4, server4, 40000, 53, dns_query("example.com", 1, 0x1234))));
  // 2: a UDP query over IPv6 under a VLAN tag; 3: under two (802.1ad).
  c.add(t0 + 100'000'000,
        ethernet(udp(client6, server6, 40001, 53, dns_query("example.org", 28, 7)), {100}));
  c.add(t0 + 150'000'000,
        ethernet(udp(client4, server4, 40002, 53, dns_query("qinq.example", 16, 8)), {10, 20}));
  // 4: the answer to query 1.
  c.add(t0 + 200'000'000, ethernet(udp(server4, client4, 53, 40000,
                                       as_response(dns_query("example.com", 1, 0x1234)))));
  // 5: two queries in one TCP segment; 6: a TCP segment without data.
  c.add(
      t0 + 300'000'000,
      ethernet(tcp(other4, server4, 50000, 53, 1000,
                   framed({dns_query("www.example.com", 1, 1), dns_query("example.net", 15, 2)}))));
  c.add(t0 + 350'000'000, ethernet(tcp(other4, server4, 50001, 53, 0, {}, 0x02)));
  // 7: NTP; 8: ARP.
  c.add(t0 + 400'000'000, ethernet(udp(client4, server4, 40003, 123, bytes(48, 0x23))));
  c.add(t0 + 450'000'000, ethernet_of_type(0x0806, bytes(28, 0)));
  // 9: a query cut short by the snap length.
  const bytes cut = ethernet(udp(client4, server4, 40004, 53, dns_query("cut.example", 1, 9)));
  c.add(t0 + 500'000'000, cut, cut.size() - 10);
  // 10: five octets to port 53; 11: a NOTIFY.
  c.add(t0 + 550'000'000, ethernet(udp(client4, server4, 40005, 53, bytes{1, 2, 3, 4, 5})));
  c.add(t0 + 600'000'000, ethernet(udp(client4, server4, 40006, 53,
                                       with_opcode(dns_query("zone.example", 6, 3), 4))));
  // 12: a query whose header announces an additional record that is not there (found by
  // fuzzing: its answers could never be checked).
  bytes no_record = dns_query("ar.example", 1, 10);
  no_record[11] = 1;
  c.add(t0 + 620'000'000, ethernet(udp(client4, server4, 40009, 53, no_record)));
  // 13: a non-first IPv4 fragment.
  c.add(t0 + 650'000'000,
        ethernet(
            ipv4_fragment(udp(client4, server4, 40007, 53, dns_query("frag.example", 1, 4)), 10)));
  // 14, 15: one query split over two TCP segments over IPv6.
  const bytes split = framed({dns_query("split.example", 1, 5)});
  c.add(t0 + 700'000'000,
        ethernet(tcp(other6, server6, 50002, 53, 5000, std::span(split).first(10))));
  c.add(t0 + 750'000'000,
        ethernet(tcp(other6, server6, 50002, 53, 5010, std::span(split).subspan(10))));
  // 16: a query to another port (5353).
  c.add(t0 + 800'000'000,
        ethernet(udp(other4, server4, 40008, 5353, dns_query("mdns.example", 1, 6))));
  return c;
}

TEST(pcap_test, ethernet_capture_counts_every_packet_and_keeps_the_queries) {
  const pcap_capture got = parse_pcap(mixed_ethernet_capture().data(), "mixed.pcap");
  const pcap_counts& n = got.counts;
  EXPECT_EQ(n.packets, 16u);
  EXPECT_EQ(n.queries, 6u);
  EXPECT_EQ(n.responses, 1u);
  EXPECT_EQ(n.other_dns, 1u);
  EXPECT_EQ(n.not_dns, 3u);  // NTP, ARP, port 5353
  EXPECT_EQ(n.tcp_without_data, 1u);
  EXPECT_EQ(n.fragments, 1u);
  EXPECT_EQ(n.malformed, 3u);  // cut by the snap length, five octets, a missing record
  EXPECT_EQ(n.tcp_incomplete, 0u);

  ASSERT_EQ(got.queries.size(), 6u);
  EXPECT_EQ(got.queries.origin(), "mixed.pcap");
  EXPECT_EQ(to_bytes(got.queries[0]), kept("example.com", 1));
  EXPECT_EQ(to_bytes(got.queries[1]), kept("example.org", 28));
  EXPECT_EQ(to_bytes(got.queries[2]), kept("qinq.example", 16));
  EXPECT_EQ(to_bytes(got.queries[3]), kept("www.example.com", 1));
  EXPECT_EQ(to_bytes(got.queries[4]), kept("example.net", 15));
  EXPECT_EQ(to_bytes(got.queries[5]), kept("split.example", 1));
  EXPECT_EQ(got.times_ns,
            (std::vector<std::uint64_t>{t0, t0 + 100'000'000, t0 + 150'000'000, t0 + 300'000'000,
                                        t0 + 300'000'000, t0 + 700'000'000}));
  EXPECT_EQ(got.sources,
            (std::vector<std::string>{"192.0.2.1", "2001:db8::1", "192.0.2.2", "2001:db8::2"}));
  EXPECT_EQ(got.clients, (std::vector<std::uint32_t>{0, 1, 0, 2, 2, 3}));
}

TEST(pcap_test, pcap_port_adds_ports_that_carry_dns) {
  pcap_options options;
  options.ports = {53, 5353};
  const pcap_capture got = parse_pcap(mixed_ethernet_capture().data(), "mixed.pcap", options);
  EXPECT_EQ(got.counts.queries, 7u);
  EXPECT_EQ(got.counts.not_dns, 2u);
  EXPECT_EQ(to_bytes(got.queries[6]), kept("mdns.example", 1));
  EXPECT_EQ(got.clients.back(), 2u);  // 192.0.2.2, already a client over TCP

  options.ports = {5353};
  const pcap_capture only = parse_pcap(mixed_ethernet_capture().data(), "mixed.pcap", options);
  EXPECT_EQ(only.counts.queries, 1u);
  EXPECT_EQ(only.sources, (std::vector<std::string>{"192.0.2.2"}));
}

TEST(pcap_test, tcp_segments_out_of_order_leave_the_message_incomplete) {
  const address a = ip("192.0.2.7");
  const address server = ip("192.0.2.53");
  const bytes split = framed({dns_query("a.example", 1, 1)});
  capture c(link_ethernet);
  c.add(t0, ethernet(tcp(a, server, 50000, 53, 100, std::span(split).first(5))));
  // The next segment is missing: this one starts a new message after a gap.
  c.add(t0 + 1000,
        ethernet(tcp(a, server, 50000, 53, 200, framed({dns_query("b.example", 1, 2)}))));
  // A flow that ends mid-message.
  c.add(t0 + 2000, ethernet(tcp(a, server, 50001, 53, 1, std::span(split).first(3))));
  const pcap_capture got = parse_pcap(c.data(), "gap.pcap");
  EXPECT_EQ(got.counts.tcp_incomplete, 2u);
  ASSERT_EQ(got.queries.size(), 1u);
  EXPECT_EQ(to_bytes(got.queries[0]), kept("b.example", 1));
  EXPECT_EQ(got.times_ns, (std::vector<std::uint64_t>{t0 + 1000}));
}

// An IPv4 packet with 4 octets of options (NOPs).
bytes with_ipv4_options(bytes packet) {
  packet.insert(packet.begin() + 20, {1, 1, 1, 1});
  packet[0] = 0x46;
  const std::size_t total = packet.size();
  packet[2] = static_cast<std::uint8_t>(total >> 8);
  packet[3] = static_cast<std::uint8_t>(total & 0xff);
  return packet;
}

// An IPv6 packet with an 8-octet extension header (`type`: 0 hop-by-hop, 60 destination
// options, 44 fragment) before its transport header.
bytes with_ipv6_extension(bytes packet, std::uint8_t type) {
  const std::uint8_t next = packet[6];
  packet.insert(packet.begin() + 40, {next, 0, 1, 4, 0, 0, 0, 0});
  packet[6] = type;
  const std::size_t payload = packet.size() - 40;
  packet[4] = static_cast<std::uint8_t>(payload >> 8);
  packet[5] = static_cast<std::uint8_t>(payload & 0xff);
  return packet;
}

TEST(pcap_test, ip_options_and_ipv6_extension_headers_are_skipped) {
  const address a4 = ip("192.0.2.1");
  const address a6 = ip("2001:db8::1");
  capture c(link_ethernet);
  c.add(t0, ethernet(with_ipv4_options(
                udp(a4, ip("192.0.2.53"), 1000, 53, dns_query("options.example", 1, 1)))));
  c.add(t0 + 1, ethernet(with_ipv6_extension(
                    udp(a6, ip("2001:db8::53"), 1000, 53, dns_query("hop.example", 1, 2)), 0)));
  c.add(t0 + 2, ethernet(with_ipv6_extension(
                    with_ipv6_extension(tcp(a6, ip("2001:db8::53"), 1000, 53, 1,
                                            framed({dns_query("dest.example", 1, 3)})),
                                        60),
                    0)));
  c.add(t0 + 3, ethernet(with_ipv6_extension(
                    udp(a6, ip("2001:db8::53"), 1000, 53, dns_query("frag.example", 1, 4)), 44)));
  const pcap_capture got = parse_pcap(c.data(), "ext.pcap");
  EXPECT_EQ(got.counts.queries, 3u);
  EXPECT_EQ(got.counts.fragments, 1u);
  ASSERT_EQ(got.queries.size(), 3u);
  EXPECT_EQ(to_bytes(got.queries[0]), kept("options.example", 1));
  EXPECT_EQ(to_bytes(got.queries[1]), kept("hop.example", 1));
  EXPECT_EQ(to_bytes(got.queries[2]), kept("dest.example", 1));
}

TEST(pcap_test, linux_cooked_and_raw_captures) {
  const bytes v4 = udp(ip("10.0.0.1"), ip("10.0.0.53"), 1234, 53, dns_query("sll.example", 1, 1));
  const bytes v6 = udp(ip("fd00::1"), ip("fd00::53"), 1234, 53, dns_query("sll.example", 28, 2));
  for (const auto& [link, wrap] :
       std::vector<std::pair<std::uint32_t, bytes (*)(std::span<const std::uint8_t>)>>{
           {link_linux_sll, linux_sll}, {link_linux_sll2, linux_sll2}}) {
    capture c(link);
    c.add(t0, wrap(v4));
    c.add(t0 + 1000, wrap(v6));
    const pcap_capture got = parse_pcap(c.data(), "cooked.pcap");
    EXPECT_EQ(got.counts.queries, 2u) << link;
    EXPECT_EQ(got.sources, (std::vector<std::string>{"10.0.0.1", "fd00::1"})) << link;
  }
  capture raw(link_raw);
  raw.add(t0, v4);
  raw.add(t0 + 1000, v6);
  raw.add(t0 + 2000, bytes{0x50, 0, 0, 0});  // neither IPv4 nor IPv6
  const pcap_capture got = parse_pcap(raw.data(), "raw.pcap");
  EXPECT_EQ(got.counts.queries, 2u);
  EXPECT_EQ(got.counts.not_dns, 1u);
}

TEST(pcap_test, bsd_loopback_captures_in_either_byte_order) {
  const bytes v4 = udp(ip("127.0.0.1"), ip("127.0.0.1"), 1234, 53, dns_query("lo.example", 1, 1));
  const bytes v6 = udp(ip("::1"), ip("::1"), 1234, 53, dns_query("lo.example", 28, 2));
  const auto family = [](std::uint32_t f, bool big_endian, const bytes& packet) {
    bytes out(4 + packet.size(), 0);
    out[0] = static_cast<std::uint8_t>(big_endian ? f >> 24 : f & 0xff);
    out[3] = static_cast<std::uint8_t>(big_endian ? f & 0xff : f >> 24);
    std::copy(packet.begin(), packet.end(), out.begin() + 4);
    return out;
  };
  capture null(0);  // DLT_NULL: the family in the capturing host's order
  null.add(t0, family(2, false, v4));
  null.add(t0 + 1, family(30, false, v6));  // AF_INET6 on macOS
  null.add(t0 + 2, family(2, true, v4));    // written by a big-endian host
  null.add(t0 + 3, family(7, false, v4));   // another family
  const pcap_capture got = parse_pcap(null.data(), "null.pcap");
  EXPECT_EQ(got.counts.queries, 3u);
  EXPECT_EQ(got.counts.not_dns, 1u);
  EXPECT_EQ(got.sources, (std::vector<std::string>{"127.0.0.1", "::1"}));
  capture loop(108);  // DLT_LOOP: network order
  loop.add(t0, family(24, true, v6));
  EXPECT_EQ(parse_pcap(loop.data(), "loop.pcap").counts.queries, 1u);
}

TEST(pcap_test, nanosecond_pcap_and_pcapng_keep_their_timestamps) {
  const bytes frame =
      ethernet(udp(ip("192.0.2.1"), ip("192.0.2.53"), 1234, 53, dns_query("ns.example", 1, 1)));
  capture nano(link_ethernet, capture::format::pcap_nanoseconds);
  nano.add(t0 + 789, frame);
  EXPECT_EQ(parse_pcap(nano.data(), "nano.pcap").times_ns, (std::vector<std::uint64_t>{t0 + 789}));

  capture ng(link_ethernet, capture::format::pcapng);
  ng.add(t0, frame);
  ng.add(t0 + 5'000, bytes(frame.begin(), frame.end() - 3), 60);  // cut, and padded
  const pcap_capture got = parse_pcap(ng.data(), "ng.pcapng");
  EXPECT_EQ(got.times_ns, (std::vector<std::uint64_t>{t0}));
  EXPECT_EQ(got.counts.packets, 2u);
  EXPECT_EQ(got.counts.malformed, 1u);
}

TEST(pcap_test, a_capture_cut_mid_record_keeps_the_records_before) {
  capture c(link_ethernet);
  c.add(t0, ethernet(udp(ip("192.0.2.1"), ip("192.0.2.53"), 1, 53, dns_query("a.example", 1, 1))));
  c.add(t0 + 1,
        ethernet(udp(ip("192.0.2.1"), ip("192.0.2.53"), 1, 53, dns_query("b.example", 1, 1))));
  bytes data = c.data();
  data.erase(data.end() - 7, data.end());
  const pcap_capture got = parse_pcap(data, "cut.pcap");
  EXPECT_EQ(got.counts.queries, 1u);
  EXPECT_EQ(got.counts.malformed, 1u);
  EXPECT_EQ(got.counts.packets, 2u);
}

TEST(pcap_test, unusable_captures_are_setup_errors_naming_them) {
  EXPECT_TRUE(contains(setup_error_of([] {
                         parse_pcap(bytes{'a', 'b', 'c', '\n'}, "text.pcap");
                       }),
                       "text.pcap: not a capture"));
  EXPECT_TRUE(contains(setup_error_of([] { parse_pcap(bytes{}, "empty.pcap"); }), "empty.pcap"));
  capture only_answers(link_ethernet);
  only_answers.add(t0, ethernet(udp(ip("192.0.2.53"), ip("192.0.2.1"), 53, 1,
                                    as_response(dns_query("a.example", 1, 1)))));
  EXPECT_EQ(setup_error_of([&] { parse_pcap(only_answers.data(), "answers.pcap"); }),
            "answers.pcap: no DNS queries found (1 packets: 1 responses, 0 other DNS, 0 not DNS, "
            "0 TCP without data, 0 fragments, 0 malformed, 0 incomplete TCP messages)");
  capture wifi(105);  // IEEE 802.11
  wifi.add(t0, bytes(40, 0));
  EXPECT_TRUE(contains(setup_error_of([&] { parse_pcap(wifi.data(), "wifi.pcap"); }),
                       "wifi.pcap: link type IEEE802_11 (105) is not supported"));
  pcap_options none;
  none.ports.clear();
  EXPECT_TRUE(contains(setup_error_of([&] { parse_pcap(only_answers.data(), "x.pcap", none); }),
                       "pcap_options::ports"));
}

TEST(pcap_test, looks_like_pcap_knows_the_magic_numbers) {
  for (const bytes& head :
       {bytes{0xd4, 0xc3, 0xb2, 0xa1}, bytes{0xa1, 0xb2, 0xc3, 0xd4}, bytes{0x4d, 0x3c, 0xb2, 0xa1},
        bytes{0xa1, 0xb2, 0x3c, 0x4d}, bytes{0x0a, 0x0d, 0x0d, 0x0a, 0x1c}}) {
    EXPECT_TRUE(looks_like_pcap(head));
  }
  EXPECT_FALSE(looks_like_pcap(bytes{0xd4, 0xc3, 0xb2}));
  EXPECT_FALSE(looks_like_pcap(bytes{'w', 'w', 'w', '.'}));
}

TEST(pcap_test, query_files_that_are_captures_are_read_as_captures) {
  hostile::scratch dir("dnstransport-pcap-test");
  const auto write = [&](const std::string& name, const bytes& data) {
    return std::filesystem::path(dir.file(name, std::string(data.begin(), data.end())));
  };
  const auto by_magic = write("capture.dat", mixed_ethernet_capture().data());
  EXPECT_EQ(query_file_format_of(by_magic), query_file_format::pcap);
  const query_set queries = load_query_file(by_magic);
  EXPECT_EQ(queries.size(), 6u);
  EXPECT_EQ(queries.origin(), by_magic.string());
  EXPECT_EQ(read_pcap(by_magic).sources.size(), 4u);

  const auto by_name = write("broken.pcapng", bytes{'n', 'o', 'p', 'e'});
  EXPECT_EQ(query_file_format_of(by_name), query_file_format::pcap);
  EXPECT_TRUE(contains(setup_error_of([&] { load_query_file(by_name); }),
                       by_name.string() + ": not a capture"));
  EXPECT_EQ(query_file_format_of(dir.path("absent.txt")), query_file_format::text);
  EXPECT_TRUE(contains(setup_error_of([&] { read_pcap(dir.path("absent.pcap")); }), "absent.pcap"));
}

}  // namespace
}  // namespace dnstransport
