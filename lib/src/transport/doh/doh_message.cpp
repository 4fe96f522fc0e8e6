#include "transport/doh/doh_message.hpp"

#include <array>

namespace dnstransport::detail {

namespace {

constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

constexpr std::array<std::int8_t, 256> decoding = [] {
  std::array<std::int8_t, 256> table{};
  table.fill(-1);
  for (int i = 0; i < 64; ++i)
    table[static_cast<unsigned char>(alphabet[i])] = static_cast<std::int8_t>(i);
  return table;
}();

}  // namespace

void base64url_append(std::span<const std::uint8_t> data, std::string& out) {
  std::size_t i = 0;
  for (; i + 3 <= data.size(); i += 3) {
    const std::uint32_t v =
        (std::uint32_t{data[i]} << 16) | (std::uint32_t{data[i + 1]} << 8) | data[i + 2];
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    out += alphabet[(v >> 6) & 63];
    out += alphabet[v & 63];
  }
  const std::size_t rest = data.size() - i;
  if (rest == 1) {
    const std::uint32_t v = std::uint32_t{data[i]} << 16;
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
  } else if (rest == 2) {
    const std::uint32_t v = (std::uint32_t{data[i]} << 16) | (std::uint32_t{data[i + 1]} << 8);
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    out += alphabet[(v >> 6) & 63];
  }
}

std::string base64url_encode(std::span<const std::uint8_t> data) {
  std::string out;
  out.reserve((data.size() + 2) / 3 * 4);
  base64url_append(data, out);
  return out;
}

std::optional<std::vector<std::uint8_t>> base64url_decode(std::string_view text) {
  // Padding is optional; when present it must complete the last group.
  std::size_t length = text.size();
  while (length > 0 && text[length - 1] == '=') --length;
  if (length != text.size() && text.size() % 4 != 0) return std::nullopt;
  if (length % 4 == 1) return std::nullopt;  // 6 bits cannot end an encoding
  std::vector<std::uint8_t> out;
  out.reserve(length * 3 / 4);
  std::uint32_t bits = 0;
  unsigned count = 0;
  for (std::size_t i = 0; i < length; ++i) {
    const std::int8_t v = decoding[static_cast<unsigned char>(text[i])];
    if (v < 0) return std::nullopt;
    bits = (bits << 6) | static_cast<std::uint32_t>(v);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out.push_back(static_cast<std::uint8_t>((bits >> count) & 0xff));
    }
  }
  // The bits left over must be zero (canonical encoding).
  if ((bits & ((1u << count) - 1)) != 0) return std::nullopt;
  return out;
}

}  // namespace dnstransport::detail
