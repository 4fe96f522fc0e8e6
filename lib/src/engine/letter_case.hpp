#pragma once
// Internal: DNS 0x20 (RFC 4343 letter case; draft-vixie-dnsext-dns0x20) as the engine uses it
// to tell apart queries of one question that a client has in flight at once. A pattern says
// which letters of the question name are in upper case (bit k: its k-th ASCII letter); a query
// goes out in a pattern with the letters flipped where the pattern and the query's own case
// (letter_case_pattern) differ: `flips` = pattern ^ own case. A server echoes the question as
// it was asked, case and all, so an answer that carries another query's id carries that
// query's letter case too, and fails the exact comparison with the pattern sent. Letters past
// the 16th are left alone: 2^16 patterns are more than a client's 16-bit ids tell apart.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include <dnstransport/message.hpp>

namespace dnstransport::detail {

// The number of letter-case patterns of a query's question name: 2^(its ASCII letters, at
// most 16); 1 for a query with no question to vary.
inline std::uint32_t letter_case_patterns(std::span<const std::uint8_t> query) noexcept {
  if (query.size() < dns_header_size || ((query[4] << 8) | query[5]) == 0) return 1;
  unsigned letters = 0;
  for (std::size_t pos = dns_header_size; pos < query.size();) {
    const std::uint8_t length = query[pos];
    // A compressed or cut name (the engine never sends one): only the letters before it.
    if (length == 0 || length >= 64 || query.size() - pos - 1 < length) break;
    for (std::size_t i = pos + 1; i <= pos + length; ++i) {
      const std::uint8_t lower = query[i] | 0x20;
      if (lower >= 'a' && lower <= 'z') ++letters;
    }
    pos += 1 + std::size_t{length};
  }
  return std::uint32_t{1} << std::min(letters, 16u);
}

// Walks the question name of `query` from the header's end and calls `letter(offset, flip)` for
// each of its first 16 ASCII letters: `flip` says whether `flips` changes its case.
template <typename Letter>
void for_each_varied_letter(std::span<const std::uint8_t> query, std::uint32_t flips,
                            Letter&& letter) noexcept {
  unsigned k = 0;
  for (std::size_t pos = dns_header_size; pos < query.size() && k < 16;) {
    const std::uint8_t length = query[pos];
    if (length == 0 || length >= 64 || query.size() - pos - 1 < length) return;
    for (std::size_t i = pos + 1; i <= pos + length && k < 16; ++i) {
      const std::uint8_t lower = query[i] | 0x20;
      if (lower < 'a' || lower > 'z') continue;
      letter(i, (flips >> k & 1u) != 0);
      ++k;
    }
    pos += 1 + std::size_t{length};
  }
}

// The letter case `query` was written in: bit k set when the k-th of its first 16 letters is
// in upper case.
inline std::uint16_t letter_case_pattern(std::span<const std::uint8_t> query) noexcept {
  std::uint16_t pattern = 0;
  unsigned k = 0;
  for_each_varied_letter(query, 0xffff, [&](std::size_t at, bool) {
    if ((query[at] & 0x20) == 0) pattern = static_cast<std::uint16_t>(pattern | 1u << k);
    ++k;
  });
  return pattern;
}

// Writes `query` with the letters of `flips` in the other case into `out` (at least
// query.size() octets) and returns it.
inline std::span<const std::uint8_t> vary_letter_case(std::span<const std::uint8_t> query,
                                                      std::uint32_t flips,
                                                      std::span<std::uint8_t> out) noexcept {
  std::copy(query.begin(), query.end(), out.begin());
  for_each_varied_letter(query, flips, [&](std::size_t at, bool flip) {
    if (flip) out[at] ^= 0x20;
  });
  return out.first(query.size());
}

// Whether `answer`'s question name is `query`'s with the letters of `flips` in the other case,
// octet for octet (labels, lengths and letter case). The caller has checked that the answer's
// question is the query's, letter case aside (check_response); a name written with a compression
// pointer does not echo.
inline bool echoes_letter_case(std::span<const std::uint8_t> answer,
                               std::span<const std::uint8_t> query, std::uint32_t flips) noexcept {
  const std::optional<std::size_t> name_end = skip_name(query, dns_header_size);
  if (!name_end || answer.size() < *name_end) return false;
  const auto octets_equal = [&](std::size_t from, std::size_t to) {
    return std::equal(query.begin() + static_cast<std::ptrdiff_t>(from),
                      query.begin() + static_cast<std::ptrdiff_t>(to),
                      answer.begin() + static_cast<std::ptrdiff_t>(from));
  };
  std::size_t at = dns_header_size;
  bool same = true;
  for_each_varied_letter(query, flips, [&](std::size_t letter, bool flip) {
    const std::uint8_t sent = flip ? query[letter] ^ 0x20 : query[letter];
    same = same && octets_equal(at, letter) && answer[letter] == sent;
    at = letter + 1;
  });
  return same && octets_equal(at, *name_end);
}

}  // namespace dnstransport::detail
