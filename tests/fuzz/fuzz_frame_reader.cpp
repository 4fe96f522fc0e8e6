// Stream framing: the frame_reader fed the input in chunks whose sizes the input's first
// octet chooses, against a straight reading of the same bytes. Both must yield the same
// messages in the same order, stop at the same zero length prefix, and keep the same
// partial message buffered.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "fuzz_check.hpp"
#include "message/framing.hpp"

using dnstransport::detail::frame_reader;

namespace {

struct reading {
  std::vector<std::vector<std::uint8_t>> messages;
  bool zero_length = false;
  std::size_t left_over = 0;  // octets of an unfinished prefix or message
};

reading read_straight(std::span<const std::uint8_t> stream) {
  reading r;
  std::size_t pos = 0;
  while (stream.size() - pos >= 2) {
    const std::size_t length = std::size_t{stream[pos]} << 8 | stream[pos + 1];
    if (length == 0) {
      r.zero_length = true;
      return r;
    }
    if (stream.size() - pos - 2 < length) break;
    r.messages.emplace_back(stream.begin() + static_cast<std::ptrdiff_t>(pos + 2),
                            stream.begin() + static_cast<std::ptrdiff_t>(pos + 2 + length));
    pos += 2 + length;
  }
  r.left_over = stream.size() - pos;
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  chunker chunks(data[0], 4096);
  // Capacities under the largest frame are raised to it; exercise that path too.
  const std::size_t capacity = (data[1] & 1) != 0 ? frame_reader::default_capacity : data[1];
  const std::span<const std::uint8_t> stream(data + 2, size - 2);
  const reading expected = read_straight(stream);

  frame_reader reader(capacity);
  reading got;
  std::size_t pos = 0;
  while (pos < stream.size() && !got.zero_length) {
    const std::span<std::uint8_t> space = reader.prepare();
    FUZZ_CHECK(!space.empty());
    const std::size_t n = std::min({chunks.next(), space.size(), stream.size() - pos});
    std::memcpy(space.data(), stream.data() + pos, n);
    reader.commit(n);
    pos += n;
    std::span<const std::uint8_t> message;
    for (;;) {
      const auto r = reader.next(message);
      if (r == frame_reader::result::need_more) break;
      if (r == frame_reader::result::zero_length) {
        got.zero_length = true;
        break;
      }
      got.messages.emplace_back(message.begin(), message.end());
    }
  }
  FUZZ_CHECK(got.zero_length == expected.zero_length);
  FUZZ_CHECK(got.messages == expected.messages);
  if (!got.zero_length) FUZZ_CHECK(reader.buffered() == expected.left_over);
  reader.reset();
  FUZZ_CHECK(reader.buffered() == 0);
  return 0;
}
