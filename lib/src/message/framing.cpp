#include "message/framing.hpp"

#include <algorithm>
#include <cstring>

namespace dnstransport::detail {

namespace {

constexpr std::size_t prefix_size = 2;
// Room for a prefix and a little more, so prepare() always offers some space.
constexpr std::size_t minimum_capacity = 16;

std::size_t length_at(const std::uint8_t* prefix) noexcept {
  return std::size_t{prefix[0]} << 8 | prefix[1];
}

}  // namespace

frame_reader::frame_reader(std::size_t capacity) : buffer_(std::max(capacity, minimum_capacity)) {}

std::span<std::uint8_t> frame_reader::prepare() {
  if (begin_ == end_) {
    begin_ = end_ = 0;
  } else {
    // The message in progress needs at least its prefix; once the prefix is in, all of it.
    std::size_t frame_size = prefix_size;
    if (buffered() >= prefix_size) {
      frame_size = prefix_size + length_at(buffer_.data() + begin_);
    }
    if (end_ == buffer_.size() || begin_ + frame_size > buffer_.size()) {
      std::memmove(buffer_.data(), buffer_.data() + begin_, buffered());
      end_ -= begin_;
      begin_ = 0;
    }
    if (frame_size > buffer_.size()) buffer_.resize(frame_size);
  }
  return {buffer_.data() + end_, buffer_.size() - end_};
}

void frame_reader::commit(std::size_t n) noexcept {
  end_ += n;
}

frame_reader::result frame_reader::next(std::span<const std::uint8_t>& message) noexcept {
  if (buffered() < prefix_size) return result::need_more;
  const std::size_t length = length_at(buffer_.data() + begin_);
  if (length == 0) return result::zero_length;
  if (buffered() < prefix_size + length) return result::need_more;
  message = {buffer_.data() + begin_ + prefix_size, length};
  begin_ += prefix_size + length;
  return result::message;
}

}  // namespace dnstransport::detail
