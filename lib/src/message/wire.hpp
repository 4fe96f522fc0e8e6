#pragma once
// Internal: 16-bit fields of DNS messages in network order, for the encoder and the checker.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace dnstransport::detail {

// Header flag bits.
inline constexpr std::uint8_t flag_qr = 0x80;  // in octet 2
inline constexpr std::uint8_t flag_tc = 0x02;  // in octet 2
inline constexpr std::uint8_t flag_ad = 0x20;  // in octet 3
inline constexpr std::uint8_t flag_rd = 0x01;  // in octet 2

inline constexpr bool is_digit(char c) noexcept {
  return c >= '0' && c <= '9';
}

inline std::uint16_t read_u16(std::span<const std::uint8_t> message, std::size_t offset) noexcept {
  return static_cast<std::uint16_t>((message[offset] << 8) | message[offset + 1]);
}

inline void append_u16(std::vector<std::uint8_t>& out, std::uint16_t value) {
  out.push_back(static_cast<std::uint8_t>(value >> 8));
  out.push_back(static_cast<std::uint8_t>(value & 0xff));
}

}  // namespace dnstransport::detail
