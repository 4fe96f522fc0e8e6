#include "transport/stream/message_channel.hpp"

#include <algorithm>
#include <utility>

namespace dnstransport::detail {

void message_channel::open(std::unique_ptr<byte_stream> stream) {
  stream_ = std::move(stream);
  reader_.reset();
  out_.clear();
  written_ = 0;
}

std::unique_ptr<byte_stream> message_channel::close() noexcept {
  return std::move(stream_);
}

std::span<std::uint8_t> message_channel::append(std::size_t size) {
  const std::size_t at = out_.size();
  out_.resize(at + frame_prefix_size + size);
  put_frame_prefix(&out_[at], size);
  return {out_.data() + at + frame_prefix_size, size};
}

void message_channel::reverse_since(std::size_t mark) {
  std::vector<std::pair<std::size_t, std::size_t>> frames;  // offset, size with prefix
  for (std::size_t at = mark; at + frame_prefix_size <= out_.size();) {
    const std::size_t size = frame_prefix_size + ((std::size_t{out_[at]} << 8) | out_[at + 1]);
    frames.emplace_back(at, size);
    at += size;
  }
  if (frames.size() < 2) return;
  std::vector<std::uint8_t> reversed;
  reversed.reserve(out_.size() - mark);
  for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
    const auto first = out_.begin() + static_cast<std::ptrdiff_t>(it->first);
    reversed.insert(reversed.end(), first, first + static_cast<std::ptrdiff_t>(it->second));
  }
  std::copy(reversed.begin(), reversed.end(), out_.begin() + static_cast<std::ptrdiff_t>(mark));
}

stream_io message_channel::send(std::span<const iovec> pieces) {
  std::size_t taken = 0;
  if (!output_pending()) {
    const stream_io r = stream_->write(pieces, taken);
    if (r == stream_io::closed || r == stream_io::failed) return r;
  }
  // Keep what the stream did not take (rare: a full socket buffer), in order.
  for (const iovec& piece : pieces) {
    const auto* base = static_cast<const std::uint8_t*>(piece.iov_base);
    if (taken >= piece.iov_len) {
      taken -= piece.iov_len;
      continue;
    }
    out_.insert(out_.end(), base + taken, base + piece.iov_len);
    taken = 0;
  }
  return output_pending() ? flush() : stream_io::done;
}

stream_io message_channel::flush() {
  while (written_ < out_.size()) {
    const iovec rest{out_.data() + written_, out_.size() - written_};
    std::size_t n = 0;
    const stream_io r = stream_->write({&rest, 1}, n);
    if (r != stream_io::done) return r;
    if (n == 0) return stream_io::want_write;
    written_ += n;
  }
  out_.clear();
  written_ = 0;
  return stream_io::done;
}

}  // namespace dnstransport::detail
