#pragma once
// Internal: the ALPN name and the error codes a DNS-over-QUIC connection carries, and their names
// as runs report them: DoQ's application codes (RFC 9250, section 4.3) on streams and in
// CONNECTION_CLOSE, QUIC's transport codes (RFC 9000, section 20.1) in CONNECTION_CLOSE, and
// TLS alerts carried as CRYPTO_ERROR (0x100 + alert).

#include <cstdint>
#include <string>
#include <string_view>

namespace dnstransport::detail {

inline constexpr std::string_view doq_alpn = "doq";  // RFC 9250, section 4.1

inline constexpr std::uint64_t doq_no_error = 0x0;
inline constexpr std::uint64_t doq_internal_error = 0x1;
inline constexpr std::uint64_t doq_protocol_error = 0x2;
inline constexpr std::uint64_t doq_request_cancelled = 0x3;
inline constexpr std::uint64_t doq_excessive_load = 0x4;
inline constexpr std::uint64_t doq_unspecified_error = 0x5;

// "DOQ_PROTOCOL_ERROR"; an unassigned code by number ("DOQ_0x2a").
std::string doq_error_name(std::uint64_t code);
// "PROTOCOL_VIOLATION", "CRYPTO_ERROR_120"; an unassigned code by number ("0x2a").
std::string quic_transport_error_name(std::uint64_t code);
// What a TLS alert says about a failed handshake, as connection failures are named
// ("tls_certificate", "tls_protocol_version", "tls_alpn", "tls_alert_80").
std::string tls_alert_cause(std::uint8_t alert);

}  // namespace dnstransport::detail
