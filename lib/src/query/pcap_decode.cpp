#include "query/pcap_decode.hpp"

#include <pcap/dlt.h>

#include <algorithm>
#include <vector>

#include <dnstransport/message.hpp>

namespace dnstransport::detail {

namespace {

constexpr std::uint16_t ethertype_ipv4 = 0x0800;
constexpr std::uint16_t ethertype_ipv6 = 0x86dd;
constexpr std::uint16_t ethertype_vlan = 0x8100;      // 802.1Q
constexpr std::uint16_t ethertype_qinq = 0x88a8;      // 802.1ad
constexpr std::uint16_t ethertype_qinq_old = 0x9100;  // pre-802.1ad double tagging
constexpr std::uint8_t ip_tcp = 6;
constexpr std::uint8_t ip_udp = 17;

using kind = decoded_packet::kind;

std::uint16_t be16(std::span<const std::uint8_t> b, std::size_t at) noexcept {
  return static_cast<std::uint16_t>((b[at] << 8) | b[at + 1]);
}

std::uint32_t be32(std::span<const std::uint8_t> b, std::size_t at) noexcept {
  return (std::uint32_t{b[at]} << 24) | (std::uint32_t{b[at + 1]} << 16) |
         (std::uint32_t{b[at + 2]} << 8) | b[at + 3];
}

decoded_packet verdict(kind what) noexcept {
  decoded_packet p;
  p.what = what;
  return p;
}

// The UDP or TCP header at the start of `segment`, the IP payload of `p`.
decoded_packet decode_transport(decoded_packet p, std::uint8_t protocol,
                                std::span<const std::uint8_t> segment) noexcept {
  if (protocol == ip_udp) {
    if (segment.size() < 8) return verdict(kind::malformed);
    const std::size_t length = be16(segment, 4);
    if (length < 8 || length > segment.size()) return verdict(kind::malformed);
    p.what = kind::udp;
    p.source_port = be16(segment, 0);
    p.destination_port = be16(segment, 2);
    p.payload = segment.subspan(8, length - 8);
    return p;
  }
  if (protocol == ip_tcp) {
    if (segment.size() < 20) return verdict(kind::malformed);
    const std::size_t header = static_cast<std::size_t>(segment[12] >> 4) * 4;
    if (header < 20 || header > segment.size()) return verdict(kind::malformed);
    p.what = kind::tcp;
    p.source_port = be16(segment, 0);
    p.destination_port = be16(segment, 2);
    p.tcp_sequence = be32(segment, 4);
    p.payload = segment.subspan(header);
    return p;
  }
  return verdict(kind::not_ip_transport);
}

decoded_packet decode_ipv4(std::span<const std::uint8_t> packet) noexcept {
  if (packet.size() < 20 || packet[0] >> 4 != 4) return verdict(kind::malformed);
  const std::size_t header = std::size_t{packet[0] & 0x0fu} * 4;
  const std::size_t total = be16(packet, 2);
  // Less captured than the header says: cut by the snap length. More: link-layer padding.
  if (header < 20 || total < header || total > packet.size()) return verdict(kind::malformed);
  const std::uint16_t fragment = be16(packet, 6);
  if ((fragment & 0x3fff) != 0) return verdict(kind::fragment);  // MF set, or an offset
  decoded_packet p;
  std::copy_n(packet.begin() + 12, 4, p.source.begin());
  std::copy_n(packet.begin() + 16, 4, p.destination.begin());
  return decode_transport(p, packet[9], packet.subspan(header, total - header));
}

decoded_packet decode_ipv6(std::span<const std::uint8_t> packet) noexcept {
  if (packet.size() < 40 || packet[0] >> 4 != 6) return verdict(kind::malformed);
  const std::size_t length = be16(packet, 4);
  // A jumbogram (length 0, RFC 2675) carries no DNS worth replaying.
  if (length == 0 || 40 + length > packet.size()) return verdict(kind::malformed);
  decoded_packet p;
  p.ipv6 = true;
  std::copy_n(packet.begin() + 8, 16, p.source.begin());
  std::copy_n(packet.begin() + 24, 16, p.destination.begin());
  std::span<const std::uint8_t> rest = packet.subspan(40, length);
  std::uint8_t next = packet[6];
  for (;;) {
    switch (next) {
      case 0:     // hop-by-hop options
      case 43:    // routing
      case 60: {  // destination options
        if (rest.size() < 8) return verdict(kind::malformed);
        const std::size_t size = (std::size_t{rest[1]} + 1) * 8;
        if (size > rest.size()) return verdict(kind::malformed);
        next = rest[0];
        rest = rest.subspan(size);
        continue;
      }
      case 44:  // fragment
        return verdict(kind::fragment);
      default:
        return decode_transport(p, next, rest);
    }
  }
}

decoded_packet decode_ip_by_version(std::span<const std::uint8_t> packet) noexcept {
  if (packet.empty()) return verdict(kind::malformed);
  switch (packet[0] >> 4) {
    case 4:
      return decode_ipv4(packet);
    case 6:
      return decode_ipv6(packet);
    default:
      return verdict(kind::not_ip_transport);
  }
}

// The network layer after an EtherType, VLAN tags skipped.
decoded_packet decode_ethertype(std::uint16_t type, std::span<const std::uint8_t> rest) noexcept {
  while (type == ethertype_vlan || type == ethertype_qinq || type == ethertype_qinq_old) {
    if (rest.size() < 4) return verdict(kind::malformed);
    type = be16(rest, 2);
    rest = rest.subspan(4);
  }
  if (type == ethertype_ipv4) return decode_ipv4(rest);
  if (type == ethertype_ipv6) return decode_ipv6(rest);
  return verdict(kind::not_ip_transport);
}

// BSD loopback: the address family in the host's (null) or network (loop) byte order.
decoded_packet decode_bsd(std::span<const std::uint8_t> frame, bool network_order) noexcept {
  if (frame.size() < 4) return verdict(kind::malformed);
  const std::uint32_t family =
      network_order ? be32(frame, 0)
                    : std::uint32_t{frame[0]} | (std::uint32_t{frame[1]} << 8) |
                          (std::uint32_t{frame[2]} << 16) | (std::uint32_t{frame[3]} << 24);
  const std::uint32_t swapped = ((family & 0xff) << 24) | ((family & 0xff00) << 8) |
                                ((family >> 8) & 0xff00) | (family >> 24);
  // A capture from a host of the other byte order: families are small numbers.
  const std::uint32_t f = family > 0xffff ? swapped : family;
  const auto rest = frame.subspan(4);
  if (f == 2) return decode_ipv4(rest);
  // AF_INET6 is 10 on Linux, 24 on NetBSD/OpenBSD, 28 on FreeBSD, 30 on macOS.
  if (f == 10 || f == 24 || f == 28 || f == 30) return decode_ipv6(rest);
  return verdict(kind::not_ip_transport);
}

}  // namespace

std::optional<link_kind> link_kind_of(int dlt) noexcept {
  switch (dlt) {
    case DLT_EN10MB:
      return link_kind::ethernet;
    case DLT_LINUX_SLL:
      return link_kind::linux_sll;
    case DLT_LINUX_SLL2:
      return link_kind::linux_sll2;
    case DLT_RAW:
    case 101:  // LINKTYPE_RAW, when libpcap hands it through unmapped
      return link_kind::raw;
    case DLT_IPV4:
      return link_kind::ipv4;
    case DLT_IPV6:
      return link_kind::ipv6;
    case DLT_NULL:
      return link_kind::bsd_null;
    case DLT_LOOP:
      return link_kind::bsd_loop;
    default:
      return std::nullopt;
  }
}

decoded_packet decode_frame(link_kind link, std::span<const std::uint8_t> frame) noexcept {
  switch (link) {
    case link_kind::ethernet:
      if (frame.size() < 14) return verdict(kind::malformed);
      return decode_ethertype(be16(frame, 12), frame.subspan(14));
    case link_kind::linux_sll:
      if (frame.size() < 16) return verdict(kind::malformed);
      return decode_ethertype(be16(frame, 14), frame.subspan(16));
    case link_kind::linux_sll2:
      if (frame.size() < 20) return verdict(kind::malformed);
      return decode_ethertype(be16(frame, 0), frame.subspan(20));
    case link_kind::raw:
      return decode_ip_by_version(frame);
    case link_kind::ipv4:
      return decode_ipv4(frame);
    case link_kind::ipv6:
      return decode_ipv6(frame);
    case link_kind::bsd_null:
      return decode_bsd(frame, false);
    case link_kind::bsd_loop:
      return decode_bsd(frame, true);
  }
  return verdict(kind::not_ip_transport);
}

message_kind classify_message(std::span<const std::uint8_t> message) noexcept {
  if (message.size() < dns_header_size) return message_kind::malformed;
  if ((message[2] & 0x80) != 0) return message_kind::response;
  if (((message[2] >> 3) & 0x0f) != 0) return message_kind::other_dns;
  if (be16(message, 4) != 1) return message_kind::malformed;
  // The whole message must walk (every section inside it, names without loops), as any
  // answer to it will be checked: its own echo, QR set, is then a valid answer.
  std::vector<std::uint8_t> echo(message.begin(), message.end());
  echo[2] |= 0x80;
  if (check_response(echo, message, read_id(message.data())).verdict != response_verdict::ok) {
    return message_kind::malformed;
  }
  return message_kind::query;
}

}  // namespace dnstransport::detail
