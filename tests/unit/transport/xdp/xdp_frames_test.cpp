#include "transport/xdp/xdp_frames.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <boost/algorithm/hex.hpp>

namespace dnstransport::detail {
namespace {

// The query "example. AAAA" with ID 0xabcd, in two pieces as the UDP client gives it (the ID,
// then the rest).
const std::string xdp_test_query_hex = "abcd01000001000000000000076578616d706c6500001c0001";

std::vector<std::uint8_t> xdp_test_bytes(const std::string& hex) {
  std::vector<std::uint8_t> out;
  boost::algorithm::unhex(hex, std::back_inserter(out));
  return out;
}

frame_addresses xdp_test_addresses(bool v6) {
  frame_addresses a;
  a.source_mac = {2, 0, 0, 0, 0, 1};
  a.destination_mac = {2, 0, 0, 0, 0, 2};
  a.source = boost::asio::ip::make_address(v6 ? "fd77::1" : "10.77.0.1");
  a.destination = boost::asio::ip::make_address(v6 ? "fd77::2" : "10.77.0.2");
  a.source_port = 40000;
  a.destination_port = 53;
  return a;
}

std::vector<std::uint8_t> xdp_test_frame(const frame_addresses& a) {
  std::vector<std::uint8_t> query = xdp_test_bytes(xdp_test_query_hex);
  const std::vector<iovec> pieces{{query.data(), 2}, {query.data() + 2, query.size() - 2}};
  std::vector<std::uint8_t> frame(2048);
  frame.resize(write_frame(a, pieces, frame));
  return frame;
}

// The expected frames were computed apart from this code (a Python script of RFC 1071's sum
// over the IPv4 header, and over the UDP pseudo-header and datagram).
TEST(xdp_frames_test, an_ipv4_frame_has_its_headers_and_checksums) {
  const auto a = xdp_test_addresses(false);
  EXPECT_EQ(frame_header_size(a), 42u);
  EXPECT_EQ(xdp_test_frame(a),
            xdp_test_bytes("020000000002020000000001080045000035000040004011261c0a4d00010a4d00029c"
                           "40003500212b2f" +
                           xdp_test_query_hex));
}

TEST(xdp_frames_test, an_ipv6_frame_has_its_headers_and_checksum) {
  const auto a = xdp_test_addresses(true);
  EXPECT_EQ(frame_header_size(a), 62u);
  EXPECT_EQ(
      xdp_test_frame(a),
      xdp_test_bytes("02000000000202000000000186dd6000000000211140fd77000000000000000000000000"
                     "0001fd7700000000000000000000000000029c400035002144d9" +
                     xdp_test_query_hex));
}

// The server's answer comes back as the reverse of the query's frame: read to its payload, the
// client's port and address; anything else (another source, port or protocol, a fragment, a
// length past the frame) is not an answer.
TEST(xdp_frames_test, a_frame_from_the_server_is_read_back_to_its_payload) {
  for (const bool v6 : {false, true}) {
    const auto to = xdp_test_addresses(v6);
    frame_addresses back = to;
    std::swap(back.source, back.destination);
    std::swap(back.source_port, back.destination_port);
    std::swap(back.source_mac, back.destination_mac);
    const auto frame = xdp_test_frame(back);
    const auto got = read_frame(frame, to);
    ASSERT_TRUE(got) << v6;
    EXPECT_EQ(got->destination_port, 40000);
    // The client's address, as the frame has it (the caller checks it).
    EXPECT_EQ(got->destination.size(), v6 ? 16u : 4u);
    if (v6) {
      const auto bytes = to.source.to_v6().to_bytes();
      EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), got->destination.begin())) << v6;
    } else {
      const auto bytes = to.source.to_v4().to_bytes();
      EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), got->destination.begin())) << v6;
    }
    EXPECT_EQ(std::vector<std::uint8_t>(got->payload.begin(), got->payload.end()),
              xdp_test_bytes(xdp_test_query_hex));
    // The query's own frame (from the client) is not an answer to it.
    EXPECT_FALSE(read_frame(xdp_test_frame(to), to)) << v6;
    std::vector<std::uint8_t> other_port = frame;
    other_port[frame_header_size(to) - 8 + 1] ^= 1;  // the UDP source port
    EXPECT_FALSE(read_frame(other_port, to)) << v6;
    std::vector<std::uint8_t> cut = frame;
    cut.resize(frame.size() - 1);  // the IP length now runs past the frame
    EXPECT_FALSE(read_frame(cut, to)) << v6;
    std::vector<std::uint8_t> short_frame(frame.begin(), frame.begin() + 20);
    EXPECT_FALSE(read_frame(short_frame, to)) << v6;
  }
  const auto to = xdp_test_addresses(false);
  frame_addresses back = to;
  std::swap(back.source, back.destination);
  std::swap(back.source_port, back.destination_port);
  auto fragment = xdp_test_frame(back);
  fragment[14 + 6] |= 0x20;  // more fragments
  EXPECT_FALSE(read_frame(fragment, to));
  auto tcp = xdp_test_frame(back);
  tcp[14 + 9] = 6;  // a UDP header read as TCP's: its data offset (0) is not a header's
  EXPECT_FALSE(read_frame(tcp, to));
  auto icmp = xdp_test_frame(back);
  icmp[14 + 9] = 1;
  EXPECT_FALSE(read_frame(icmp, to));
}

// A SYN with the MSS option, and the query (with its length, RFC 7766) on the handshake's
// ACK; the expected frames computed apart, as above.
TEST(xdp_frames_test, tcp_segments_have_their_headers_options_and_checksums) {
  std::vector<std::uint8_t> query = xdp_test_bytes("0019" + xdp_test_query_hex);
  const std::vector<iovec> pieces{{query.data(), 2}, {query.data() + 2, query.size() - 2}};
  const tcp_header syn{0x01020304, 0, tcp_flag::syn, 65535, 1460};
  const tcp_header data{0x01020305, 0xa0b0c0d1, tcp_flag::ack | tcp_flag::psh, 65535, 0};
  const std::vector<std::string> expected{
      // IPv4: the SYN, the query.
      "02000000000202000000000108004500002c00004000400626300a4d00010a4d00029c400035010203040000"
      "00006002ffffe30e0000020405b4",
      "02000000000202000000000108004500004300004000400626190a4d00010a4d00029c40003501020305a0b0"
      "c0d15018ffff759200000019" +
          xdp_test_query_hex,
      // IPv6.
      "02000000000202000000000186dd6000000000180640fd770000000000000000000000000001fd7700000000"
      "000000000000000000029c40003501020304000000006002fffffcb80000020405b4",
      "02000000000202000000000186dd60000000002f0640fd770000000000000000000000000001fd7700000000"
      "000000000000000000029c40003501020305a0b0c0d15018ffff8f3c00000019" +
          xdp_test_query_hex};
  std::size_t i = 0;
  for (const bool v6 : {false, true}) {
    const auto a = xdp_test_addresses(v6);
    for (const auto& [header, payload] :
         {std::pair{syn, std::span<const iovec>{}}, std::pair{data, std::span{pieces}}}) {
      std::vector<std::uint8_t> frame(2048);
      frame.resize(write_tcp_frame(a, header, payload, frame));
      EXPECT_EQ(frame, xdp_test_bytes(expected[i])) << i;
      ++i;
    }
  }
}

// The server's segments read back to their header (the MSS among other options) and payload.
TEST(xdp_frames_test, a_tcp_segment_from_the_server_is_read_back_to_its_header_and_payload) {
  for (const bool v6 : {false, true}) {
    const auto to = xdp_test_addresses(v6);
    frame_addresses back = to;
    std::swap(back.source, back.destination);
    std::swap(back.source_port, back.destination_port);
    std::vector<std::uint8_t> answer = xdp_test_bytes("0019" + xdp_test_query_hex);
    const std::vector<iovec> pieces{{answer.data(), answer.size()}};
    const tcp_header sent{0xfffffff0, 0x01020310, tcp_flag::ack | tcp_flag::fin, 512, 0};
    std::vector<std::uint8_t> frame(2048);
    frame.resize(write_tcp_frame(back, sent, pieces, frame));
    auto got = read_frame(frame, to);
    ASSERT_TRUE(got && got->tcp) << v6;
    EXPECT_EQ(*got->tcp, sent) << v6;
    EXPECT_EQ(got->destination_port, 40000) << v6;
    EXPECT_EQ(std::vector<std::uint8_t>(got->payload.begin(), got->payload.end()), answer) << v6;

    // A SYN-ACK with its options as Linux sends them: MSS, SACK permitted, timestamps, NOP,
    // window scale. Only the MSS is read; a cut option list reads as none.
    const tcp_header syn_ack{7, 8, tcp_flag::syn | tcp_flag::ack, 65483, 1460};
    frame.assign(2048, 0);
    frame.resize(write_tcp_frame(back, syn_ack, {}, frame));
    const std::size_t tcp_at = frame.size() - 24;
    const std::vector<std::uint8_t> options{
        4, 2, 8, 10, 0, 0, 0,    1,    0, 0, 0, 0,
        1, 3, 3, 7,  2, 4, 0x05, 0x78, 0, 0, 0, 0};  // MSS 1400 last
    frame.resize(tcp_at + 20);
    frame.insert(frame.end(), options.begin(), options.end());
    frame[tcp_at + 12] = (20 + 24) / 4 << 4;
    const std::size_t ip_at = 14;
    if (v6) {
      frame[ip_at + 5] = 20 + 24;
    } else {
      frame[ip_at + 3] = 20 + 20 + 24;
    }
    got = read_frame(frame, to);
    ASSERT_TRUE(got && got->tcp) << v6;
    EXPECT_EQ(got->tcp->mss, 1400) << v6;
    EXPECT_EQ(got->tcp->flags, tcp_flag::syn | tcp_flag::ack) << v6;
    EXPECT_TRUE(got->payload.empty()) << v6;
    frame[tcp_at + 20 + 17] = 40;  // the MSS option's length runs past the options
    got = read_frame(frame, to);
    ASSERT_TRUE(got && got->tcp) << v6;
    EXPECT_EQ(got->tcp->mss, 0) << v6;
    frame[tcp_at + 12] = (20 + 28) / 4 << 4;  // a data offset past the segment
    EXPECT_FALSE(read_frame(frame, to)) << v6;
  }
}

TEST(xdp_frames_test, a_frame_that_does_not_fit_is_not_written) {
  const auto a = xdp_test_addresses(false);
  std::vector<std::uint8_t> query = xdp_test_bytes(xdp_test_query_hex);
  const std::vector<iovec> pieces{{query.data(), query.size()}};
  std::vector<std::uint8_t> frame(42 + query.size() - 1);
  EXPECT_EQ(write_frame(a, pieces, frame), 0u);
  frame.resize(42 + query.size());
  EXPECT_EQ(write_frame(a, pieces, frame), frame.size());
}

// RFC 1071's example: the sum of 0001 f203 f4f5 f6f7 is ddf2.
TEST(xdp_frames_test, the_internet_checksum_is_rfc_1071s) {
  const std::vector<std::uint8_t> data{0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7};
  EXPECT_EQ(internet_checksum(data), 0xddf2);
  const std::vector<std::uint8_t> odd{0x00, 0x01, 0xf2};
  EXPECT_EQ(internet_checksum(odd), 0xf201);
}

}  // namespace
}  // namespace dnstransport::detail
