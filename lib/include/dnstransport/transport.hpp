#pragma once
/// \file
/// The transports a load can use, and what each one is: the flags and figures that apply
/// to it follow from these traits, not from comparing transport names.

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace dnstransport {

/// How queries travel: plain UDP, DNS over TCP (RFC 7766), DNS over TLS (RFC 7858), DNS
/// over HTTPS (RFC 8484, HTTP/2 over TLS) or DNS over QUIC (RFC 9250).
enum class transport_kind { udp, tcp, tls, doh, doq };

/// What a transport is.
struct transport_traits {
  transport_kind kind = transport_kind::udp;
  std::string_view name;  ///< "udp", "tcp", "tls", "doh", "doq"
  std::uint16_t default_port = 53;
  bool has_connections = false;  ///< queries per connection, connection and handshake figures
  bool has_tls = false;          ///< TLS backend, versions, certificates, resumption
  /// Runs on GnuTLS whatever the TLS backend asked for is not (DoQ: ngtcp2's crypto helper;
  /// Debian's OpenSSL 3.0 has no QUIC API); asking for OpenSSL is an error.
  bool gnutls_only = false;
  bool compiled = true;  ///< false: this build lacks what it needs (DoQ without GnuTLS/ngtcp2)
};

/// The traits of a transport.
const transport_traits& traits_of(transport_kind transport) noexcept;

/// Every transport, in a stable order (udp, tcp, tls, doh, doq).
std::span<const transport_traits> all_transports() noexcept;

/// "udp", "tcp", "tls", "doh" or "doq".
std::string_view transport_name(transport_kind transport) noexcept;

/// Transport from its name ("dot" is accepted for tls, "https" for doh); nothing for an
/// unknown name.
std::optional<transport_kind> parse_transport(std::string_view name) noexcept;

}  // namespace dnstransport
