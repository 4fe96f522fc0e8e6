#include "message/doq_stream_reader.hpp"

#include <algorithm>

namespace dnstransport::detail {

namespace {

constexpr std::size_t length_octets = 2;

std::size_t announced(std::span<const std::uint8_t> framed) {
  return length_octets + (static_cast<std::size_t>(framed[0]) << 8 | framed[1]);
}

// The outcome of a whole stream that has ended.
doq_stream_reader::outcome judge(std::span<const std::uint8_t> framed) {
  if (framed.size() < length_octets) return doq_stream_reader::outcome::too_short;
  const std::size_t expected = announced(framed);
  if (framed.size() > expected) return doq_stream_reader::outcome::overrun;
  if (framed.size() < expected) return doq_stream_reader::outcome::cut;
  return doq_stream_reader::outcome::message;
}

}  // namespace

doq_stream_reader::outcome doq_stream_reader::add(std::span<const std::uint8_t> data, bool fin) {
  if (state_ != outcome::more) return state_;
  if (fin && buffer_.empty()) {
    // The whole stream in one piece, the usual case: no copy.
    state_ = judge(data);
    if (state_ == outcome::message) message_ = data.subspan(length_octets);
    return state_;
  }
  // Never more than the largest length allows, plus one octet to see the overrun.
  const std::size_t room = length_octets + 65535 + 1 - buffer_.size();
  buffer_.insert(buffer_.end(), data.begin(),
                 data.begin() + static_cast<std::ptrdiff_t>(std::min(room, data.size())));
  if (buffer_.size() >= length_octets && buffer_.size() > announced(buffer_)) {
    state_ = outcome::overrun;
    buffer_ = {};
    return state_;
  }
  if (!fin) return state_;
  state_ = judge(buffer_);
  if (state_ == outcome::message) message_ = std::span<const std::uint8_t>(buffer_).subspan(2);
  return state_;
}

void doq_stream_reader::reset() noexcept {
  buffer_.clear();
  message_ = {};
  state_ = outcome::more;
}

const char* doq_stream_failure_name(doq_stream_reader::outcome o) noexcept {
  switch (o) {
    case doq_stream_reader::outcome::too_short:
      return "no_answer";
    case doq_stream_reader::outcome::overrun:
    case doq_stream_reader::outcome::cut:
      return "length_mismatch";
    default:
      return "";
  }
}

}  // namespace dnstransport::detail
