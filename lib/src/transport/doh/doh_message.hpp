#pragma once
// Internal: what DNS over HTTPS (RFC 8484) adds around a DNS message, for the DoH client and
// the responder alike: the media type, the default path, and the base64url form of a query
// in a GET request's `dns` parameter (RFC 4648 §5, without padding).

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dnstransport::detail {

inline constexpr std::string_view doh_media_type = "application/dns-message";
inline constexpr std::string_view doh_default_path = "/dns-query";

/// base64url without padding ("-" and "_" for "+" and "/").
std::string base64url_encode(std::span<const std::uint8_t> data);
/// Appends the encoding to `out` (no allocation when `out` has room).
void base64url_append(std::span<const std::uint8_t> data, std::string& out);

/// Decodes base64url with or without padding; nothing when `text` is not base64url.
std::optional<std::vector<std::uint8_t>> base64url_decode(std::string_view text);

}  // namespace dnstransport::detail
