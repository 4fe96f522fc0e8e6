// The PROXY protocol's headers, versions 1 and 2, written and read (proxy_header.hpp).
#include "message/proxy_header.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>

namespace dnstransport::detail {

namespace {

using boost::asio::ip::address;
using boost::asio::ip::address_v6;

// Both addresses of one family: IPv4 when both are, else IPv6 (IPv4 ones mapped).
std::pair<address, address> one_family(const proxied_connection& c) {
  if (c.source.is_v4() && c.destination.is_v4()) return {c.source, c.destination};
  const auto v6 = [](const address& a) {
    return a.is_v6()
               ? a
               : address(boost::asio::ip::make_address_v6(boost::asio::ip::v4_mapped, a.to_v4()));
  };
  return {v6(c.source), v6(c.destination)};
}

void put16(std::vector<std::uint8_t>& out, std::size_t value) {
  out.push_back(static_cast<std::uint8_t>(value >> 8));
  out.push_back(static_cast<std::uint8_t>(value));
}

template <typename Bytes>
void put_bytes(std::vector<std::uint8_t>& out, const Bytes& bytes) {
  out.insert(out.end(), bytes.begin(), bytes.end());
}

std::uint16_t get16(const std::uint8_t* at) {
  return static_cast<std::uint16_t>((at[0] << 8) | at[1]);
}

proxy_header_read invalid(const char* why) {
  proxy_header_read r;
  r.result = proxy_header_read::outcome::invalid;
  r.why = why;
  return r;
}

proxy_header_read read_v2(std::span<const std::uint8_t> data) {
  proxy_header_read r;
  if (data.size() < 16) {
    r.result = proxy_header_read::outcome::incomplete;
    return r;
  }
  const std::uint8_t version = data[12] >> 4;
  const std::uint8_t command = data[12] & 0x0F;
  const std::uint8_t family = data[13] >> 4;
  const std::uint8_t protocol = data[13] & 0x0F;
  const std::size_t length = get16(&data[14]);
  if (version != 2) return invalid("version 2 signature with another version");
  if (command > 1) return invalid("command neither LOCAL nor PROXY");
  if (data.size() < 16 + length) {
    r.result = proxy_header_read::outcome::incomplete;
    return r;
  }
  r.length = 16 + length;
  const std::uint8_t* block = &data[16];
  std::size_t addresses = 0;
  if (command == 0) {
    r.local = true;
  } else if (family == 1 || family == 2) {
    if (protocol != 1 && protocol != 2) return invalid("protocol neither STREAM nor DGRAM");
    addresses = family == 1 ? 12 : 36;
    if (length < addresses) return invalid("address block shorter than its family's");
    r.connection.stream = protocol == 1;
    if (family == 1) {
      boost::asio::ip::address_v4::bytes_type s, d;
      std::memcpy(s.data(), block, 4);
      std::memcpy(d.data(), block + 4, 4);
      r.connection.source = boost::asio::ip::address_v4(s);
      r.connection.destination = boost::asio::ip::address_v4(d);
    } else {
      address_v6::bytes_type s, d;
      std::memcpy(s.data(), block, 16);
      std::memcpy(d.data(), block + 16, 16);
      r.connection.source = address_v6(s);
      r.connection.destination = address_v6(d);
    }
    const std::size_t ports = addresses - 4;
    r.connection.source_port = get16(block + ports);
    r.connection.destination_port = get16(block + ports + 2);
  } else {
    return invalid("address family neither INET nor INET6");
  }
  for (std::size_t at = addresses; at < length;) {
    if (length - at < 3) return invalid("TLV cut short");
    const std::size_t size = get16(block + at + 1);
    if (length - at - 3 < size) return invalid("TLV longer than the header");
    r.tlvs.emplace_back(block[at],
                        std::vector<std::uint8_t>(block + at + 3, block + at + 3 + size));
    at += 3 + size;
  }
  r.result = proxy_header_read::outcome::complete;
  return r;
}

proxy_header_read read_v1(std::span<const std::uint8_t> data) {
  // At most 107 octets, CRLF included.
  constexpr std::size_t longest = 107;
  const std::string_view text(reinterpret_cast<const char*>(data.data()),
                              std::min(data.size(), longest));
  const auto end = text.find("\r\n");
  if (end == std::string_view::npos) {
    if (data.size() >= longest) return invalid("version 1 line longer than 107 octets");
    proxy_header_read r;
    r.result = proxy_header_read::outcome::incomplete;
    return r;
  }
  std::vector<std::string> words;
  std::string_view line = text.substr(0, end);
  while (!line.empty()) {
    const auto space = line.find(' ');
    words.emplace_back(line.substr(0, space));
    line = space == std::string_view::npos ? std::string_view() : line.substr(space + 1);
  }
  proxy_header_read r;
  r.length = end + 2;
  if (words.size() == 2 && words[1] == "UNKNOWN") {
    r.local = true;
    r.result = proxy_header_read::outcome::complete;
    return r;
  }
  if (words.size() != 6 || (words[1] != "TCP4" && words[1] != "TCP6")) {
    return invalid("version 1 line not PROXY TCP4|TCP6 SRC DST SPORT DPORT");
  }
  boost::system::error_code e1, e2;
  r.connection.source = boost::asio::ip::make_address(words[2], e1);
  r.connection.destination = boost::asio::ip::make_address(words[3], e2);
  if (e1 || e2) return invalid("version 1 address that does not parse");
  try {
    const unsigned long sp = std::stoul(words[4]);
    const unsigned long dp = std::stoul(words[5]);
    if (sp > 65535 || dp > 65535) return invalid("version 1 port above 65535");
    r.connection.source_port = static_cast<std::uint16_t>(sp);
    r.connection.destination_port = static_cast<std::uint16_t>(dp);
  } catch (const std::logic_error&) {
    return invalid("version 1 port that does not parse");
  }
  r.result = proxy_header_read::outcome::complete;
  return r;
}

}  // namespace

std::vector<std::uint8_t> proxy_v2_header(const proxied_connection& c,
                                          const std::vector<proxy_tlv>& tlvs) {
  const auto [source, destination] = one_family(c);
  std::vector<std::uint8_t> out(std::begin(proxy_v2_signature), std::end(proxy_v2_signature));
  out.push_back(0x21);  // version 2, PROXY
  const bool v4 = source.is_v4();
  out.push_back(static_cast<std::uint8_t>((v4 ? 0x10 : 0x20) | (c.stream ? 0x01 : 0x02)));
  std::size_t length = v4 ? 12 : 36;
  for (const auto& [type, value] : tlvs) length += 3 + value.size();
  if (length > 65535) throw std::length_error("PROXY v2 header over 65535 octets");
  put16(out, length);
  if (v4) {
    put_bytes(out, source.to_v4().to_bytes());
    put_bytes(out, destination.to_v4().to_bytes());
  } else {
    put_bytes(out, source.to_v6().to_bytes());
    put_bytes(out, destination.to_v6().to_bytes());
  }
  put16(out, c.source_port);
  put16(out, c.destination_port);
  for (const auto& [type, value] : tlvs) {
    out.push_back(type);
    put16(out, value.size());
    put_bytes(out, value);
  }
  return out;
}

std::string proxy_v1_header(const proxied_connection& c) {
  const auto [source, destination] = one_family(c);
  return fmt::format("PROXY {} {} {} {} {}\r\n", source.is_v4() ? "TCP4" : "TCP6",
                     source.to_string(), destination.to_string(), c.source_port,
                     c.destination_port);
}

proxy_header_read read_proxy_header(std::span<const std::uint8_t> data) {
  const std::size_t have = std::min(data.size(), sizeof proxy_v2_signature);
  if (have > 0 && std::memcmp(data.data(), proxy_v2_signature, have) == 0) {
    if (have < sizeof proxy_v2_signature) {
      proxy_header_read r;
      r.result = proxy_header_read::outcome::incomplete;
      return r;
    }
    return read_v2(data);
  }
  constexpr std::string_view v1 = "PROXY ";
  const std::size_t v1_have = std::min(data.size(), v1.size());
  if (v1_have > 0 && std::memcmp(data.data(), v1.data(), v1_have) == 0) {
    if (v1_have < v1.size()) {
      proxy_header_read r;
      r.result = proxy_header_read::outcome::incomplete;
      return r;
    }
    return read_v1(data);
  }
  return {};
}

}  // namespace dnstransport::detail
