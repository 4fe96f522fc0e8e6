// Query encoding (names, EDNS) and response checking (name walks, the echoed question,
// record bounds); the RR type and RCODE names are in mnemonics.cpp.

#include <dnstransport/message.hpp>

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace dnstransport {

namespace {

constexpr std::uint8_t ascii_lower(std::uint8_t c) noexcept {
  return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

bool is_digit(char c) noexcept {
  return c >= '0' && c <= '9';
}

std::uint16_t read_u16(std::span<const std::uint8_t> message, std::size_t offset) noexcept {
  return static_cast<std::uint16_t>((message[offset] << 8) | message[offset + 1]);
}

void append_u16(std::vector<std::uint8_t>& out, std::uint16_t value) {
  out.push_back(static_cast<std::uint8_t>(value >> 8));
  out.push_back(static_cast<std::uint8_t>(value & 0xff));
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

constexpr std::uint8_t flag_qr = 0x80;  // in octet 2
constexpr std::uint8_t flag_tc = 0x02;  // in octet 2
constexpr std::uint8_t flag_ad = 0x20;  // in octet 3
constexpr std::uint8_t flag_rd = 0x01;  // in octet 2

unsigned opcode_of(std::span<const std::uint8_t> message) noexcept {
  return (message[2] >> 3) & 0x0f;
}

// Reads the options of an answer's OPT record into `summary`; false when they do not parse.
bool read_options(std::span<const std::uint8_t> rdata, response_summary& summary) noexcept {
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
    }
    at += 4 + length;
  }
  return true;
}

constexpr unsigned rcode_formerr = 1;
constexpr unsigned rcode_notimp = 4;
constexpr unsigned rcode_refused = 5;

}  // namespace

std::vector<std::uint8_t> encode_name(std::string_view name) {
  if (name.empty()) throw std::invalid_argument("empty name");
  if (name == ".") return {0};

  std::vector<std::uint8_t> wire;
  wire.reserve(std::min(name.size() + 2, max_name_wire_size));
  std::size_t label_start = 0;  // index in `wire` of the current label's length octet
  wire.push_back(0);

  const auto close_label = [&] {
    const std::size_t length = wire.size() - label_start - 1;
    if (length == 0) throw std::invalid_argument("empty label");
    wire[label_start] = static_cast<std::uint8_t>(length);
  };
  const auto append_octet = [&](std::uint8_t octet) {
    if (wire.size() - label_start - 1 == max_label_size) {
      throw std::invalid_argument(fmt::format("label longer than {} octets", max_label_size));
    }
    // The root label still has to fit after this octet.
    if (wire.size() + 1 >= max_name_wire_size) {
      throw std::invalid_argument(
          fmt::format("name longer than {} octets in wire format", max_name_wire_size));
    }
    wire.push_back(octet);
  };

  bool label_open = true;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '.') {
      close_label();
      if (i + 1 == name.size()) {
        label_open = false;
        break;
      }
      label_start = wire.size();
      wire.push_back(0);
      continue;
    }
    if (c != '\\') {
      append_octet(static_cast<std::uint8_t>(c));
      continue;
    }
    if (i + 1 == name.size()) throw std::invalid_argument("backslash at the end of the name");
    if (!is_digit(name[i + 1])) {
      append_octet(static_cast<std::uint8_t>(name[i + 1]));
      ++i;
      continue;
    }
    if (name.size() - i < 4 || !is_digit(name[i + 2]) || !is_digit(name[i + 3])) {
      throw std::invalid_argument(
          fmt::format("bad escape \"{}\": \\DDD needs exactly three digits", name.substr(i, 4)));
    }
    const unsigned value = (name[i + 1] - '0') * 100u + (name[i + 2] - '0') * 10u +
                           static_cast<unsigned>(name[i + 3] - '0');
    if (value > 255) {
      throw std::invalid_argument(
          fmt::format("bad escape \"{}\": value over 255", name.substr(i, 4)));
    }
    append_octet(static_cast<std::uint8_t>(value));
    i += 3;
  }
  // Without a trailing dot the last label is still open.
  if (label_open) close_label();
  wire.push_back(0);
  return wire;
}

std::size_t padding_for(std::size_t size, std::uint16_t block) noexcept {
  if (block <= 1) return 0;
  const std::size_t with_header = size + 4;
  return (block - with_header % block) % block;
}

std::vector<std::uint8_t> encode_query(std::string_view name, std::uint16_t type,
                                       const query_options& options) {
  const std::vector<std::uint8_t> wire_name = encode_name(name);
  const edns_config& edns = options.edns;

  std::size_t options_size = 0;
  for (const auto& option : edns.options) {
    if (option.data.size() > 0xffff) {
      throw std::invalid_argument(
          fmt::format("EDNS option {} has more than 65535 octets of data", option.code));
    }
    options_size += 4 + option.data.size();
  }
  const std::size_t unpadded_size = dns_header_size + wire_name.size() + 4 + 11 + options_size;
  const bool padded = edns.enabled && edns.padding_block != 0;
  const std::size_t padding = padded ? padding_for(unpadded_size, edns.padding_block) : 0;
  if (padded) options_size += 4 + padding;
  if (options_size > 0xffff) {
    throw std::invalid_argument("EDNS options exceed 65535 octets in total");
  }

  std::vector<std::uint8_t> message;
  message.reserve(dns_header_size + wire_name.size() + 4 + (edns.enabled ? 11 + options_size : 0));
  append_u16(message, 0);  // id, patched at send time
  message.push_back(options.recursion_desired ? flag_rd : 0);
  message.push_back(0);
  append_u16(message, 1);                     // QDCOUNT
  append_u16(message, 0);                     // ANCOUNT
  append_u16(message, 0);                     // NSCOUNT
  append_u16(message, edns.enabled ? 1 : 0);  // ARCOUNT
  message.insert(message.end(), wire_name.begin(), wire_name.end());
  append_u16(message, type);
  append_u16(message, options.qclass);

  if (edns.enabled) {
    message.push_back(0);  // root owner name
    append_u16(message, rr_type::opt);
    append_u16(message, edns.udp_payload_size);
    message.push_back(0);  // extended RCODE
    message.push_back(0);  // version
    append_u16(message, edns.dnssec_ok ? 0x8000 : 0);
    append_u16(message, static_cast<std::uint16_t>(options_size));
    for (const auto& option : edns.options) {
      append_u16(message, option.code);
      append_u16(message, static_cast<std::uint16_t>(option.data.size()));
      message.insert(message.end(), option.data.begin(), option.data.end());
    }
    if (padded) {
      append_u16(message, edns_option_code::padding);
      append_u16(message, static_cast<std::uint16_t>(padding));
      message.insert(message.end(), padding, 0);
    }
  }
  if (message.size() > 0xffff) {
    throw std::invalid_argument("query longer than 65535 octets");
  }
  return message;
}

std::vector<std::uint8_t> add_edns_options(std::span<const std::uint8_t> query,
                                           const edns_config& edns) {
  constexpr std::uint16_t rr_type_tsig = 250;
  if (query.size() < dns_header_size) throw std::invalid_argument("shorter than a DNS header");
  std::size_t pos = dns_header_size;
  for (unsigned i = read_u16(query, 4); i > 0; --i) {
    const auto name_end = skip_name(query, pos);
    if (!name_end || query.size() - *name_end < 4) {
      throw std::invalid_argument("the question does not parse");
    }
    pos = *name_end + 4;
  }
  const unsigned before_additional = static_cast<unsigned>(read_u16(query, 6)) + read_u16(query, 8);
  const unsigned records = before_additional + read_u16(query, 10);
  std::optional<std::size_t> opt_rdlength_at;  // offset of the OPT record's RDLENGTH
  for (unsigned i = 0; i < records; ++i) {
    const auto name_end = skip_name(query, pos);
    if (!name_end || query.size() - *name_end < 10) {
      throw std::invalid_argument(fmt::format("record {} does not parse", i + 1));
    }
    const std::size_t rdata_length = read_u16(query, *name_end + 8);
    if (query.size() - *name_end - 10 < rdata_length) {
      throw std::invalid_argument(fmt::format("record {} runs past the end", i + 1));
    }
    const std::uint16_t type = read_u16(query, *name_end);
    if (opt_rdlength_at) {
      throw std::invalid_argument(type == rr_type::opt ? "several OPT records"
                                                       : "records after the OPT record");
    }
    if (type == rr_type_tsig) throw std::invalid_argument("a TSIG-signed query");
    if (i >= before_additional && type == rr_type::opt) opt_rdlength_at = *name_end + 8;
    pos = *name_end + 10 + rdata_length;
  }

  // The OPT record's options, but a padding option, which is sized again below.
  std::vector<std::uint8_t> rdata;
  std::vector<std::uint16_t> present;
  std::size_t tail_start = query.size();
  if (opt_rdlength_at) {
    const std::size_t start = *opt_rdlength_at + 2;
    const std::size_t end = start + read_u16(query, *opt_rdlength_at);
    tail_start = end;
    for (std::size_t at = start; at < end;) {
      if (end - at < 4 || end - at - 4 < read_u16(query, at + 2)) {
        throw std::invalid_argument("the OPT record's options do not parse");
      }
      const std::uint16_t code = read_u16(query, at);
      const std::size_t length = 4 + read_u16(query, at + 2);
      if (code != edns_option_code::padding) {
        present.push_back(code);
        rdata.insert(rdata.end(), query.begin() + static_cast<std::ptrdiff_t>(at),
                     query.begin() + static_cast<std::ptrdiff_t>(at + length));
      }
      at += length;
    }
  }
  for (const auto& option : edns.options) {
    if (option.code == edns_option_code::padding ||
        std::find(present.begin(), present.end(), option.code) != present.end()) {
      continue;
    }
    if (option.data.size() > 0xffff) {
      throw std::invalid_argument(
          fmt::format("EDNS option {} has more than 65535 octets of data", option.code));
    }
    append_u16(rdata, option.code);
    append_u16(rdata, static_cast<std::uint16_t>(option.data.size()));
    rdata.insert(rdata.end(), option.data.begin(), option.data.end());
  }

  std::vector<std::uint8_t> message;
  if (opt_rdlength_at) {
    message.assign(query.begin(), query.begin() + static_cast<std::ptrdiff_t>(*opt_rdlength_at));
  } else {
    message.assign(query.begin(), query.begin() + static_cast<std::ptrdiff_t>(pos));
    const std::uint16_t additional = read_u16(query, 10);
    if (additional == 0xffff) throw std::invalid_argument("no room for an OPT record");
    message[10] = static_cast<std::uint8_t>((additional + 1) >> 8);
    message[11] = static_cast<std::uint8_t>((additional + 1) & 0xff);
    message.push_back(0);  // root owner name
    append_u16(message, rr_type::opt);
    append_u16(message, edns.udp_payload_size);
    message.push_back(0);  // extended RCODE
    message.push_back(0);  // version
    append_u16(message, edns.dnssec_ok ? 0x8000 : 0);
    tail_start = pos;
  }
  const std::size_t tail = query.size() - tail_start;  // octets after the last record
  if (edns.padding_block != 0) {
    const std::size_t padding =
        padding_for(message.size() + 2 + rdata.size() + tail, edns.padding_block);
    append_u16(rdata, edns_option_code::padding);
    append_u16(rdata, static_cast<std::uint16_t>(padding));
    rdata.insert(rdata.end(), padding, 0);
  }
  if (rdata.size() > 0xffff) throw std::invalid_argument("EDNS options exceed 65535 octets");
  append_u16(message, static_cast<std::uint16_t>(rdata.size()));
  message.insert(message.end(), rdata.begin(), rdata.end());
  message.insert(message.end(), query.begin() + static_cast<std::ptrdiff_t>(tail_start),
                 query.end());
  if (message.size() > 0xffff) throw std::invalid_argument("query longer than 65535 octets");
  return message;
}

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
  if (response.size() >= 2) summary.id = read_id(response.data());
  if (response.size() < dns_header_size) {
    summary.verdict = response_verdict::too_short;
    return summary;
  }
  summary.rcode = response[3] & 0x0f;
  summary.truncated = (response[2] & flag_tc) != 0;
  summary.authenticated = (response[3] & flag_ad) != 0;
  summary.answer_count = read_u16(response, 6);

  if ((response[2] & flag_qr) == 0) {
    summary.verdict = response_verdict::not_response;
    return summary;
  }
  if (summary.id != expected_id) {
    summary.verdict = response_verdict::wrong_id;
    return summary;
  }
  const bool query_has_header = query.size() >= dns_header_size;
  if (query_has_header && opcode_of(response) != opcode_of(query)) {
    summary.verdict = response_verdict::wrong_opcode;
    return summary;
  }

  // The query's question, if it has one. A query from a wire file may have none (or a
  // broken one); there is then nothing the response could fail to echo.
  std::optional<std::size_t> query_name_end;
  if (query_has_header && read_u16(query, 4) >= 1) {
    query_name_end = skip_name(query, dns_header_size);
    if (query_name_end && query.size() - *query_name_end < 4) query_name_end.reset();
  }

  const std::uint16_t question_count = read_u16(response, 4);
  bool question_matches = true;
  if (query_name_end && question_count == 0) {
    // Servers may drop the question when they could not parse or will not process it.
    question_matches = summary.rcode == rcode_formerr || summary.rcode == rcode_notimp ||
                       summary.rcode == rcode_refused;
  }

  std::size_t pos = dns_header_size;
  for (unsigned i = 0; i < question_count; ++i) {
    const auto name_end = skip_name(response, pos);
    if (!name_end || response.size() - *name_end < 4) {
      summary.verdict = response_verdict::malformed;
      return summary;
    }
    if (i == 0 && query_name_end) {
      question_matches = std::equal(response.begin() + static_cast<std::ptrdiff_t>(*name_end),
                                    response.begin() + static_cast<std::ptrdiff_t>(*name_end + 4),
                                    query.begin() + static_cast<std::ptrdiff_t>(*query_name_end)) &&
                         names_equal(response, pos, query, dns_header_size);
    }
    pos = *name_end + 4;
  }

  const unsigned before_additional =
      static_cast<unsigned>(read_u16(response, 6)) + read_u16(response, 8);
  const unsigned record_count = before_additional + read_u16(response, 10);
  bool opt_seen = false;
  for (unsigned i = 0; i < record_count; ++i) {
    const auto name_end = skip_name(response, pos);
    if (!name_end || response.size() - *name_end < 10) {
      summary.verdict = response_verdict::malformed;
      return summary;
    }
    const std::size_t rdata_length = read_u16(response, *name_end + 8);
    if (response.size() - *name_end - 10 < rdata_length) {
      summary.verdict = response_verdict::malformed;
      return summary;
    }
    pos = *name_end + 10 + rdata_length;
    if (read_edns_options && i >= before_additional &&
        read_u16(response, *name_end) == rr_type::opt) {
      if (opt_seen || !read_options(response.subspan(*name_end + 10, rdata_length), summary)) {
        summary.verdict = response_verdict::malformed;
        return summary;
      }
      opt_seen = true;
    }
  }
  // Octets after the last record are ignored, as resolvers do.

  summary.verdict = question_matches ? response_verdict::ok : response_verdict::wrong_question;
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
