#pragma once
/// \file
/// The transports a load can use, and what each one is: the flags and figures that apply
/// to it follow from these traits, not from comparing transport names.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace dnstransport {

/// How queries travel: plain UDP, DNS over TCP (RFC 7766), DNS over TLS (RFC 7858), DNS
/// over HTTPS (RFC 8484, HTTP/2 over TLS) or DNS over QUIC (RFC 9250); the kinds after doq
/// are the program's own transports, in the order register_transport (user_transport.hpp)
/// registered them.
enum class transport_kind : std::uint8_t { udp, tcp, tls, doh, doq };

/// The transports built in: udp, tcp, tls, doh and doq.
inline constexpr std::size_t builtin_transport_count = 5;

/// The most transports a program can have, built in and its own: the size of a
/// per_transport.
inline constexpr std::size_t max_transports = 16;

/// What a transport is.
struct transport_traits {
  /// The transport these traits describe.
  transport_kind kind = transport_kind::udp;
  std::string_view name;        ///< "udp", "tcp", "tls", "doh", "doq"
  std::string_view long_name;   ///< "UDP", "DNS over TCP", ..., "DNS over QUIC"
  std::string_view short_name;  ///< as operators write it: "UDP", "TCP", "DoT", "DoH", "DoQ"
  /// Its registered port: 53 (UDP, TCP), 853 (DoT, DoQ) or 443 (DoH).
  std::uint16_t default_port = 53;
  bool has_connections = false;  ///< queries per connection, connection and handshake figures
  bool has_tls = false;          ///< TLS backend, versions, certificates, resumption, padding
  /// Its connections are TCP connections: connect latency, edns-tcp-keepalive (RFC 7828; RFC
  /// 9250 forbids it over QUIC), the server's established TCP connections on its port.
  bool over_tcp = false;
  /// Its connections are QUIC connections (RFC 9000): QUIC packet and path figures.
  bool over_quic = false;
  /// Each query has a stream of its own that its answer comes back on (DoH: an HTTP/2
  /// stream, DoQ: a QUIC stream), so answers are told apart without their DNS id or question:
  /// any number of queries of one question may be in flight.
  bool answers_on_own_stream = false;
  /// TLS 1.3 only (QUIC carries no other version).
  bool tls13_only = false;
  /// Runs on GnuTLS whatever the TLS backend asked for is not (DoQ: ngtcp2's crypto helper;
  /// Debian's OpenSSL 3.0 has no QUIC API); asking for OpenSSL is an error.
  bool gnutls_only = false;
  bool compiled = true;  ///< false: this build lacks what it needs (DoQ without GnuTLS/ngtcp2)
  /// Its clients can send from AF_XDP sockets (generator_settings::xdp_interface).
  bool xdp = false;
  /// Its servers are named by a URL of this scheme (DoH: "https", RFC 8484's URI template);
  /// empty: by address and port alone.
  std::string_view url_scheme{};
};

/// The traits of a transport.
const transport_traits& traits_of(transport_kind transport) noexcept;

/// Every transport, in a stable order (udp, tcp, tls, doh, doq, then the program's own as
/// registered).
std::span<const transport_traits> all_transports() noexcept;

/// "udp", "tcp", "tls", "doh" or "doq".
std::string_view transport_name(transport_kind transport) noexcept;

/// Transport from its name ("dot" is accepted for tls, "https" for doh); nothing for an
/// unknown name.
std::optional<transport_kind> parse_transport(std::string_view name) noexcept;

/// The compiled transports that have `trait`, by name: "tcp, tls, doh" for
/// &transport_traits::over_tcp. For messages that say where a setting applies.
std::string transport_names_where(bool transport_traits::*trait);

/// One value per transport, indexed by the transport: a responder's listeners and ports, a
/// sweep's ports, per-transport counts. Iterating visits them in all_transports()'s order,
/// then the values of the kinds not registered (left as they are, default: T{}).
template <typename T>
struct per_transport {
  /// The values, in transport_kind's order (which is all_transports()'s).
  std::array<T, max_transports> values{};

  /// The value of `transport`.
  T& operator[](transport_kind transport) noexcept {
    return values[static_cast<std::size_t>(transport)];
  }
  /// The value of `transport`.
  const T& operator[](transport_kind transport) const noexcept {
    return values[static_cast<std::size_t>(transport)];
  }
  /// The first value (udp's).
  auto begin() noexcept { return values.begin(); }
  /// Past the last value.
  auto end() noexcept { return values.end(); }
  /// The first value (udp's).
  auto begin() const noexcept { return values.begin(); }
  /// Past the last value.
  auto end() const noexcept { return values.end(); }

  /// Equal when every transport's value is.
  friend bool operator==(const per_transport&, const per_transport&) = default;
};

/// Each transport's registered default port: 53 for UDP and TCP, 853 for DoT and DoQ (UDP),
/// 443 for DoH.
per_transport<std::uint16_t> default_ports() noexcept;

}  // namespace dnstransport
