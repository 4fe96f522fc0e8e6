#include "pcap_writer.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include <dnstransport/message.hpp>

namespace dnstransport::test_pcap {

namespace {

void put16(bytes& out, std::uint16_t v) {
  out.push_back(static_cast<std::uint8_t>(v >> 8));
  out.push_back(static_cast<std::uint8_t>(v & 0xff));
}

void put32(bytes& out, std::uint32_t v) {
  put16(out, static_cast<std::uint16_t>(v >> 16));
  put16(out, static_cast<std::uint16_t>(v & 0xffff));
}

// Little-endian, as the capture files here are written.
void le16(bytes& out, std::uint16_t v) {
  out.push_back(static_cast<std::uint8_t>(v & 0xff));
  out.push_back(static_cast<std::uint8_t>(v >> 8));
}

void le32(bytes& out, std::uint32_t v) {
  le16(out, static_cast<std::uint16_t>(v & 0xffff));
  le16(out, static_cast<std::uint16_t>(v >> 16));
}

void append(bytes& out, std::span<const std::uint8_t> more) {
  out.insert(out.end(), more.begin(), more.end());
}

bytes ip_packet(const address& from, const address& to, std::uint8_t protocol,
                std::span<const std::uint8_t> segment) {
  if (from.ipv6 != to.ipv6) throw std::invalid_argument("mixed IPv4 and IPv6 addresses");
  bytes out;
  if (from.ipv6) {
    put32(out, 0x60000000);
    put16(out, static_cast<std::uint16_t>(segment.size()));
    out.push_back(protocol);
    out.push_back(64);
    append(out, from.octets);
    append(out, to.octets);
  } else {
    out.push_back(0x45);
    out.push_back(0);
    put16(out, static_cast<std::uint16_t>(20 + segment.size()));
    put32(out, 0x00014000);  // id 1, don't fragment
    out.push_back(64);
    out.push_back(protocol);
    put16(out, 0);  // checksum: nobody checks it here
    append(out, std::span(from.octets).first(4));
    append(out, std::span(to.octets).first(4));
  }
  append(out, segment);
  return out;
}

}  // namespace

address ip(std::string_view text) {
  address a;
  const std::string s(text);
  a.ipv6 = s.find(':') != std::string::npos;
  if (inet_pton(a.ipv6 ? AF_INET6 : AF_INET, s.c_str(), a.octets.data()) != 1) {
    throw std::invalid_argument("bad address " + s);
  }
  return a;
}

bytes dns_query(std::string_view name, std::uint16_t type, std::uint16_t id) {
  bytes q = encode_query(name, type);
  patch_id(q.data(), id);
  return q;
}

bytes as_response(bytes message) {
  message[2] |= 0x80;
  return message;
}

bytes with_opcode(bytes message, unsigned opcode) {
  message[2] = static_cast<std::uint8_t>((message[2] & 0x87) | ((opcode & 0x0f) << 3));
  return message;
}

bytes framed(const std::vector<bytes>& messages) {
  bytes out;
  for (const auto& m : messages) {
    put16(out, static_cast<std::uint16_t>(m.size()));
    append(out, m);
  }
  return out;
}

bytes udp(const address& from, const address& to, std::uint16_t from_port, std::uint16_t to_port,
          std::span<const std::uint8_t> payload) {
  bytes segment;
  put16(segment, from_port);
  put16(segment, to_port);
  put16(segment, static_cast<std::uint16_t>(8 + payload.size()));
  put16(segment, 0);
  append(segment, payload);
  return ip_packet(from, to, 17, segment);
}

bytes tcp(const address& from, const address& to, std::uint16_t from_port, std::uint16_t to_port,
          std::uint32_t sequence, std::span<const std::uint8_t> payload, std::uint8_t flags) {
  bytes segment;
  put16(segment, from_port);
  put16(segment, to_port);
  put32(segment, sequence);
  put32(segment, 1);        // acknowledgement
  segment.push_back(0x50);  // 20-octet header
  segment.push_back(flags);
  put16(segment, 65535);  // window
  put32(segment, 0);      // checksum, urgent pointer
  append(segment, payload);
  return ip_packet(from, to, 6, segment);
}

bytes ipv4_fragment(bytes packet, std::uint16_t offset) {
  const std::uint16_t field = static_cast<std::uint16_t>(0x2000 | (offset & 0x1fff));
  packet[6] = static_cast<std::uint8_t>(field >> 8);
  packet[7] = static_cast<std::uint8_t>(field & 0xff);
  return packet;
}

bytes ethernet_of_type(std::uint16_t ethertype, std::span<const std::uint8_t> payload) {
  bytes out = {0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01};
  put16(out, ethertype);
  append(out, payload);
  return out;
}

bytes ethernet(std::span<const std::uint8_t> ip_packet, std::vector<std::uint16_t> vlans) {
  const std::uint16_t type = (ip_packet[0] >> 4) == 6 ? 0x86dd : 0x0800;
  bytes tagged;
  for (std::size_t i = 0; i < vlans.size(); ++i) {
    // The tag's own EtherType comes before it: the outer one in the Ethernet header.
    put16(tagged, vlans[i]);
    put16(tagged, i + 1 < vlans.size() ? 0x8100 : type);
  }
  append(tagged, ip_packet);
  return ethernet_of_type(vlans.empty() ? type : vlans.size() > 1 ? 0x88a8 : 0x8100, tagged);
}

bytes linux_sll(std::span<const std::uint8_t> ip_packet) {
  bytes out;
  put16(out, 4);    // sent by us
  put16(out, 772);  // ARPHRD_LOOPBACK
  put16(out, 6);
  append(out, bytes{0, 0, 0, 0, 0, 0, 0, 0});
  put16(out, (ip_packet[0] >> 4) == 6 ? 0x86dd : 0x0800);
  append(out, ip_packet);
  return out;
}

bytes linux_sll2(std::span<const std::uint8_t> ip_packet) {
  bytes out;
  put16(out, (ip_packet[0] >> 4) == 6 ? 0x86dd : 0x0800);
  put16(out, 0);  // reserved
  put32(out, 1);  // interface index
  put16(out, 772);
  out.push_back(4);
  out.push_back(6);
  append(out, bytes{0, 0, 0, 0, 0, 0, 0, 0});
  append(out, ip_packet);
  return out;
}

capture::capture(std::uint32_t link_type, format f) : format_(f) {
  if (f == format::pcapng) {
    // Section Header Block, then one Interface Description Block (microsecond timestamps).
    le32(data_, 0x0a0d0d0a);
    le32(data_, 28);
    le32(data_, 0x1a2b3c4d);
    le16(data_, 1);
    le16(data_, 0);
    le32(data_, 0xffffffff);
    le32(data_, 0xffffffff);
    le32(data_, 28);
    le32(data_, 1);
    le32(data_, 20);
    le16(data_, static_cast<std::uint16_t>(link_type));
    le16(data_, 0);
    le32(data_, 65535);
    le32(data_, 20);
    return;
  }
  le32(data_, f == format::pcap_nanoseconds ? 0xa1b23c4d : 0xa1b2c3d4);
  le16(data_, 2);
  le16(data_, 4);
  le32(data_, 0);
  le32(data_, 0);
  le32(data_, 65535);
  le32(data_, link_type);
}

void capture::add(std::uint64_t time_ns, std::span<const std::uint8_t> frame,
                  std::size_t captured) {
  const std::size_t kept = std::min(captured, frame.size());
  if (format_ == format::pcapng) {
    const std::size_t padded = (kept + 3) / 4 * 4;
    const auto total = static_cast<std::uint32_t>(32 + padded);
    const std::uint64_t micros = time_ns / 1000;
    le32(data_, 6);  // Enhanced Packet Block
    le32(data_, total);
    le32(data_, 0);
    le32(data_, static_cast<std::uint32_t>(micros >> 32));
    le32(data_, static_cast<std::uint32_t>(micros & 0xffffffff));
    le32(data_, static_cast<std::uint32_t>(kept));
    le32(data_, static_cast<std::uint32_t>(frame.size()));
    append(data_, frame.first(kept));
    data_.resize(data_.size() + padded - kept, 0);
    le32(data_, total);
    return;
  }
  const std::uint64_t unit = format_ == format::pcap_nanoseconds ? 1 : 1000;
  le32(data_, static_cast<std::uint32_t>(time_ns / 1'000'000'000));
  le32(data_, static_cast<std::uint32_t>(time_ns % 1'000'000'000 / unit));
  le32(data_, static_cast<std::uint32_t>(kept));
  le32(data_, static_cast<std::uint32_t>(frame.size()));
  append(data_, frame.first(kept));
}

}  // namespace dnstransport::test_pcap
