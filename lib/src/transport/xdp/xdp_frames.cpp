// The frames of DNS over UDP and TCP on an AF_XDP socket (xdp_frames.hpp).
#include "transport/xdp/xdp_frames.hpp"

#include <algorithm>
#include <cstring>

namespace dnstransport::detail {

namespace {

constexpr std::size_t ethernet_size = 14;
constexpr std::size_t ipv4_size = 20;
constexpr std::size_t ipv6_size = 40;
constexpr std::size_t udp_size = 8;
constexpr std::size_t tcp_size = 20;  // without options
constexpr std::uint16_t ethertype_ipv4 = 0x0800;
constexpr std::uint16_t ethertype_ipv6 = 0x86dd;
constexpr std::uint8_t protocol_udp = 17;
constexpr std::uint8_t protocol_tcp = 6;

void put16(std::uint8_t* at, std::uint16_t value) noexcept {
  at[0] = static_cast<std::uint8_t>(value >> 8);
  at[1] = static_cast<std::uint8_t>(value);
}

std::uint16_t get16(const std::uint8_t* at) noexcept {
  return static_cast<std::uint16_t>(at[0] << 8 | at[1]);
}

void put32(std::uint8_t* at, std::uint32_t value) noexcept {
  put16(at, static_cast<std::uint16_t>(value >> 16));
  put16(at + 2, static_cast<std::uint16_t>(value));
}

std::uint32_t get32(const std::uint8_t* at) noexcept {
  return std::uint32_t{get16(at)} << 16 | get16(at + 2);
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

// The pseudo-header sum of UDP's and TCP's checksums (RFC 768; RFC 9293, section 3.1;
// RFC 8200, section 8.1).
std::uint32_t pseudo_header_sum(const frame_addresses& to, std::uint8_t protocol,
                                std::size_t length) noexcept {
  std::uint32_t sum = 0;
  if (to.source.is_v4()) {
    sum = add_words(to.source.to_v4().to_bytes(), sum);
    sum = add_words(to.destination.to_v4().to_bytes(), sum);
  } else {
    sum = add_words(to.source.to_v6().to_bytes(), sum);
    sum = add_words(to.destination.to_v6().to_bytes(), sum);
  }
  return sum + protocol + static_cast<std::uint32_t>(length);
}

// Writes the Ethernet and IP headers of a packet carrying `length` octets of `protocol` for
// `to`, and returns where those octets go; null when the frame is too small or the length
// too large for the IP header.
std::uint8_t* write_headers(const frame_addresses& to, std::uint8_t protocol, std::size_t length,
                            std::span<std::uint8_t> frame) noexcept {
  const bool v4 = to.source.is_v4();
  const std::size_t ip_size = v4 ? ipv4_size : ipv6_size;
  if (ethernet_size + ip_size + length > frame.size() || length > 0xffff ||
      (v4 && ip_size + length > 0xffff)) {
    return nullptr;
  }
  std::uint8_t* const eth = frame.data();
  std::memcpy(eth, to.destination_mac.data(), 6);
  std::memcpy(eth + 6, to.source_mac.data(), 6);
  put16(eth + 12, v4 ? ethertype_ipv4 : ethertype_ipv6);

  std::uint8_t* const ip = eth + ethernet_size;
  if (v4) {
    ip[0] = 0x45;  // version 4, 5 words of header
    ip[1] = 0;     // DSCP, ECN
    put16(ip + 2, static_cast<std::uint16_t>(ip_size + length));
    put16(ip + 4, 0);       // identification: never fragmented
    put16(ip + 6, 0x4000);  // don't fragment
    ip[8] = 64;             // TTL
    ip[9] = protocol;
    put16(ip + 10, 0);
    const auto source = to.source.to_v4().to_bytes();
    const auto destination = to.destination.to_v4().to_bytes();
    std::memcpy(ip + 12, source.data(), 4);
    std::memcpy(ip + 16, destination.data(), 4);
    put16(ip + 10, static_cast<std::uint16_t>(~internet_checksum({ip, ipv4_size})));
  } else {
    put16(ip, 0x6000);  // version 6, traffic class and flow label 0
    put16(ip + 2, 0);
    put16(ip + 4, static_cast<std::uint16_t>(length));
    ip[6] = protocol;  // next header
    ip[7] = 64;        // hop limit
    const auto source = to.source.to_v6().to_bytes();
    const auto destination = to.destination.to_v6().to_bytes();
    std::memcpy(ip + 8, source.data(), 16);
    std::memcpy(ip + 24, destination.data(), 16);
  }
  return ip + ip_size;
}

std::size_t payload_size(std::span<const iovec> payload) noexcept {
  std::size_t size = 0;
  for (const iovec& piece : payload) size += piece.iov_len;
  return size;
}

void copy_payload(std::span<const iovec> payload, std::uint8_t* at) noexcept {
  for (const iovec& piece : payload) {
    std::memcpy(at, piece.iov_base, piece.iov_len);
    at += piece.iov_len;
  }
}

// The checksum field's value for `segment` (a UDP datagram's or a TCP segment's, its own
// field 0), as sent.
std::uint16_t transport_checksum(const frame_addresses& to, std::uint8_t protocol,
                                 std::span<const std::uint8_t> segment) noexcept {
  return static_cast<std::uint16_t>(
      ~internet_checksum(segment, pseudo_header_sum(to, protocol, segment.size())));
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
  const std::size_t udp_length = udp_size + payload_size(payload);
  std::uint8_t* const udp = write_headers(to, protocol_udp, udp_length, frame);
  if (udp == nullptr) return 0;
  put16(udp, to.source_port);
  put16(udp + 2, to.destination_port);
  put16(udp + 4, static_cast<std::uint16_t>(udp_length));
  put16(udp + 6, 0);
  copy_payload(payload, udp + udp_size);
  std::uint16_t checksum = transport_checksum(to, protocol_udp, {udp, udp_length});
  if (checksum == 0) checksum = 0xffff;  // 0 means "none" (and IPv6 requires one)
  put16(udp + 6, checksum);
  return static_cast<std::size_t>(udp + udp_length - frame.data());
}

std::size_t write_tcp_frame(const frame_addresses& to, const tcp_header& tcp,
                            std::span<const iovec> payload,
                            std::span<std::uint8_t> frame) noexcept {
  const std::size_t header = tcp.mss != 0 ? tcp_size + 4 : tcp_size;
  const std::size_t length = header + payload_size(payload);
  std::uint8_t* const segment = write_headers(to, protocol_tcp, length, frame);
  if (segment == nullptr) return 0;
  put16(segment, to.source_port);
  put16(segment + 2, to.destination_port);
  put32(segment + 4, tcp.sequence);
  put32(segment + 8, tcp.acknowledgment);
  segment[12] = static_cast<std::uint8_t>(header / 4 << 4);  // data offset, in words
  segment[13] = tcp.flags;
  put16(segment + 14, tcp.window);
  put16(segment + 16, 0);  // the checksum, below
  put16(segment + 18, 0);  // urgent pointer
  if (tcp.mss != 0) {
    segment[20] = 2;  // kind: maximum segment size
    segment[21] = 4;
    put16(segment + 22, tcp.mss);
  }
  copy_payload(payload, segment + header);
  put16(segment + 16, transport_checksum(to, protocol_tcp, {segment, length}));
  return static_cast<std::size_t>(segment + length - frame.data());
}

namespace {

// The maximum segment size among a TCP header's options (0: none, or options cut short).
std::uint16_t read_mss(std::span<const std::uint8_t> options) noexcept {
  std::size_t i = 0;
  while (i < options.size()) {
    const std::uint8_t kind = options[i];
    if (kind == 0) break;  // end of options
    if (kind == 1) {       // no-operation
      ++i;
      continue;
    }
    if (i + 1 >= options.size()) break;
    const std::size_t length = options[i + 1];
    if (length < 2 || i + length > options.size()) break;
    if (kind == 2 && length == 4) return get16(options.data() + i + 2);
    i += length;
  }
  return 0;
}

}  // namespace

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
  std::uint8_t protocol = 0;
  std::span<const std::uint8_t> destination;
  if (v4) {
    if (ip_room < ipv4_size || (ip[0] >> 4) != 4) return std::nullopt;
    header = static_cast<std::size_t>(ip[0] & 0x0f) * 4;
    ip_total = get16(ip + 2);
    protocol = ip[9];
    // Fragments (more to come, or an offset) are not whole datagrams.
    if (header < ipv4_size || (get16(ip + 6) & 0x3fff) != 0) return std::nullopt;
    const auto source = from.destination.to_v4().to_bytes();
    if (std::memcmp(ip + 12, source.data(), 4) != 0) return std::nullopt;
    destination = {ip + 16, 4};
  } else {
    if (ip_room < ipv6_size || (ip[0] >> 4) != 6) return std::nullopt;
    header = ipv6_size;
    ip_total = ipv6_size + get16(ip + 4);
    protocol = ip[6];
    const auto source = from.destination.to_v6().to_bytes();
    if (std::memcmp(ip + 8, source.data(), 16) != 0) return std::nullopt;
    destination = {ip + 24, 16};
  }
  if (ip_total > ip_room || ip_total < header) return std::nullopt;
  const std::uint8_t* const at = ip + header;
  const std::size_t length = ip_total - header;
  if (protocol == protocol_udp) {
    if (length < udp_size) return std::nullopt;
    const std::size_t udp_length = get16(at + 4);
    if (get16(at) != from.destination_port || udp_length < udp_size || udp_length > length) {
      return std::nullopt;
    }
    return received_datagram{
        destination, get16(at + 2), {at + udp_size, udp_length - udp_size}, std::nullopt};
  }
  if (protocol != protocol_tcp || length < tcp_size || get16(at) != from.destination_port) {
    return std::nullopt;
  }
  const std::size_t data_offset = static_cast<std::size_t>(at[12] >> 4) * 4;
  if (data_offset < tcp_size || data_offset > length) return std::nullopt;
  tcp_header tcp;
  tcp.sequence = get32(at + 4);
  tcp.acknowledgment = get32(at + 8);
  tcp.flags = at[13] & 0x3f;
  tcp.window = get16(at + 14);
  tcp.mss = read_mss({at + tcp_size, data_offset - tcp_size});
  return received_datagram{
      destination, get16(at + 2), {at + data_offset, length - data_offset}, tcp};
}

}  // namespace dnstransport::detail
