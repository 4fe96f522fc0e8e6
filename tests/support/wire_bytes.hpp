#pragma once
/// \file
/// Test support: DNS messages written octet by octet, for the tests of the parsers (message,
/// EDNS): `header(...) + question("example.com") + ...`.

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include <dnstransport/message.hpp>

namespace dnstransport::wire_bytes {

using bytes = std::vector<std::uint8_t>;

inline bytes operator+(bytes a, const bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

inline bytes to_bytes(std::span<const std::uint8_t> span) {
  return bytes(span.begin(), span.end());
}

inline bytes u16(std::uint16_t value) {
  return {static_cast<std::uint8_t>(value >> 8), static_cast<std::uint8_t>(value & 0xff)};
}

inline bytes header(std::uint16_t id, std::uint16_t flags, std::uint16_t qd, std::uint16_t an,
                    std::uint16_t ns, std::uint16_t ar) {
  return u16(id) + u16(flags) + u16(qd) + u16(an) + u16(ns) + u16(ar);
}

/// QR set, opcode QUERY, RD and RA set, RCODE 0.
inline constexpr std::uint16_t response_flags = 0x8180;

inline bytes question(std::string_view name, std::uint16_t type = rr_type::a,
                      std::uint16_t qclass = class_in) {
  return encode_name(name) + u16(type) + u16(qclass);
}

}  // namespace dnstransport::wire_bytes
