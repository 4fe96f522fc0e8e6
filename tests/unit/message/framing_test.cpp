#include "message/framing.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <vector>

#include <gtest/gtest.h>

namespace dnstransport::detail {
namespace {

using bytes = std::vector<std::uint8_t>;
using result = frame_reader::result;

// Each message gets a distinct byte pattern so a swapped, truncated or shifted message shows.
bytes make_message(std::size_t index, std::size_t size) {
  bytes message(size);
  for (std::size_t i = 0; i < size; ++i) message[i] = static_cast<std::uint8_t>(index * 37 + i);
  return message;
}

bytes frame(const std::vector<bytes>& messages) {
  bytes stream;
  for (const auto& m : messages) {
    stream.push_back(static_cast<std::uint8_t>(m.size() >> 8));
    stream.push_back(static_cast<std::uint8_t>(m.size()));
    stream.insert(stream.end(), m.begin(), m.end());
  }
  return stream;
}

std::vector<bytes> mixed_messages() {
  std::vector<bytes> messages;
  const std::size_t sizes[] = {12,  13,   512,  65535, 12, 300,   255,
                               256, 4096, 1232, 40000, 12, 65534, 17};
  for (std::size_t size : sizes) messages.push_back(make_message(messages.size(), size));
  return messages;
}

// Takes every complete message out of the reader.
void drain(frame_reader& reader, std::vector<bytes>& out) {
  std::span<const std::uint8_t> message;
  result r;
  while ((r = reader.next(message)) == result::message)
    out.emplace_back(message.begin(), message.end());
  ASSERT_EQ(r, result::need_more);
}

// Feeds `stream` in chunks whose size `chunk_at(offset)` chooses (bounded by the free space
// the reader offers) and returns the messages in the order they came out.
std::vector<bytes> feed(const bytes& stream,
                        const std::function<std::size_t(std::size_t)>& chunk_at,
                        std::size_t capacity = frame_reader::default_capacity) {
  frame_reader reader(capacity);
  std::vector<bytes> out;
  std::size_t offset = 0;
  while (offset < stream.size()) {
    const std::span<std::uint8_t> space = reader.prepare();
    EXPECT_FALSE(space.empty());
    if (space.empty()) break;
    const std::size_t n = std::min({chunk_at(offset), space.size(), stream.size() - offset});
    std::memcpy(space.data(), stream.data() + offset, n);
    reader.commit(n);
    offset += n;
    drain(reader, out);
  }
  EXPECT_EQ(reader.buffered(), 0u);
  return out;
}

TEST(framing_test, byte_by_byte) {
  const auto messages = mixed_messages();
  EXPECT_EQ(feed(frame(messages), [](std::size_t) { return 1; }), messages);
}

TEST(framing_test, every_chunk_size_from_1_to_40) {
  const auto messages = mixed_messages();
  const bytes stream = frame(messages);
  for (std::size_t chunk = 1; chunk <= 40; ++chunk) {
    EXPECT_EQ(feed(stream, [chunk](std::size_t) { return chunk; }), messages) << chunk;
  }
}

TEST(framing_test, as_much_as_fits_each_time) {
  const auto messages = mixed_messages();
  EXPECT_EQ(feed(frame(messages), [](std::size_t) { return SIZE_MAX; }), messages);
}

TEST(framing_test, whole_stream_in_one_read) {
  const auto messages = mixed_messages();
  const bytes stream = frame(messages);
  frame_reader reader(stream.size());
  const auto space = reader.prepare();
  ASSERT_GE(space.size(), stream.size());
  std::memcpy(space.data(), stream.data(), stream.size());
  reader.commit(stream.size());
  std::vector<bytes> out;
  drain(reader, out);
  EXPECT_EQ(out, messages);
  EXPECT_EQ(reader.buffered(), 0u);
}

TEST(framing_test, split_inside_every_prefix) {
  const auto messages = mixed_messages();
  const bytes stream = frame(messages);
  // Cut one octet after the start of each frame, i.e. between the two prefix octets.
  std::vector<std::size_t> cuts;
  for (std::size_t start = 0; start < stream.size();) {
    cuts.push_back(start + 1);
    start += 2 + (std::size_t{stream[start]} << 8 | stream[start + 1]);
  }
  const auto chunk_at = [&](std::size_t offset) {
    const auto cut = std::upper_bound(cuts.begin(), cuts.end(), offset);
    return cut == cuts.end() ? SIZE_MAX : *cut - offset;
  };
  EXPECT_EQ(feed(stream, chunk_at), messages);
}

TEST(framing_test, many_small_messages_in_one_chunk) {
  std::vector<bytes> messages;
  for (std::size_t i = 0; i < 3000; ++i) messages.push_back(make_message(i, 12 + i % 50));
  const bytes stream = frame(messages);
  // Chunks of 1000 octets hold dozens of messages and end in the middle of one.
  EXPECT_EQ(feed(stream, [](std::size_t) { return 1000; }), messages);
}

TEST(framing_test, zero_length_is_reported) {
  frame_reader reader;
  const bytes stream = {0, 3, 'a', 'b', 'c', 0, 0, 0, 3};
  auto space = reader.prepare();
  std::memcpy(space.data(), stream.data(), stream.size());
  reader.commit(stream.size());
  std::span<const std::uint8_t> message;
  ASSERT_EQ(reader.next(message), result::message);
  EXPECT_EQ(bytes(message.begin(), message.end()), (bytes{'a', 'b', 'c'}));
  EXPECT_EQ(reader.next(message), result::zero_length);
  EXPECT_EQ(reader.next(message), result::zero_length);
}

TEST(framing_test, half_a_zero_prefix_is_not_yet_an_error) {
  frame_reader reader;
  reader.prepare()[0] = 0;
  reader.commit(1);
  std::span<const std::uint8_t> message;
  EXPECT_EQ(reader.next(message), result::need_more);
  reader.prepare()[0] = 0;
  reader.commit(1);
  EXPECT_EQ(reader.next(message), result::zero_length);
}

TEST(framing_test, truncated_message_waits_forever) {
  frame_reader reader;
  std::span<const std::uint8_t> message;
  const bytes stream = frame({make_message(0, 65535)});
  // Everything but the last octet, in uneven reads.
  std::size_t offset = 0;
  while (offset < stream.size() - 1) {
    auto space = reader.prepare();
    ASSERT_FALSE(space.empty());
    const std::size_t n = std::min({std::size_t{4093}, space.size(), stream.size() - 1 - offset});
    std::memcpy(space.data(), stream.data() + offset, n);
    reader.commit(n);
    offset += n;
    ASSERT_EQ(reader.next(message), result::need_more);
    EXPECT_EQ(reader.buffered(), offset);
  }
  EXPECT_EQ(reader.buffered(), stream.size() - 1);
  EXPECT_EQ(reader.prepare().size(), 1u);
  EXPECT_EQ(reader.next(message), result::need_more);
}

TEST(framing_test, truncation_after_complete_messages_keeps_partial_size) {
  frame_reader reader;
  bytes stream = frame({make_message(0, 100), make_message(1, 200)});
  stream.insert(stream.end(), {0x01, 0x00, 1, 2, 3, 4, 5});  // promises 256, sends 5
  auto space = reader.prepare();
  std::memcpy(space.data(), stream.data(), stream.size());
  reader.commit(stream.size());
  std::vector<bytes> out;
  drain(reader, out);
  EXPECT_EQ(out.size(), 2u);
  EXPECT_EQ(reader.buffered(), 7u);
  EXPECT_FALSE(reader.prepare().empty());
  EXPECT_EQ(reader.buffered(), 7u);
}

TEST(framing_test, reset_forgets_partial_message) {
  frame_reader reader;
  std::span<const std::uint8_t> message;
  const bytes partial = {0x00, 0x20, 1, 2, 3};
  auto space = reader.prepare();
  std::memcpy(space.data(), partial.data(), partial.size());
  reader.commit(partial.size());
  ASSERT_EQ(reader.next(message), result::need_more);
  reader.reset();
  EXPECT_EQ(reader.buffered(), 0u);
  EXPECT_EQ(reader.next(message), result::need_more);
  EXPECT_EQ(reader.prepare().size(), frame_reader::default_capacity);

  const bytes fresh = frame({make_message(9, 12)});
  space = reader.prepare();
  std::memcpy(space.data(), fresh.data(), fresh.size());
  reader.commit(fresh.size());
  ASSERT_EQ(reader.next(message), result::message);
  EXPECT_EQ(bytes(message.begin(), message.end()), make_message(9, 12));
}

TEST(framing_test, small_buffer_grows_to_fit_the_largest_message) {
  const bytes stream = frame({make_message(1, 65535), make_message(2, 12)});
  const auto out = feed(
      stream, [](std::size_t) { return std::size_t{1000}; }, 16);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], make_message(1, 65535));
  EXPECT_EQ(out[1], make_message(2, 12));
}

TEST(framing_test, buffer_starts_small) {
  frame_reader reader;
  EXPECT_EQ(reader.prepare().size(), frame_reader::default_capacity);
  EXPECT_LT(frame_reader::default_capacity, frame_reader::max_frame_size);
}

}  // namespace
}  // namespace dnstransport::detail
