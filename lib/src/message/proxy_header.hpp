#pragma once
// Internal: the PROXY protocol's header (HAProxy's specification, "The PROXY protocol",
// versions 1 and 2), which a proxy puts before a client's data to tell the server the
// client's address: version 2, binary, before each UDP datagram or at the start of a TCP
// connection (before TLS); version 1, one line of text, TCP only. Written by the clients of
// a load with load_spec::connections.proxy, read by the test servers.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/ip/address.hpp>

namespace dnstransport::detail {

/// What a header says: the client's address and port as the proxy saw them, and the
/// server's (the destination the client connected to).
struct proxied_connection {
  boost::asio::ip::address source;
  std::uint16_t source_port = 0;
  boost::asio::ip::address destination;
  std::uint16_t destination_port = 0;
  bool stream = true;  ///< TCP (STREAM), or UDP (DGRAM)
};

/// A version 2 TLV: type and value (at most 65535 octets in all).
using proxy_tlv = std::pair<std::uint8_t, std::vector<std::uint8_t>>;

/// The 12 octets every version 2 header starts with.
inline constexpr std::uint8_t proxy_v2_signature[12] = {0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D,
                                                        0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A};

/// A version 2 header (command PROXY). When the two addresses are of different families,
/// the IPv4 one is given as IPv4-mapped IPv6 (::ffff:a.b.c.d) and the header is AF_INET6.
std::vector<std::uint8_t> proxy_v2_header(const proxied_connection& c,
                                          const std::vector<proxy_tlv>& tlvs = {});

/// A version 1 header: "PROXY TCP4 SRC DST SPORT DPORT\r\n" (TCP6 for IPv6; mixed families as
/// for version 2). For TCP only: version 1 has no UDP.
std::string proxy_v1_header(const proxied_connection& c);

/// A header read from the start of `data`.
struct proxy_header_read {
  enum class outcome {
    complete,    ///< `length` octets are the header; `connection` what it says
    incomplete,  ///< a header has begun, more octets are needed
    none,        ///< `data` does not begin with a PROXY header
    invalid,     ///< it begins as one but breaks the specification (`why`)
  };
  outcome result = outcome::none;
  std::size_t length = 0;
  proxied_connection connection;
  bool local = false;  ///< version 2 command LOCAL: no address (a proxy's own health check)
  std::vector<proxy_tlv> tlvs;
  const char* why = "";
};

/// Reads a version 1 or 2 header from the start of `data`.
proxy_header_read read_proxy_header(std::span<const std::uint8_t> data);

}  // namespace dnstransport::detail
