#pragma once
// Internal: the frames of DNS over UDP and TCP sent and received from an AF_XDP socket,
// which has no kernel to add or strip the Ethernet, IP and UDP or TCP headers: a query's
// frame (a TCP segment's) written whole (headers with their lengths and checksums, then the
// payload), and a received frame read back to what it carries when it is a UDP datagram or a
// TCP segment from the server (RFC 768, RFC 791, RFC 8200, RFC 9293).

#include <sys/uio.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include <boost/asio/ip/address.hpp>

namespace dnstransport::detail {

// Where a client's datagrams go from and to: both addresses of one family.
struct frame_addresses {
  std::array<std::uint8_t, 6> source_mac{};
  std::array<std::uint8_t, 6> destination_mac{};  // the server's, or the gateway's
  boost::asio::ip::address source;
  boost::asio::ip::address destination;
  std::uint16_t source_port = 0;
  std::uint16_t destination_port = 0;
};

// Ethernet, IP and UDP headers: 42 octets over IPv4, 62 over IPv6.
std::size_t frame_header_size(const frame_addresses& to) noexcept;

// A TCP segment's header as the client writes and reads it: no option but the maximum
// segment size (RFC 9293, section 3.7.1), which a SYN carries.
namespace tcp_flag {
constexpr std::uint8_t fin = 0x01;
constexpr std::uint8_t syn = 0x02;
constexpr std::uint8_t rst = 0x04;
constexpr std::uint8_t psh = 0x08;
constexpr std::uint8_t ack = 0x10;
}  // namespace tcp_flag
struct tcp_header {
  std::uint32_t sequence = 0;
  std::uint32_t acknowledgment = 0;
  std::uint8_t flags = 0;  // tcp_flag's
  std::uint16_t window = 0;
  std::uint16_t mss = 0;  // the MSS option; 0: none
  bool operator==(const tcp_header&) const = default;
};

// Writes the frame of one datagram into `frame`: the headers for `to`, then `payload`'s
// pieces in order. Returns its length, or 0 when `frame` is too small or the datagram longer
// than a UDP length holds.
std::size_t write_frame(const frame_addresses& to, std::span<const iovec> payload,
                        std::span<std::uint8_t> frame) noexcept;

// Writes the frame of one TCP segment (`tcp`'s header, then `payload`'s pieces) as
// write_frame does a datagram's. Returns its length, or 0 when it does not fit.
std::size_t write_tcp_frame(const frame_addresses& to, const tcp_header& tcp,
                            std::span<const iovec> payload, std::span<std::uint8_t> frame) noexcept;

// A received frame that is a whole, unfragmented UDP datagram or TCP segment from
// `from.destination` and its port (to any address and port: the caller checks them): its
// destination address (4 or 16 octets, as in the frame), its destination port and its
// payload; a TCP segment's header in `tcp`.
struct received_datagram {
  std::span<const std::uint8_t> destination;
  std::uint16_t destination_port = 0;
  std::span<const std::uint8_t> payload;
  std::optional<tcp_header> tcp;  // none: a UDP datagram
};
std::optional<received_datagram> read_frame(std::span<const std::uint8_t> frame,
                                            const frame_addresses& from) noexcept;

// The Internet checksum (RFC 1071) of `data` added to `sum` (a running 32-bit sum), folded:
// a header whose checksum field is right sums to 0xffff.
std::uint16_t internet_checksum(std::span<const std::uint8_t> data, std::uint32_t sum = 0) noexcept;

}  // namespace dnstransport::detail
