#include "transport/doq/doq_codes.hpp"

#include <array>
#include <string_view>

#include <fmt/format.h>

namespace dnstransport::detail {

std::string doq_error_name(std::uint64_t code) {
  constexpr std::array<std::string_view, 6> names{"DOQ_NO_ERROR",       "DOQ_INTERNAL_ERROR",
                                                  "DOQ_PROTOCOL_ERROR", "DOQ_REQUEST_CANCELLED",
                                                  "DOQ_EXCESSIVE_LOAD", "DOQ_UNSPECIFIED_ERROR"};
  if (code < names.size()) return std::string(names[code]);
  if (code == 0xd098ea5e) return "DOQ_ERROR_RESERVED";
  return fmt::format("DOQ_{:#x}", code);
}

std::string quic_transport_error_name(std::uint64_t code) {
  constexpr std::array<std::string_view, 17> names{
      "NO_ERROR",
      "INTERNAL_ERROR",
      "CONNECTION_REFUSED",
      "FLOW_CONTROL_ERROR",
      "STREAM_LIMIT_ERROR",
      "STREAM_STATE_ERROR",
      "FINAL_SIZE_ERROR",
      "FRAME_ENCODING_ERROR",
      "TRANSPORT_PARAMETER_ERROR",
      "CONNECTION_ID_LIMIT_ERROR",
      "PROTOCOL_VIOLATION",
      "INVALID_TOKEN",
      "APPLICATION_ERROR",
      "CRYPTO_BUFFER_EXCEEDED",
      "KEY_UPDATE_ERROR",
      "AEAD_LIMIT_REACHED",
      "NO_VIABLE_PATH",
  };
  if (code < names.size()) return std::string(names[code]);
  if (code >= 0x100 && code <= 0x1ff) return fmt::format("CRYPTO_ERROR_{}", code - 0x100);
  return fmt::format("{:#x}", code);
}

std::string tls_alert_cause(std::uint8_t alert) {
  switch (alert) {
    case 42:  // bad_certificate
    case 43:  // unsupported_certificate
    case 44:  // certificate_revoked
    case 45:  // certificate_expired
    case 46:  // certificate_unknown
    case 48:  // unknown_ca
      return "tls_certificate";
    case 70:  // protocol_version
      return "tls_protocol_version";
    case 120:  // no_application_protocol
      return "tls_alpn";
    default:
      return fmt::format("tls_alert_{}", alert);
  }
}

}  // namespace dnstransport::detail
