#pragma once
// Internal: length-prefixed DNS messages (RFC 1035 §4.2.2, RFC 7766 §8) on a byte stream:
// the 2-octet prefix written, and messages reassembled from chunks read in any sizes. Used by
// message_channel (stream/), under the stream client and the responder.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace dnstransport::detail {

/// Octets of the length prefix before each message.
inline constexpr std::size_t frame_prefix_size = 2;

/// Writes the length prefix of a `size`-octet message (at most 65535) at `at`.
inline void put_frame_prefix(std::uint8_t* at, std::size_t size) noexcept {
  at[0] = static_cast<std::uint8_t>(size >> 8);
  at[1] = static_cast<std::uint8_t>(size);
}

class frame_reader {
 public:
  /// Largest message plus its 2-octet prefix.
  static constexpr std::size_t max_frame_size = 65535 + 2;
  /// Starting size: DNS answers are small, and a reader per connection must stay cheap when
  /// tens of thousands of connections are open. The buffer grows to fit a larger message
  /// once that message's length prefix has arrived (never per query).
  static constexpr std::size_t default_capacity = 4096;

  explicit frame_reader(std::size_t capacity = default_capacity);

  /// Free space at the end of the buffer for the next read; never empty while no error was
  /// reported (consumed bytes are compacted away first, and the buffer grows to hold the
  /// message in progress).
  std::span<std::uint8_t> prepare();

  /// Marks `n` bytes of the span returned by prepare() as filled.
  void commit(std::size_t n) noexcept;

  enum class result {
    message,      // `message` holds the next complete message (valid until the next call)
    need_more,    // no complete message buffered yet
    zero_length,  // a length prefix of 0: the stream is unusable, close it
  };

  /// Takes the next complete message out of the buffer.
  result next(std::span<const std::uint8_t>& message) noexcept;

  /// Bytes received but not yet returned as messages (a partial message at close time).
  std::size_t buffered() const noexcept { return end_ - begin_; }

  /// Forgets everything (for a new connection).
  void reset() noexcept { begin_ = end_ = 0; }

 private:
  std::vector<std::uint8_t> buffer_;
  std::size_t begin_ = 0;  // first unconsumed byte
  std::size_t end_ = 0;    // one past the last received byte
};

}  // namespace dnstransport::detail
