#pragma once
/// \file
/// DNS queries taken from a packet capture (pcap or pcapng, read with libpcap): the queries
/// themselves, when and from which address each was sent, and what else the capture held.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <dnstransport/query_source.hpp>

namespace dnstransport {

/// Which packets of a capture are DNS.
struct pcap_options {
  /// UDP and TCP ports that carry DNS (`--pcap-port`): a packet is DNS when its source or
  /// destination port is one of them.
  std::vector<std::uint16_t> ports{53};
};

/// What a capture held. Every record read is counted once in not_dns, fragments,
/// tcp_without_data or malformed, or else carries DNS messages (one over UDP, any number in
/// a TCP segment), each counted once in queries, responses, other_dns, malformed or, when
/// it never ends, tcp_incomplete.
struct pcap_counts {
  std::uint64_t packets = 0;  ///< records in the capture
  std::uint64_t queries = 0;  ///< standard queries kept (QR=0, opcode QUERY, one question)
  /// DNS messages with QR set (answers), skipped.
  std::uint64_t responses = 0;
  /// DNS messages that are not a standard query (opcode NOTIFY, UPDATE, ...), skipped.
  std::uint64_t other_dns = 0;
  /// Packets carrying no DNS: other link, network or transport protocols, other ports.
  std::uint64_t not_dns = 0;
  /// TCP segments to or from a DNS port without data (handshakes, acknowledgements, FIN).
  std::uint64_t tcp_without_data = 0;
  /// IPv4 and IPv6 fragments; they are not reassembled.
  std::uint64_t fragments = 0;
  /// Packets cut short by the capture's snap length or their own headers, bad header
  /// lengths, and DNS messages that do not parse (under 12 octets, not one question, a bad
  /// name, records that run past the end).
  std::uint64_t malformed = 0;
  /// TCP: the end of a message never came (the capture ended, or the next segment of the
  /// connection was missing or out of order); DNS messages split over segments are
  /// reassembled only when the segments come in order.
  std::uint64_t tcp_incomplete = 0;
};

/// The DNS queries of a capture, in capture order.
struct pcap_capture {
  /// The queries, ids set to 0; origin is the file name.
  query_set queries;
  /// Per query: its capture time in nanoseconds since the Unix epoch (for TCP, the time of
  /// the segment that began the message).
  std::vector<std::uint64_t> times_ns;
  /// Per query: the index in `sources` of the address that sent it.
  std::vector<std::uint32_t> clients;
  /// The distinct source addresses (IPv4 or IPv6, printed as "192.0.2.1", "2001:db8::1"),
  /// in the order of their first query; each is one client when the capture is replayed.
  std::vector<std::string> sources;
  pcap_counts counts;  ///< what the capture held, packet by packet
};

/// True when `head` (the first octets of a file) starts with a pcap magic number (either
/// byte order, microsecond or nanosecond timestamps) or a pcapng Section Header Block.
bool looks_like_pcap(std::span<const std::uint8_t> head) noexcept;

/// Reads the DNS queries of a pcap or pcapng capture held in memory; link types Ethernet
/// (802.1Q/802.1ad VLAN tags skipped), Linux cooked (v1 and v2), raw IP, IPv4, IPv6 and
/// BSD loopback. `source_name` names the capture in errors and in queries.origin(). Packets
/// are never a reason to throw: each is counted (pcap_counts). Throws setup_error naming
/// `source_name` when the data is not a capture libpcap reads, for an unsupported link type,
/// when the capture ends in a broken record, and when it holds no query at all.
pcap_capture parse_pcap(std::span<const std::uint8_t> data, std::string_view source_name,
                        const pcap_options& options = {});

/// parse_pcap on the contents of a file. Throws setup_error naming the file when it cannot
/// be read, and as parse_pcap.
pcap_capture read_pcap(const std::filesystem::path& path, const pcap_options& options = {});

}  // namespace dnstransport
