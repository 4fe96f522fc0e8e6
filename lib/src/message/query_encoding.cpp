// Query encoding: names in wire form, queries with their EDNS OPT record, and the EDNS
// options (keepalive, padding) added to queries read from wire files.

#include <dnstransport/message.hpp>

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "message/wire.hpp"

namespace dnstransport {

using detail::append_u16;
using detail::flag_rd;
using detail::is_digit;
using detail::read_u16;

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

namespace {

// Where a query's records end and where its OPT record's RDLENGTH is (none without one).
// Throws invalid_argument for a query that does not parse, is signed, or has more than
// one OPT record or records after it.
struct record_walk {
  std::size_t end = 0;
  std::optional<std::size_t> opt_rdlength_at;
};

record_walk walk_records(std::span<const std::uint8_t> query) {
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
  std::optional<std::size_t> opt_rdlength_at;
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

  return {pos, opt_rdlength_at};
}

// The OPT record's options, but a padding option (sized again once the rest is known) and a
// client subnet that `edns` replaces, then those of `edns` the query lacks. `tail_start`
// becomes where the octets after the OPT record begin.
std::vector<std::uint8_t> merged_options(std::span<const std::uint8_t> query,
                                         const std::optional<std::size_t>& opt_rdlength_at,
                                         const edns_config& edns, std::size_t& tail_start) {
  std::vector<std::uint8_t> rdata;
  std::vector<std::uint16_t> present;
  // A client subnet of `edns` replaces the query's: the run's subnets are what it asked for.
  const bool replaces_client_subnet = std::any_of(
      edns.options.begin(), edns.options.end(),
      [](const edns_option& option) { return option.code == edns_option_code::client_subnet; });
  tail_start = query.size();
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
      if (code != edns_option_code::padding &&
          !(code == edns_option_code::client_subnet && replaces_client_subnet)) {
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

  return rdata;
}

}  // namespace

std::vector<std::uint8_t> add_edns_options(std::span<const std::uint8_t> query,
                                           const edns_config& edns) {
  const auto [pos, opt_rdlength_at] = walk_records(query);
  std::size_t tail_start = 0;
  std::vector<std::uint8_t> rdata = merged_options(query, opt_rdlength_at, edns, tail_start);
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

}  // namespace dnstransport
