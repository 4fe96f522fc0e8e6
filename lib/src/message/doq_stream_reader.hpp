#pragma once
// Internal: what one DNS-over-QUIC stream carries, read as it arrives: one DNS message with
// its 2-octet length, then FIN (RFC 9250, section 4.2). The client reads answers with it, the
// responder queries. Pure: no QUIC, no sockets (fuzzed by tests/fuzz/fuzz_doq_stream.cpp).

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace dnstransport::detail {

class doq_stream_reader {
 public:
  enum class outcome {
    more,       // the message is not all there yet
    message,    // FIN after exactly the announced length: message() is it
    too_short,  // FIN before the 2-octet length was complete
    overrun,    // more octets than the length announces (known before FIN)
    cut,        // FIN before the announced length was all there
  };

  // The next `data` of the stream; `fin`: the stream ends after it. Once the outcome is
  // anything but `more`, it stays, and further data is ignored.
  outcome add(std::span<const std::uint8_t> data, bool fin);
  outcome state() const noexcept { return state_; }
  // The DNS message (without its length), when state() is `message`. It points into the
  // last `data` given when the whole stream came in one piece with FIN, so read it before
  // that buffer goes.
  std::span<const std::uint8_t> message() const noexcept { return message_; }
  // Forgets everything, for the next stream.
  void reset() noexcept;

 private:
  std::vector<std::uint8_t> buffer_;  // the length and message as they arrive
  std::span<const std::uint8_t> message_;
  outcome state_ = outcome::more;
};

// What a stream's outcome is called in counters and messages ("length_mismatch" for
// overrun and cut, "no_answer" for too_short).
const char* doq_stream_failure_name(doq_stream_reader::outcome o) noexcept;

}  // namespace dnstransport::detail
