#include "transport/xdp/xdp_frames.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
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
  tcp[14 + 9] = 6;
  EXPECT_FALSE(read_frame(tcp, to));
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
