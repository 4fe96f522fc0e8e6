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
  // Padding is optional; when present it completes the last group, which must be short:
  // "====" or "AAAA====" pad nothing (found by fuzzing, tests/fuzz/fuzz_doh_message.cpp).
  std::size_t length = text.size();
  while (length > 0 && text[length - 1] == '=') --length;
  if (length != text.size() && (length % 4 == 0 || text.size() != (length + 3) / 4 * 4)) {
    return std::nullopt;
  }
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

namespace {

bool equal_ignoring_case(std::string_view a, std::string_view b) noexcept {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
           return lower(x) == lower(y);
         });
}

std::string_view trim(std::string_view text) noexcept {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

}  // namespace

doh_target split_doh_target(std::string_view target) noexcept {
  const auto question = target.find('?');
  if (question == std::string_view::npos) return {target, {}};
  return {target.substr(0, question), target.substr(question + 1)};
}

std::optional<std::string_view> doh_dns_parameter(std::string_view query) noexcept {
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    if (pair.starts_with("dns=")) return pair.substr(4);
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return std::nullopt;
}

bool is_doh_media_type(std::string_view content_type) noexcept {
  return equal_ignoring_case(trim(content_type.substr(0, content_type.find(';'))), doh_media_type);
}

}  // namespace dnstransport::detail
