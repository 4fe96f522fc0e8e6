// The frames of DNS over UDP on an AF_XDP socket (xdp_frames.hpp).
#include "transport/xdp/xdp_frames.hpp"

#include <algorithm>
#include <cstring>

namespace dnstransport::detail {

namespace {

constexpr std::size_t ethernet_size = 14;
constexpr std::size_t ipv4_size = 20;
constexpr std::size_t ipv6_size = 40;
constexpr std::size_t udp_size = 8;
constexpr std::uint16_t ethertype_ipv4 = 0x0800;
constexpr std::uint16_t ethertype_ipv6 = 0x86dd;
constexpr std::uint8_t protocol_udp = 17;

void put16(std::uint8_t* at, std::uint16_t value) noexcept {
  at[0] = static_cast<std::uint8_t>(value >> 8);
  at[1] = static_cast<std::uint8_t>(value);
}

std::uint16_t get16(const std::uint8_t* at) noexcept {
  return static_cast<std::uint16_t>(at[0] << 8 | at[1]);
}

// The 32-bit running sum of `data` as 16-bit big-endian words (an odd last octet padded).
std::uint32_t add_words(std::span<const std::uint8_t> data, std::uint32_t sum) noexcept {
  std::size_t i = 0;
  for (; i + 1 < data.size(); i += 2) sum += get16(data.data() + i);
  if (i < data.size()) sum += static_cast<std::uint32_t>(data[i]) << 8;
  return sum;
}

std::uint16_t fold(std::uint32_t sum) noexcept {
  while ((sum >> 16) != 0) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<std::uint16_t>(sum);
}

// The UDP checksum's pseudo-header sum (RFC 768; RFC 8200, section 8.1).
std::uint32_t pseudo_header_sum(const frame_addresses& to, std::size_t udp_length) noexcept {
  std::uint32_t sum = 0;
  if (to.source.is_v4()) {
    sum = add_words(to.source.to_v4().to_bytes(), sum);
    sum = add_words(to.destination.to_v4().to_bytes(), sum);
  } else {
    sum = add_words(to.source.to_v6().to_bytes(), sum);
    sum = add_words(to.destination.to_v6().to_bytes(), sum);
  }
  return sum + protocol_udp + static_cast<std::uint32_t>(udp_length);
}

}  // namespace

std::uint16_t internet_checksum(std::span<const std::uint8_t> data, std::uint32_t sum) noexcept {
  return fold(add_words(data, sum));
}

std::size_t frame_header_size(const frame_addresses& to) noexcept {
  return ethernet_size + (to.source.is_v4() ? ipv4_size : ipv6_size) + udp_size;
}

std::size_t write_frame(const frame_addresses& to, std::span<const iovec> payload,
                        std::span<std::uint8_t> frame) noexcept {
  std::size_t payload_size = 0;
  for (const iovec& piece : payload) payload_size += piece.iov_len;
  const bool v4 = to.source.is_v4();
  const std::size_t ip_size = v4 ? ipv4_size : ipv6_size;
  const std::size_t udp_length = udp_size + payload_size;
  const std::size_t total = ethernet_size + ip_size + udp_length;
  if (total > frame.size() || udp_length > 0xffff || (v4 && ip_size + udp_length > 0xffff)) {
    return 0;
  }
  std::uint8_t* const eth = frame.data();
  std::memcpy(eth, to.destination_mac.data(), 6);
  std::memcpy(eth + 6, to.source_mac.data(), 6);
  put16(eth + 12, v4 ? ethertype_ipv4 : ethertype_ipv6);

  std::uint8_t* const ip = eth + ethernet_size;
  if (v4) {
    ip[0] = 0x45;  // version 4, 5 words of header
    ip[1] = 0;     // DSCP, ECN
    put16(ip + 2, static_cast<std::uint16_t>(ip_size + udp_length));
    put16(ip + 4, 0);       // identification: never fragmented
    put16(ip + 6, 0x4000);  // don't fragment
    ip[8] = 64;             // TTL
    ip[9] = protocol_udp;
    put16(ip + 10, 0);
    const auto source = to.source.to_v4().to_bytes();
    const auto destination = to.destination.to_v4().to_bytes();
    std::memcpy(ip + 12, source.data(), 4);
    std::memcpy(ip + 16, destination.data(), 4);
    put16(ip + 10, static_cast<std::uint16_t>(~internet_checksum({ip, ipv4_size})));
  } else {
    put16(ip, 0x6000);  // version 6, traffic class and flow label 0
    put16(ip + 2, 0);
    put16(ip + 4, static_cast<std::uint16_t>(udp_length));
    ip[6] = protocol_udp;  // next header
    ip[7] = 64;            // hop limit
    const auto source = to.source.to_v6().to_bytes();
    const auto destination = to.destination.to_v6().to_bytes();
    std::memcpy(ip + 8, source.data(), 16);
    std::memcpy(ip + 24, destination.data(), 16);
  }

  std::uint8_t* const udp = ip + ip_size;
  put16(udp, to.source_port);
  put16(udp + 2, to.destination_port);
  put16(udp + 4, static_cast<std::uint16_t>(udp_length));
  put16(udp + 6, 0);
  std::uint8_t* at = udp + udp_size;
  for (const iovec& piece : payload) {
    std::memcpy(at, piece.iov_base, piece.iov_len);
    at += piece.iov_len;
  }
  std::uint16_t checksum = static_cast<std::uint16_t>(
      ~internet_checksum({udp, udp_length}, pseudo_header_sum(to, udp_length)));
  if (checksum == 0) checksum = 0xffff;  // 0 means "none" (and IPv6 requires one)
  put16(udp + 6, checksum);
  return total;
}

std::optional<received_datagram> read_frame(std::span<const std::uint8_t> frame,
                                            const frame_addresses& from) noexcept {
  if (frame.size() < ethernet_size) return std::nullopt;
  const std::uint8_t* const eth = frame.data();
  const bool v4 = from.destination.is_v4();
  if (get16(eth + 12) != (v4 ? ethertype_ipv4 : ethertype_ipv6)) return std::nullopt;
  const std::uint8_t* const ip = eth + ethernet_size;
  const std::size_t ip_room = frame.size() - ethernet_size;
  std::size_t header = 0;
  std::size_t ip_total = 0;
  std::span<const std::uint8_t> destination;
  if (v4) {
    if (ip_room < ipv4_size || (ip[0] >> 4) != 4) return std::nullopt;
    header = static_cast<std::size_t>(ip[0] & 0x0f) * 4;
    ip_total = get16(ip + 2);
    // Fragments (more to come, or an offset) are not whole datagrams.
    if (header < ipv4_size || ip[9] != protocol_udp || (get16(ip + 6) & 0x3fff) != 0) {
      return std::nullopt;
    }
    const auto source = from.destination.to_v4().to_bytes();
    if (std::memcmp(ip + 12, source.data(), 4) != 0) return std::nullopt;
    destination = {ip + 16, 4};
  } else {
    if (ip_room < ipv6_size || (ip[0] >> 4) != 6 || ip[6] != protocol_udp) return std::nullopt;
    header = ipv6_size;
    ip_total = ipv6_size + get16(ip + 4);
    const auto source = from.destination.to_v6().to_bytes();
    if (std::memcmp(ip + 8, source.data(), 16) != 0) return std::nullopt;
    destination = {ip + 24, 16};
  }
  if (ip_total > ip_room || ip_total < header + udp_size) return std::nullopt;
  const std::uint8_t* const udp = ip + header;
  const std::size_t udp_length = get16(udp + 4);
  if (get16(udp) != from.destination_port || udp_length < udp_size ||
      udp_length > ip_total - header) {
    return std::nullopt;
  }
  return received_datagram{destination, get16(udp + 2), {udp + udp_size, udp_length - udp_size}};
}

}  // namespace dnstransport::detail
