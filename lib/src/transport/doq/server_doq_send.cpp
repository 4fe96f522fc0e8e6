// What the DoQ listener sends: its connections' packets (sendmmsg, from the address each
// client wrote to) and its own answers to datagrams of no connection: Version Negotiation,
// Retry and stateless resets. The class is in server_doq.hpp.
#include "transport/doq/server_doq.hpp"

#include <gnutls/crypto.h>
#include <netinet/in.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "transport/doq/server_doq_context.hpp"
#include "util/clock.hpp"

namespace dnstransport::detail {

namespace {

// The reserved version a Version Negotiation packet lists beside v1, so clients do not
// come to rely on the list staying fixed (RFC 9000, section 6.3): 0x?a?a?a?a.
std::uint32_t grease_version(std::span<const std::uint8_t> dcid) {
  std::uint32_t h = 0x811c9dc5u;
  for (const std::uint8_t b : dcid) h = (h ^ b) * 0x01000193u;
  return (h & 0xf0f0f0f0u) | 0x0a0a0a0au;
}

}  // namespace

std::span<std::uint8_t> doq_listener::packet_buffer(std::size_t count, std::size_t size) {
  if (out_.size() < count * size) out_.resize(count * size);
  return {out_.data(), count * size};
}

void doq_listener::send(std::span<const doq_packet> packets) {
  if (sink_) {
    sink_(packets);
    return;
  }
  constexpr std::size_t batch = 64;
  std::array<mmsghdr, batch> messages{};
  std::array<iovec, batch> iov{};
  std::array<std::array<std::uint8_t, control_size>, batch> control{};
  while (!packets.empty()) {
    const std::size_t n = std::min(packets.size(), batch);
    for (std::size_t i = 0; i < n; ++i) {
      const doq_packet& p = packets[i];
      iov[i] = {const_cast<std::uint8_t*>(p.bytes.data()), p.bytes.size()};
      msghdr& m = messages[i].msg_hdr;
      m = {};
      m.msg_iov = &iov[i];
      m.msg_iovlen = 1;
      m.msg_name = const_cast<sockaddr_storage*>(&p.remote);
      m.msg_namelen = p.remote_size;
      if (!wildcard_) continue;
      // Answer from the address the client wrote to.
      m.msg_control = control[i].data();
      control[i].fill(0);
      cmsghdr* c = nullptr;
      if (p.local.ss_family == AF_INET) {
        m.msg_controllen = CMSG_SPACE(sizeof(in_pktinfo));
        c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = IPPROTO_IP;
        c->cmsg_type = IP_PKTINFO;
        c->cmsg_len = CMSG_LEN(sizeof(in_pktinfo));
        in_pktinfo info{};
        info.ipi_spec_dst = reinterpret_cast<const sockaddr_in*>(&p.local)->sin_addr;
        std::memcpy(CMSG_DATA(c), &info, sizeof info);
      } else {
        m.msg_controllen = CMSG_SPACE(sizeof(in6_pktinfo));
        c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = IPPROTO_IPV6;
        c->cmsg_type = IPV6_PKTINFO;
        c->cmsg_len = CMSG_LEN(sizeof(in6_pktinfo));
        in6_pktinfo info{};
        info.ipi6_addr = reinterpret_cast<const sockaddr_in6*>(&p.local)->sin6_addr;
        std::memcpy(CMSG_DATA(c), &info, sizeof info);
      }
    }
    std::size_t done = 0;
    while (done < n) {
      const int sent =
          sendmmsg(socket_.native_handle(), &messages[done], static_cast<unsigned>(n - done), 0);
      if (sent <= 0) {
        if (sent < 0 && errno == EINTR) continue;
        break;  // a full socket buffer drops packets; QUIC's loss recovery sends them again
      }
      done += static_cast<std::size_t>(sent);
    }
    packets = packets.subspan(n);
  }
}

void doq_listener::send_reply(std::span<const std::uint8_t> bytes, const sockaddr_storage& local,
                              socklen_t local_size, const sockaddr_storage& remote,
                              socklen_t remote_size) {
  doq_packet packet;
  packet.local = local;
  packet.local_size = local_size;
  packet.remote = remote;
  packet.remote_size = remote_size;
  packet.bytes = bytes;
  send({&packet, 1});
}

void doq_listener::send_retry(const ngtcp2_pkt_hd& header, const sockaddr_storage& remote,
                              socklen_t remote_size, const sockaddr_storage& local,
                              socklen_t local_size) {
  ngtcp2_cid retry_id;
  retry_id.datalen = doq_cid_length;
  gnutls_rnd(GNUTLS_RND_NONCE, retry_id.data, retry_id.datalen);
  std::array<std::uint8_t, NGTCP2_CRYPTO_MAX_RETRY_TOKENLEN> token{};
  const auto& secret = context_.static_secret();
  const ngtcp2_ssize token_size =
      ngtcp2_crypto_generate_retry_token(token.data(), secret.data(), secret.size(), header.version,
                                         reinterpret_cast<const sockaddr*>(&remote), remote_size,
                                         &retry_id, &header.dcid, monotonic_ns());
  if (token_size < 0) {
    dropped();
    return;
  }
  const std::span<std::uint8_t> buffer = packet_buffer(1, NGTCP2_MAX_UDP_PAYLOAD_SIZE);
  const ngtcp2_ssize written = ngtcp2_crypto_write_retry(
      buffer.data(), buffer.size(), header.version, &header.scid, &retry_id, &header.dcid,
      token.data(), static_cast<std::size_t>(token_size));
  if (written <= 0) {
    dropped();
    return;
  }
  send_reply(buffer.first(static_cast<std::size_t>(written)), local, local_size, remote,
             remote_size);
  thread_.counters.doq_retries.fetch_add(1, std::memory_order_relaxed);
}

void doq_listener::send_stateless_reset(std::span<const std::uint8_t> dcid, std::size_t size,
                                        const sockaddr_storage& local, socklen_t local_size,
                                        const sockaddr_storage& remote, socklen_t remote_size) {
  // RFC 9000, section 10.3: smaller than the packet that caused it (so two endpoints cannot
  // loop), at least 21 octets: 5 unpredictable ones (the first carries the short-header
  // bits), then the 16-octet token.
  constexpr std::size_t longest = 43;
  constexpr std::size_t shortest =
      1 + NGTCP2_MIN_STATELESS_RESET_RANDLEN + NGTCP2_STATELESS_RESET_TOKENLEN;
  const std::size_t length = std::min(size - 1, longest);
  if (size < 1 || length < shortest) return;
  ngtcp2_cid cid;
  ngtcp2_cid_init(&cid, dcid.data(), dcid.size());
  std::array<std::uint8_t, NGTCP2_STATELESS_RESET_TOKENLEN> token{};
  const auto& secret = context_.static_secret();
  if (ngtcp2_crypto_generate_stateless_reset_token(token.data(), secret.data(), secret.size(),
                                                   &cid) != 0) {
    return;
  }
  std::array<std::uint8_t, longest> random{};
  const std::size_t random_length = length - NGTCP2_STATELESS_RESET_TOKENLEN;
  gnutls_rnd(GNUTLS_RND_NONCE, random.data(), random_length);
  const std::span<std::uint8_t> buffer = packet_buffer(1, longest);
  const ngtcp2_ssize written = ngtcp2_pkt_write_stateless_reset(
      buffer.data(), buffer.size(), token.data(), random.data(), random_length);
  if (written <= 0) return;
  send_reply(buffer.first(static_cast<std::size_t>(written)), local, local_size, remote,
             remote_size);
  thread_.counters.doq_stateless_resets.fetch_add(1, std::memory_order_relaxed);
}

void doq_listener::send_version_negotiation(std::span<const std::uint8_t> dcid,
                                            std::span<const std::uint8_t> scid,
                                            const sockaddr_storage& local, socklen_t local_size,
                                            const sockaddr_storage& remote, socklen_t remote_size) {
  const std::array<std::uint32_t, 2> versions{grease_version(dcid), NGTCP2_PROTO_VER_V1};
  std::uint8_t unused = 0;
  gnutls_rnd(GNUTLS_RND_NONCE, &unused, 1);
  const std::span<std::uint8_t> buffer = packet_buffer(1, NGTCP2_MAX_UDP_PAYLOAD_SIZE);
  const ngtcp2_ssize written = ngtcp2_pkt_write_version_negotiation(
      buffer.data(), buffer.size(), unused, dcid.data(), dcid.size(), scid.data(), scid.size(),
      versions.data(), versions.size());
  if (written <= 0) {
    dropped();
    return;
  }
  send_reply(buffer.first(static_cast<std::size_t>(written)), local, local_size, remote,
             remote_size);
}

}  // namespace dnstransport::detail
