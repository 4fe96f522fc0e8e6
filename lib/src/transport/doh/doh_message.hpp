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

#include <nghttp2/nghttp2.h>

namespace dnstransport::detail {

inline constexpr std::string_view doh_media_type = "application/dns-message";
inline constexpr std::string_view doh_default_path = "/dns-query";

/// base64url without padding ("-" and "_" for "+" and "/").
std::string base64url_encode(std::span<const std::uint8_t> data);
/// Appends the encoding to `out` (no allocation when `out` has room).
void base64url_append(std::span<const std::uint8_t> data, std::string& out);

/// Decodes base64url with or without padding; nothing when `text` is not base64url.
std::optional<std::vector<std::uint8_t>> base64url_decode(std::string_view text);

// An HTTP/2 header field for nghttp2 (which never writes through the pointers). `flags`:
// NGHTTP2_NV_FLAG_NONE lets nghttp2 copy name and value; NGHTTP2_NV_FLAG_NO_COPY_* when they
// outlive the request.
inline nghttp2_nv header_field(std::string_view name, std::string_view value,
                               std::uint8_t flags) noexcept {
  return {reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data())),
          reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data())), name.size(),
          value.size(), flags};
}

// Largest DNS message a request may carry (RFC 8484 §6: the DNS message size limit).
inline constexpr std::size_t doh_max_message = 65535;

// The parts of a request target ("/dns-query?dns=AAAB"): `path` before '?', `query` after.
struct doh_target {
  std::string_view path;
  std::string_view query;
};
doh_target split_doh_target(std::string_view target) noexcept;

// The value of the `dns` parameter in a query string ("ct&dns=AAAB" -> "AAAB"); nothing
// when there is none.
std::optional<std::string_view> doh_dns_parameter(std::string_view query) noexcept;

// Whether a Content-Type value names application/dns-message (case-insensitive, parameters
// after ';' ignored).
bool is_doh_media_type(std::string_view content_type) noexcept;

}  // namespace dnstransport::detail
