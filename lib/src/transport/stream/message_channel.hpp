#pragma once
// Internal: DNS messages over a byte_stream, framed with their 2-octet length (RFC 7766 §8),
// for the stream client and the responder alike: the read loop, the reassembly of messages,
// and the output a stream did not take yet. Gathered writes go straight to the stream
// (plain TCP sends them without a copy); only what it leaves is copied and kept.

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "message/framing.hpp"
#include "transport/stream/byte_stream.hpp"

namespace dnstransport::detail {

class message_channel {
 public:
  /// Starts a new connection's stream: buffers are emptied.
  void open(std::unique_ptr<byte_stream> stream);
  /// Drops the stream (the socket is its owner's); buffers keep their capacity.
  /// Ends the channel; returns the stream, closed, for its connector to reuse.
  std::unique_ptr<byte_stream> close() noexcept;
  bool is_open() const noexcept { return stream_ != nullptr; }
  byte_stream& stream() noexcept { return *stream_; }

  /// Why read() returned.
  enum class read_end {
    drained,     // nothing more to read now: wait for readability
    want_write,  // the stream must write first (TLS): wait for writability
    closed,      // the peer ended the stream
    failed,      // reset or fatal error (stream().failure_cause())
    stopped,     // on_read returned false
    more,        // max_reads reached with input read ahead in the stream: call again soon,
                 // without waiting for readiness (the socket may have nothing new)
  };

  /// Reads until nothing more is available now. After each read that brought bytes,
  /// `on_read()` takes the complete messages with next() and returns false to stop.
  /// A read shorter than the buffer ends it (the socket is most likely drained, and if not,
  /// the next readiness wait ends at once), unless `drain` is set and the stream reads a
  /// record at a time (TLS): then it reads on until the stream would block, at most
  /// `max_drain_reads` times (then drained: other work gets its turn between wake-ups).
  /// `max_reads` (0: no limit) bounds the reads of one call, so that a peer that keeps
  /// sending cannot hold the caller's thread: past it the call ends, `more` when the stream
  /// holds input read ahead, `drained` otherwise (the next readiness wait ends at once).
  static constexpr unsigned max_drain_reads = 64;
  template <class OnRead>
  read_end read(OnRead&& on_read, bool drain = false, unsigned max_reads = 0) {
    const bool by_record = drain && stream_->reads_by_record();
    for (unsigned reads = 1;; ++reads) {
      const auto space = reader_.prepare();
      std::size_t n = 0;
      switch (stream_->read(space, n)) {
        case stream_io::done:
          break;
        case stream_io::want_read:
          return read_end::drained;
        case stream_io::want_write:
          return read_end::want_write;
        case stream_io::closed:
          return read_end::closed;
        case stream_io::failed:
          return read_end::failed;
      }
      reader_.commit(n);
      if (!on_read()) return read_end::stopped;
      const bool buffered = stream_->has_buffered_input();
      if (n < space.size() && !buffered && (!by_record || reads >= max_drain_reads)) {
        return read_end::drained;
      }
      if (max_reads != 0 && reads >= max_reads) {
        return buffered ? read_end::more : read_end::drained;
      }
    }
  }

  /// The next complete message read (valid until the next call), need_more, or zero_length
  /// (a broken stream: close it).
  frame_reader::result next(std::span<const std::uint8_t>& message) noexcept {
    return reader_.next(message);
  }

  /// Output the stream has not taken yet.
  bool output_pending() const noexcept { return written_ < out_.size(); }
  std::size_t output_pending_size() const noexcept { return out_.size() - written_; }

  /// Adds a message of `size` octets to the output, after its length prefix; returns where
  /// the message goes. Sent by flush().
  std::span<std::uint8_t> append(std::size_t size);

  /// Where the output ends now; with reverse_since, to reorder the frames appended after.
  std::size_t output_mark() const noexcept { return out_.size(); }
  /// Puts the frames appended since `mark` (nothing flushed in between) in reverse order:
  /// a test server that answers out of order.
  void reverse_since(std::size_t mark);

  /// Sends `pieces` (complete frames) after any pending output; what the stream does not
  /// take now is kept for flush(). done: everything was sent.
  stream_io send(std::span<const iovec> pieces);

  /// Sends the pending output; done when nothing is left.
  stream_io flush();

  /// Forgets the output not sent yet: early data the server refused, which goes again whole.
  void drop_output() noexcept {
    out_.clear();
    written_ = 0;
  }

 private:
  std::unique_ptr<byte_stream> stream_;
  frame_reader reader_;
  std::vector<std::uint8_t> out_;
  std::size_t written_ = 0;  // octets of out_ already sent
};

}  // namespace dnstransport::detail
