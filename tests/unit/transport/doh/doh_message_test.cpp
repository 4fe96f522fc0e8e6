#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "transport/doh/doh_message.hpp"

namespace dnstransport::detail {
namespace {

std::vector<std::uint8_t> bytes_of(const std::string& text) {
  return {text.begin(), text.end()};
}

TEST(doh_message_test, base64url_matches_rfc_4648_vectors_without_padding) {
  EXPECT_EQ(base64url_encode(bytes_of("")), "");
  EXPECT_EQ(base64url_encode(bytes_of("f")), "Zg");
  EXPECT_EQ(base64url_encode(bytes_of("fo")), "Zm8");
  EXPECT_EQ(base64url_encode(bytes_of("foo")), "Zm9v");
  EXPECT_EQ(base64url_encode(bytes_of("foob")), "Zm9vYg");
  EXPECT_EQ(base64url_encode(bytes_of("fooba")), "Zm9vYmE");
  EXPECT_EQ(base64url_encode(bytes_of("foobar")), "Zm9vYmFy");
  // The URL-safe letters where standard base64 has "+" and "/".
  EXPECT_EQ(base64url_encode(std::vector<std::uint8_t>{0xfb, 0xff}), "-_8");
}

TEST(doh_message_test, rfc_8484_example_query_encodes_as_the_rfc_shows) {
  // RFC 8484 §4.1.1: www.example.com A, id 0, RD.
  const std::vector<std::uint8_t> query{0x00, 0x00, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
                                        0x00, 0x00, 0x00, 0x03, 'w',  'w',  'w',  0x07, 'e',
                                        'x',  'a',  'm',  'p',  'l',  'e',  0x03, 'c',  'o',
                                        'm',  0x00, 0x00, 0x01, 0x00, 0x01};
  EXPECT_EQ(base64url_encode(query), "AAABAAABAAAAAAAAA3d3dwdleGFtcGxlA2NvbQAAAQAB");
  const auto decoded = base64url_decode("AAABAAABAAAAAAAAA3d3dwdleGFtcGxlA2NvbQAAAQAB");
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(*decoded, query);
}

TEST(doh_message_test, decode_round_trips_every_length_and_byte) {
  std::vector<std::uint8_t> data;
  for (int i = 0; i < 300; ++i) {
    const auto decoded = base64url_decode(base64url_encode(data));
    ASSERT_TRUE(decoded.has_value()) << i;
    EXPECT_EQ(*decoded, data);
    data.push_back(static_cast<std::uint8_t>(i * 37 + 11));
  }
}

TEST(doh_message_test, decode_accepts_padding_and_refuses_what_is_not_base64url) {
  EXPECT_EQ(base64url_decode("Zg==").value(), bytes_of("f"));
  EXPECT_EQ(base64url_decode("Zm8=").value(), bytes_of("fo"));
  EXPECT_FALSE(base64url_decode("Zm9v+A").has_value());  // standard base64, not url-safe
  EXPECT_FALSE(base64url_decode("Zm9v/A").has_value());
  EXPECT_FALSE(base64url_decode("Z").has_value());    // a lone sextet
  EXPECT_FALSE(base64url_decode("Zh").has_value());   // stray bits after the last octet
  EXPECT_FALSE(base64url_decode("Zg=").has_value());  // padding that does not complete
  // Padding with no short group to complete (found by fuzzing).
  EXPECT_FALSE(base64url_decode("====").has_value());
  EXPECT_FALSE(base64url_decode("Zm9v====").has_value());
  EXPECT_FALSE(base64url_decode("Zg======").has_value());
  EXPECT_FALSE(base64url_decode("Zm 9v").has_value());
}

}  // namespace
}  // namespace dnstransport::detail
