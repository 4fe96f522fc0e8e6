// DoQ stream data (RFC 9250, section 4.2): one message with its 2-octet length, then FIN,
// read in one piece or in any chunks; a length that lies either way, a FIN before the length,
// data after the outcome is decided.
#include "message/doq_stream_reader.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace dnstransport::detail {
namespace {

using outcome = doq_stream_reader::outcome;
using bytes = std::vector<std::uint8_t>;

bytes framed(const bytes& message, std::size_t claimed) {
  bytes out(2 + message.size());
  out[0] = static_cast<std::uint8_t>(claimed >> 8);
  out[1] = static_cast<std::uint8_t>(claimed);
  std::copy(message.begin(), message.end(), out.begin() + 2);
  return out;
}

const bytes sample{0x12, 0x34, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0};

TEST(doq_stream_reader_test, a_whole_stream_with_fin_is_read_without_a_copy) {
  const bytes stream = framed(sample, sample.size());
  doq_stream_reader reader;
  EXPECT_EQ(reader.add(stream, true), outcome::message);
  EXPECT_EQ(reader.message().data(), stream.data() + 2);
  EXPECT_EQ(bytes(reader.message().begin(), reader.message().end()), sample);
}

TEST(doq_stream_reader_test, a_stream_in_single_octets_then_a_bare_fin_gives_the_message) {
  const bytes stream = framed(sample, sample.size());
  doq_stream_reader reader;
  for (std::uint8_t octet : stream) {
    EXPECT_EQ(reader.add({&octet, 1}, false), outcome::more);
  }
  EXPECT_EQ(reader.add({}, true), outcome::message);
  EXPECT_EQ(bytes(reader.message().begin(), reader.message().end()), sample);
}

TEST(doq_stream_reader_test, lengths_that_lie_and_short_streams_are_named) {
  {
    doq_stream_reader reader;  // claims one octet more than comes before FIN
    EXPECT_EQ(reader.add(framed(sample, sample.size() + 1), true), outcome::cut);
    EXPECT_STREQ(doq_stream_failure_name(reader.state()), "length_mismatch");
    EXPECT_TRUE(reader.message().empty());
  }
  {
    doq_stream_reader reader;  // claims one octet less: known before FIN
    const bytes stream = framed(sample, sample.size() - 1);
    EXPECT_EQ(reader.add(std::span(stream).first(4), false), outcome::more);
    EXPECT_EQ(reader.add(std::span(stream).subspan(4), false), outcome::overrun);
    EXPECT_STREQ(doq_stream_failure_name(reader.state()), "length_mismatch");
    // Decided: what follows (even a FIN) changes nothing.
    EXPECT_EQ(reader.add(stream, true), outcome::overrun);
  }
  for (const bytes& stream : {bytes{}, bytes{0x00}}) {
    doq_stream_reader reader;
    EXPECT_EQ(reader.add(stream, true), outcome::too_short);
    EXPECT_STREQ(doq_stream_failure_name(reader.state()), "no_answer");
  }
  doq_stream_reader empty_message;  // a zero length and FIN: an empty message, for DNS to judge
  EXPECT_EQ(empty_message.add(bytes{0, 0}, true), outcome::message);
  EXPECT_TRUE(empty_message.message().empty());
}

TEST(doq_stream_reader_test, the_largest_message_fits_and_one_octet_more_is_an_overrun) {
  const bytes largest(65535, 0xab);
  doq_stream_reader reader;
  const bytes stream = framed(largest, largest.size());
  EXPECT_EQ(reader.add(std::span(stream).first(1000), false), outcome::more);
  EXPECT_EQ(reader.add(std::span(stream).subspan(1000), true), outcome::message);
  EXPECT_EQ(reader.message().size(), 65535u);
  reader.reset();
  EXPECT_EQ(reader.state(), outcome::more);
  EXPECT_EQ(reader.add(std::span(stream).first(1000), false), outcome::more);
  EXPECT_EQ(reader.add(std::span(stream).subspan(1000), false), outcome::more);
  const std::uint8_t extra = 0;
  EXPECT_EQ(reader.add({&extra, 1}, false), outcome::overrun);
}

}  // namespace
}  // namespace dnstransport::detail
