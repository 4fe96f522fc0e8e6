// Response checking (name walks, the echoed question, record bounds); queries are encoded in
// query_encoding.cpp, the RR type and RCODE names are in mnemonics.cpp.

#include <dnstransport/message.hpp>

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "message/wire.hpp"

namespace dnstransport {

using detail::flag_ad;
using detail::flag_qr;
using detail::flag_tc;
using detail::read_u16;

namespace {

constexpr std::uint8_t ascii_lower(std::uint8_t c) noexcept {
  return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

// Yields the labels of a possibly compressed name one at a time. Every pointer must point
// before the start of the stretch of labels it ends, so the positions visited strictly
// decrease from jump to jump: loops are impossible and the walk is bounded by the message
// size. Real compressors only ever point back at earlier occurrences, which satisfy this.
class name_walker {
 public:
  enum class step { label, end, error };

  name_walker(std::span<const std::uint8_t> message, std::size_t offset) noexcept
      : message_(message), pos_(offset), floor_(offset) {}

  step next() noexcept {
    for (;;) {
      if (pos_ >= message_.size()) return step::error;
      const std::uint8_t length = message_[pos_];
      if ((length & 0xc0) == 0xc0) {
        if (message_.size() - pos_ < 2) return step::error;
        const std::size_t target = read_u16(message_, pos_) & 0x3fff;
        if (target >= floor_) return step::error;
        if (!jumped_) end_ = pos_ + 2;
        jumped_ = true;
        pos_ = floor_ = target;
        continue;
      }
      // 0x40 and 0x80 are the obsolete extended and reserved label types.
      if ((length & 0xc0) != 0) return step::error;
      wire_size_ += 1 + length;
      if (wire_size_ > max_name_wire_size) return step::error;
      if (length == 0) {
        if (!jumped_) end_ = pos_ + 1;
        return step::end;
      }
      if (message_.size() - pos_ - 1 < length) return step::error;
      label_ = message_.subspan(pos_ + 1, length);
      pos_ += 1 + length;
      return step::label;
    }
  }

  // The current label; valid after next() returned step::label.
  std::span<const std::uint8_t> label() const noexcept { return label_; }
  // Offset just past the name at its original place; valid after next() returned step::end.
  std::size_t end() const noexcept { return end_; }

 private:
  std::span<const std::uint8_t> message_;
  std::size_t pos_;
  std::size_t floor_;
  std::size_t end_ = 0;
  std::size_t wire_size_ = 0;
  bool jumped_ = false;
  std::span<const std::uint8_t> label_;
};

// Compares two names that skip_name already accepted, ASCII case-insensitively.
bool names_equal(std::span<const std::uint8_t> a_message, std::size_t a_offset,
                 std::span<const std::uint8_t> b_message, std::size_t b_offset) noexcept {
  name_walker a(a_message, a_offset);
  name_walker b(b_message, b_offset);
  for (;;) {
    const auto a_step = a.next();
    const auto b_step = b.next();
    if (a_step != b_step) return false;
    if (a_step != name_walker::step::label) return a_step == name_walker::step::end;
    if (!std::equal(
            a.label().begin(), a.label().end(), b.label().begin(), b.label().end(),
            [](std::uint8_t x, std::uint8_t y) { return ascii_lower(x) == ascii_lower(y); }))
      return false;
  }
}

unsigned opcode_of(std::span<const std::uint8_t> message) noexcept {
  return (message[2] >> 3) & 0x0f;
}

// Reads the options of an answer's OPT record, whose data start at `rdata_at` in the
// message, into `summary`; false when they do not parse.
bool read_options(std::span<const std::uint8_t> rdata, std::size_t rdata_at,
                  response_summary& summary) noexcept {
  for (std::size_t at = 0; at < rdata.size();) {
    if (rdata.size() - at < 4) return false;
    const std::uint16_t code = read_u16(rdata, at);
    const std::size_t length = read_u16(rdata, at + 2);
    if (rdata.size() - at - 4 < length) return false;
    if (code == edns_option_code::tcp_keepalive) {
      // In an answer the option carries its TIMEOUT (RFC 7828 §3.1); an empty one (the
      // query's, echoed) advertises nothing.
      if (length != 0 && length != 2) return false;
      if (length == 2) {
        summary.keepalive = true;
        summary.keepalive_timeout = read_u16(rdata, at + 4);
      }
    } else if (code == edns_option_code::padding) {
      summary.padded = true;
    } else if (code == edns_option_code::client_subnet) {
      if (length < 4 || length > 4 + 16) return false;
      summary.client_subnet = true;
      summary.client_subnet_family = read_u16(rdata, at + 4);
      summary.client_subnet_source_prefix = rdata[at + 6];
      summary.client_subnet_scope_prefix = rdata[at + 7];
      summary.client_subnet_address_at = static_cast<std::uint16_t>(rdata_at + at + 8);
      summary.client_subnet_address_size = static_cast<std::uint8_t>(length - 4);
    }
    at += 4 + length;
  }
  return true;
}

constexpr unsigned rcode_formerr = 1;
constexpr unsigned rcode_notimp = 4;
constexpr unsigned rcode_refused = 5;

// The header: fills the summary's header fields, and says whether the message is a response
// to this query at all (ok: its sections are worth reading).
inline response_verdict read_header(std::span<const std::uint8_t> response,
                                    std::span<const std::uint8_t> query, std::uint16_t expected_id,
                                    response_summary& summary) noexcept {
  if (response.size() >= 2) summary.id = read_id(response.data());
  if (response.size() < dns_header_size) return response_verdict::too_short;
  summary.rcode = response[3] & 0x0f;
  summary.truncated = (response[2] & flag_tc) != 0;
  summary.authenticated = (response[3] & flag_ad) != 0;
  summary.answer_count = read_u16(response, 6);
  if ((response[2] & flag_qr) == 0) return response_verdict::not_response;
  if (summary.id != expected_id) return response_verdict::wrong_id;
  if (query.size() >= dns_header_size && opcode_of(response) != opcode_of(query)) {
    return response_verdict::wrong_opcode;
  }
  return response_verdict::ok;
}

// Where the name of the query's question ends, if the query has a question. A query from a
// wire file may have none (or a broken one); there is then nothing the response could fail
// to echo.
inline std::optional<std::size_t> question_name_end(std::span<const std::uint8_t> query) noexcept {
  if (query.size() < dns_header_size || read_u16(query, 4) == 0) return std::nullopt;
  const auto name_end = skip_name(query, dns_header_size);
  if (!name_end || query.size() - *name_end < 4) return std::nullopt;
  return name_end;
}

// The response's question section from `pos` (left past it): malformed when it runs past the
// message, wrong_question when it does not echo the query's question, ok otherwise.
inline response_verdict check_questions(std::span<const std::uint8_t> response,
                                        std::span<const std::uint8_t> query, unsigned rcode,
                                        std::size_t& pos) noexcept {
  const std::optional<std::size_t> query_name_end = question_name_end(query);
  const std::uint16_t question_count = read_u16(response, 4);
  bool question_matches = true;
  if (query_name_end && question_count == 0) {
    // Servers may drop the question when they could not parse or will not process it.
    question_matches = rcode == rcode_formerr || rcode == rcode_notimp || rcode == rcode_refused;
  }
  for (unsigned i = 0; i < question_count; ++i) {
    const auto name_end = skip_name(response, pos);
    if (!name_end || response.size() - *name_end < 4) return response_verdict::malformed;
    if (i == 0 && query_name_end) {
      question_matches = std::equal(response.begin() + static_cast<std::ptrdiff_t>(*name_end),
                                    response.begin() + static_cast<std::ptrdiff_t>(*name_end + 4),
                                    query.begin() + static_cast<std::ptrdiff_t>(*query_name_end)) &&
                         names_equal(response, pos, query, dns_header_size);
    }
    pos = *name_end + 4;
  }
  return question_matches ? response_verdict::ok : response_verdict::wrong_question;
}

// The answer, authority and additional records from `pos`: false (malformed) when one runs
// past the message, or, with `read_edns_options`, when there are two OPT records or its
// options do not parse; the OPT record's options go into `summary`. Octets after the last
// record are ignored, as resolvers do.
inline bool check_records(std::span<const std::uint8_t> response, std::size_t pos,
                          bool read_edns_options, response_summary& summary) noexcept {
  const unsigned before_additional =
      static_cast<unsigned>(read_u16(response, 6)) + read_u16(response, 8);
  const unsigned record_count = before_additional + read_u16(response, 10);
  bool opt_seen = false;
  for (unsigned i = 0; i < record_count; ++i) {
    const auto name_end = skip_name(response, pos);
    if (!name_end || response.size() - *name_end < 10) return false;
    const std::size_t rdata_length = read_u16(response, *name_end + 8);
    if (response.size() - *name_end - 10 < rdata_length) return false;
    pos = *name_end + 10 + rdata_length;
    if (read_edns_options && i >= before_additional &&
        read_u16(response, *name_end) == rr_type::opt) {
      if (opt_seen ||
          !read_options(response.subspan(*name_end + 10, rdata_length), *name_end + 10, summary)) {
        return false;
      }
      opt_seen = true;
    }
  }
  return true;
}

}  // namespace

std::string_view verdict_name(response_verdict verdict) {
  switch (verdict) {
    case response_verdict::ok:
      return "ok";
    case response_verdict::too_short:
      return "too_short";
    case response_verdict::not_response:
      return "not_response";
    case response_verdict::wrong_id:
      return "wrong_id";
    case response_verdict::wrong_opcode:
      return "wrong_opcode";
    case response_verdict::wrong_question:
      return "wrong_question";
    case response_verdict::malformed:
      return "malformed";
  }
  return "unknown";
}

std::optional<std::size_t> skip_name(std::span<const std::uint8_t> message,
                                     std::size_t offset) noexcept {
  name_walker walker(message, offset);
  for (;;) {
    switch (walker.next()) {
      case name_walker::step::label:
        continue;
      case name_walker::step::end:
        return walker.end();
      case name_walker::step::error:
        return std::nullopt;
    }
  }
}

response_summary check_response(std::span<const std::uint8_t> response,
                                std::span<const std::uint8_t> query, std::uint16_t expected_id,
                                bool read_edns_options) noexcept {
  response_summary summary;
  summary.verdict = read_header(response, query, expected_id, summary);
  if (summary.verdict != response_verdict::ok) return summary;
  std::size_t pos = dns_header_size;
  const response_verdict question = check_questions(response, query, summary.rcode, pos);
  // A record past the message's end makes it malformed, whatever its question.
  if (question == response_verdict::malformed ||
      !check_records(response, pos, read_edns_options, summary)) {
    summary.verdict = response_verdict::malformed;
    return summary;
  }
  summary.verdict = question;
  return summary;
}

std::uint16_t udp_answer_limit(std::span<const std::uint8_t> query) noexcept {
  constexpr std::uint16_t classic_limit = 512;
  if (query.size() < dns_header_size) return classic_limit;
  std::size_t pos = dns_header_size;
  for (unsigned i = read_u16(query, 4); i > 0; --i) {
    const auto name_end = skip_name(query, pos);
    if (!name_end || query.size() - *name_end < 4) return classic_limit;
    pos = *name_end + 4;
  }
  const unsigned before_additional = static_cast<unsigned>(read_u16(query, 6)) + read_u16(query, 8);
  const unsigned records = before_additional + read_u16(query, 10);
  for (unsigned i = 0; i < records; ++i) {
    const auto name_end = skip_name(query, pos);
    if (!name_end || query.size() - *name_end < 10) return classic_limit;
    const std::uint16_t type = read_u16(query, *name_end);
    if (i >= before_additional && type == rr_type::opt) {
      // The OPT record's CLASS is the requestor's payload size; below 512 means 512.
      return std::max(classic_limit, read_u16(query, *name_end + 2));
    }
    const std::size_t rdata_length = read_u16(query, *name_end + 8);
    if (query.size() - *name_end - 10 < rdata_length) return classic_limit;
    pos = *name_end + 10 + rdata_length;
  }
  return classic_limit;
}

}  // namespace dnstransport
