#pragma once
// Internal: one captured frame, decoded down to its UDP or TCP payload, and one DNS message
// classified. Pure functions over the captured octets, no libpcap: never throws, never reads
// outside the spans.

#include <array>
#include <cstdint>
#include <optional>
#include <span>

namespace dnstransport::detail {

// The link layers understood, from pcap's DLT_* values.
enum class link_kind { ethernet, linux_sll, linux_sll2, raw, ipv4, ipv6, bsd_null, bsd_loop };
std::optional<link_kind> link_kind_of(int dlt) noexcept;

// What one frame carries at the transport layer.
struct decoded_packet {
  enum class kind { udp, tcp, not_ip_transport, fragment, malformed };
  kind what = kind::malformed;
  bool ipv6 = false;
  std::array<std::uint8_t, 16> source{};  // IPv4 in the first 4 octets
  std::array<std::uint8_t, 16> destination{};
  std::uint16_t source_port = 0;
  std::uint16_t destination_port = 0;
  std::uint32_t tcp_sequence = 0;  // of the first payload octet
  std::span<const std::uint8_t> payload;
};

// Decodes `frame` (the captured octets of one record). A frame shorter than its headers
// say is malformed; a frame of another protocol than IPv4/IPv6 with UDP/TCP is
// not_ip_transport.
decoded_packet decode_frame(link_kind link, std::span<const std::uint8_t> frame) noexcept;

// What a DNS message is.
enum class message_kind {
  query,      // QR=0, opcode QUERY, one question, every section inside the message
  response,   // QR=1
  other_dns,  // QR=0 with another opcode
  malformed,  // under 12 octets, not exactly one question, or sections that do not parse
};
message_kind classify_message(std::span<const std::uint8_t> message) noexcept;

}  // namespace dnstransport::detail
