#pragma once
/// \file
/// Test support: packet captures written byte by byte (classic pcap with microsecond or
/// nanosecond timestamps, and pcapng), and the frames to put in them: IPv4/IPv6 with UDP or
/// TCP, under Ethernet (with VLAN tags), Linux cooked (v1, v2) or nothing (raw IP).

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace dnstransport::test_pcap {

using bytes = std::vector<std::uint8_t>;

/// An IPv4 or IPv6 address, from its text ("192.0.2.1", "2001:db8::1").
struct address {
  bool ipv6 = false;
  std::array<std::uint8_t, 16> octets{};
};
address ip(std::string_view text);

/// A DNS query for `name` and `type` with `id` (RD set, no EDNS).
bytes dns_query(std::string_view name, std::uint16_t type, std::uint16_t id);
/// `message` with the QR bit set (an answer without records) or with another opcode.
bytes as_response(bytes message);
bytes with_opcode(bytes message, unsigned opcode);
/// Messages each after its 2-octet length, as on a TCP connection.
bytes framed(const std::vector<bytes>& messages);

/// An IP packet carrying `payload` in UDP (or TCP, with a 20-octet header and the flags
/// given: 0x18 PSH+ACK, 0x02 SYN).
bytes udp(const address& from, const address& to, std::uint16_t from_port, std::uint16_t to_port,
          std::span<const std::uint8_t> payload);
bytes tcp(const address& from, const address& to, std::uint16_t from_port, std::uint16_t to_port,
          std::uint32_t sequence, std::span<const std::uint8_t> payload, std::uint8_t flags = 0x18);
/// Marks an IPv4 packet as a fragment at `offset` 8-octet units (more fragments follow).
bytes ipv4_fragment(bytes packet, std::uint16_t offset);

/// Link layers: Ethernet (EtherType from the IP version) under the VLAN tags given
/// (802.1Q, or 802.1ad for all but the last), Linux cooked v1 and v2.
bytes ethernet(std::span<const std::uint8_t> ip_packet, std::vector<std::uint16_t> vlans = {});
bytes ethernet_of_type(std::uint16_t ethertype, std::span<const std::uint8_t> payload);
bytes linux_sll(std::span<const std::uint8_t> ip_packet);
bytes linux_sll2(std::span<const std::uint8_t> ip_packet);

/// pcap link types (LINKTYPE_*).
inline constexpr std::uint32_t link_ethernet = 1;
inline constexpr std::uint32_t link_raw = 101;
inline constexpr std::uint32_t link_linux_sll = 113;
inline constexpr std::uint32_t link_linux_sll2 = 276;

/// A capture file being written.
class capture {
 public:
  enum class format { pcap_microseconds, pcap_nanoseconds, pcapng };
  explicit capture(std::uint32_t link_type, format f = format::pcap_microseconds);

  /// One record at `time_ns` since the epoch, of which `captured` octets are kept (all by
  /// default: a smaller number is a packet cut by the snap length).
  void add(std::uint64_t time_ns, std::span<const std::uint8_t> frame,
           std::size_t captured = SIZE_MAX);
  const bytes& data() const noexcept { return data_; }

 private:
  format format_;
  bytes data_;
};

}  // namespace dnstransport::test_pcap
