#pragma once
// Shared by the fuzz targets of the responder's stream listeners: a byte_stream in memory,
// with no TLS, that hands the listener the fuzzer's octets as what a client sent (in the
// pieces a chunker chooses, then the end of the stream) and keeps what the listener writes
// (taken in pieces too: partial writes). Every step is done at once or the stream is closed,
// so a connection runs to its end with no wait on its socket.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "fuzz_check.hpp"
#include "transport/stream/byte_stream.hpp"

namespace fuzzing {

using dnstransport::detail::byte_stream;
using dnstransport::detail::stream_io;

struct memory_wire {
  std::span<const std::uint8_t> from_client;
  std::size_t read_offset = 0;
  chunker read_pieces{0, 1};
  chunker write_pieces{0, 1};
  std::vector<std::uint8_t> to_client;
  bool shut_down = false;
};

class memory_stream final : public byte_stream {
 public:
  explicit memory_stream(memory_wire& wire) : wire_(wire) {}

  const char* name() const noexcept override { return "memory"; }
  bool has_handshake() const noexcept override { return false; }
  stream_io handshake() override { return stream_io::done; }
  stream_io read(std::span<std::uint8_t> buffer, std::size_t& transferred) override {
    const std::size_t left = wire_.from_client.size() - wire_.read_offset;
    if (left == 0) return stream_io::closed;
    transferred = std::min({left, buffer.size(), wire_.read_pieces.next()});
    std::copy_n(wire_.from_client.data() + wire_.read_offset, transferred, buffer.data());
    wire_.read_offset += transferred;
    return stream_io::done;
  }
  bool has_buffered_input() const override { return false; }
  stream_io write(std::span<const iovec> pieces, std::size_t& transferred) override {
    FUZZ_CHECK(!wire_.shut_down);
    const std::size_t limit = wire_.write_pieces.next();
    transferred = 0;
    for (const iovec& piece : pieces) {
      const std::size_t n = std::min(piece.iov_len, limit - transferred);
      const auto* bytes = static_cast<const std::uint8_t*>(piece.iov_base);
      wire_.to_client.insert(wire_.to_client.end(), bytes, bytes + n);
      transferred += n;
      if (transferred == limit) break;
    }
    return stream_io::done;
  }
  void shutdown() override { wire_.shut_down = true; }
  std::string failure_cause() const override { return {}; }
  std::string error_message() const override { return {}; }

 private:
  memory_wire& wire_;
};

class memory_acceptor final : public dnstransport::detail::stream_acceptor {
 public:
  explicit memory_acceptor(memory_wire& wire) : wire_(wire) {}
  std::unique_ptr<byte_stream> open(int /*fd*/) override {
    return std::make_unique<memory_stream>(wire_);
  }

 private:
  memory_wire& wire_;
};

}  // namespace fuzzing
