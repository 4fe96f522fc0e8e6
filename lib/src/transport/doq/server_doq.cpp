#include "transport/doq/server_doq.hpp"

#include <gnutls/crypto.h>
#include <netinet/in.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>

#include <fmt/format.h>

#include <dnstransport/error.hpp>

#include "responder/listener.hpp"
#include "transport/doq/server_doq_connection.hpp"
#include "transport/doq/server_doq_context.hpp"
#include "util/clock.hpp"
#include "util/socket_util.hpp"

namespace dnstransport::detail {

namespace {

constexpr unsigned receive_batch = 32;
constexpr std::size_t datagram_max = 65536;
// Room for the destination address of a datagram (IP_PKTINFO or IPV6_PKTINFO).
constexpr std::size_t control_size = CMSG_SPACE(sizeof(in6_pktinfo));

// The reserved version a Version Negotiation packet lists beside v1, so clients do not
// come to rely on the list staying fixed (RFC 9000, section 6.3): 0x?a?a?a?a.
std::uint32_t grease_version(std::span<const std::uint8_t> dcid) {
  std::uint32_t h = 0x811c9dc5u;
  for (const std::uint8_t b : dcid) h = (h ^ b) * 0x01000193u;
  return (h & 0xf0f0f0f0u) | 0x0a0a0a0au;
}

// The destination address of a received datagram, from its IP_PKTINFO / IPV6_PKTINFO
// message, with the listener's port.
bool destination_of(msghdr& message, std::uint16_t port, sockaddr_storage& local,
                    socklen_t& local_size) {
  for (cmsghdr* c = CMSG_FIRSTHDR(&message); c != nullptr; c = CMSG_NXTHDR(&message, c)) {
    if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
      in_pktinfo info;
      std::memcpy(&info, CMSG_DATA(c), sizeof info);
      sockaddr_in address{};
      address.sin_family = AF_INET;
      address.sin_port = htons(port);
      address.sin_addr = info.ipi_addr;
      std::memcpy(&local, &address, sizeof address);
      local_size = sizeof address;
      return true;
    }
    if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO) {
      in6_pktinfo info;
      std::memcpy(&info, CMSG_DATA(c), sizeof info);
      sockaddr_in6 address{};
      address.sin6_family = AF_INET6;
      address.sin6_port = htons(port);
      address.sin6_addr = info.ipi6_addr;
      std::memcpy(&local, &address, sizeof address);
      local_size = sizeof address;
      return true;
    }
  }
  return false;
}

}  // namespace

cid_key::cid_key(const std::uint8_t* data, std::size_t length)
    : size(static_cast<std::uint8_t>(std::min(length, bytes.size()))) {
  std::memcpy(bytes.data(), data, size);
}

cid_key::cid_key(const ngtcp2_cid& cid) : cid_key(cid.data, cid.datalen) {}

doq_listener::doq_listener(server_thread& thread, const doq_context& context)
    : thread_(thread), context_(context), socket_(thread.io()) {}

doq_listener::~doq_listener() = default;

std::uint16_t doq_listener::open(const boost::asio::ip::address& address, std::uint16_t port) {
  const boost::asio::ip::udp::endpoint where(address, port);
  boost::system::error_code ec;
  open_shared_port(socket_, where, false, ec);
  if (!ec) socket_.non_blocking(true, ec);
  if (ec) {
    throw setup_error(fmt::format("cannot listen for DNS over QUIC on UDP {}: {}",
                                  describe_endpoint(address, port), ec.message()));
  }
  const int fd = socket_.native_handle();
  wildcard_ = where.address().is_unspecified();
  if (wildcard_) {
    const int one = 1;
    if (where.address().is_v6()) {
      setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof one);
    } else {
      setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof one);
    }
  }
  enlarge_socket_buffers(fd);
  const auto bound = socket_.local_endpoint(ec);
  if (ec) {
    throw setup_error(fmt::format("cannot listen for DNS over QUIC on UDP {}: {}",
                                  describe_endpoint(address, port), ec.message()));
  }
  port_ = bound.port();
  bound_size_ = static_cast<socklen_t>(bound.size());
  std::memcpy(&bound_, bound.data(), bound.size());
  in_.resize(receive_batch * datagram_max);
  return port_;
}

void doq_listener::start() {
  wait();
}

void doq_listener::wait() {
  socket_.async_wait(boost::asio::socket_base::wait_read,
                     [this](const boost::system::error_code& ec) {
                       if (!ec) on_readable();
                     });
}

void doq_listener::dropped() {
  thread_.counters.doq_packets_dropped.fetch_add(1, std::memory_order_relaxed);
}

void doq_listener::on_readable() {
  const int fd = socket_.native_handle();
  std::array<mmsghdr, receive_batch> messages{};
  std::array<iovec, receive_batch> iov{};
  std::array<sockaddr_storage, receive_batch> peers{};
  std::array<std::array<std::uint8_t, control_size>, receive_batch> control{};
  for (int round = 0; round < 64; ++round) {
    for (unsigned i = 0; i < receive_batch; ++i) {
      iov[i] = {&in_[i * datagram_max], datagram_max};
      messages[i].msg_hdr = {};
      messages[i].msg_hdr.msg_iov = &iov[i];
      messages[i].msg_hdr.msg_iovlen = 1;
      messages[i].msg_hdr.msg_name = &peers[i];
      messages[i].msg_hdr.msg_namelen = sizeof(sockaddr_storage);
      messages[i].msg_hdr.msg_control = control[i].data();
      messages[i].msg_hdr.msg_controllen = control_size;
    }
    const int n = recvmmsg(fd, messages.data(), receive_batch, MSG_DONTWAIT, nullptr);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < n; ++i) {
      msghdr& message = messages[i].msg_hdr;
      sockaddr_storage local = bound_;
      socklen_t local_size = bound_size_;
      if (wildcard_ && !destination_of(message, port_, local, local_size)) {
        dropped();
        continue;
      }
      // Nothing a datagram does may end the thread: whatever throws (memory) drops it.
      try {
        on_datagram({&in_[i * datagram_max], messages[i].msg_len}, local, local_size, peers[i],
                    message.msg_namelen);
      } catch (const std::exception&) {
        dropped();
      }
    }
    flush();
    if (n < static_cast<int>(receive_batch)) break;
  }
  wait();
}

void doq_listener::on_datagram(std::span<const std::uint8_t> datagram,
                               const sockaddr_storage& local, socklen_t local_size,
                               const sockaddr_storage& remote, socklen_t remote_size) {
  if (datagram.empty()) {
    dropped();
    return;
  }
  ngtcp2_version_cid version_cid{};
  const int decoded =
      ngtcp2_pkt_decode_version_cid(&version_cid, datagram.data(), datagram.size(), doq_cid_length);
  if (decoded == NGTCP2_ERR_VERSION_NEGOTIATION) {
    send_version_negotiation({version_cid.scid, version_cid.scidlen},
                             {version_cid.dcid, version_cid.dcidlen}, local, local_size, remote,
                             remote_size);
    return;
  }
  if (decoded != 0) {
    dropped();
    return;
  }
  ngtcp2_path path{};
  path.local = {reinterpret_cast<sockaddr*>(const_cast<sockaddr_storage*>(&local)), local_size};
  path.remote = {reinterpret_cast<sockaddr*>(const_cast<sockaddr_storage*>(&remote)), remote_size};

  std::shared_ptr<doq_connection> connection;
  if (const auto found = by_id_.find(cid_key(version_cid.dcid, version_cid.dcidlen));
      found != by_id_.end()) {
    const auto owner = connections_.find(found->second);
    if (owner == connections_.end()) {
      dropped();
      return;
    }
    connection = owner->second;
  } else {
    // Only a client's first Initial (long enough, a valid header) opens a connection;
    // anything else for an unknown ID is dropped, and a short-header packet with one of our
    // IDs' length gets a stateless reset: its connection ended here (or lives in another
    // server), and the reset tells the client at once instead of after its idle timeout.
    ngtcp2_pkt_hd header;
    if (ngtcp2_accept(&header, datagram.data(), datagram.size()) != 0) {
      if ((datagram[0] & 0x80) == 0 && version_cid.dcidlen == doq_cid_length) {
        send_stateless_reset({version_cid.dcid, version_cid.dcidlen}, datagram.size(), local,
                             local_size, remote, remote_size);
      }
      dropped();
      return;
    }
    ngtcp2_cid original_dcid;
    const bool validated = thread_.options().doq_retry;
    if (validated) {
      if (header.token.len == 0) {
        send_retry(header, remote, remote_size, local, local_size);
        return;
      }
      // Only a token of our Retry, for this address, recent, opens the connection.
      const auto& secret = context_.static_secret();
      if (header.token.base[0] != NGTCP2_CRYPTO_TOKEN_MAGIC_RETRY ||
          ngtcp2_crypto_verify_retry_token(
              &original_dcid, header.token.base, header.token.len, secret.data(), secret.size(),
              header.version, reinterpret_cast<const sockaddr*>(&remote), remote_size, &header.dcid,
              retry_token_lifetime, monotonic_ns()) != 0) {
        dropped();
        return;
      }
    }
    try {
      connection = std::make_shared<doq_connection>(*this);
      if (!connection->init(header, path, validated ? &original_dcid : nullptr)) {
        remove(*connection);
        dropped();
        return;
      }
      connections_.emplace(connection.get(), connection);
    } catch (const std::exception&) {
      if (connection) remove(*connection);
      dropped();
      return;
    }
    thread_.counters.connections_accepted.fetch_add(1, std::memory_order_relaxed);
  }
  bool open = false;
  try {
    open = connection->on_datagram(path, datagram);
  } catch (const std::exception&) {
    open = false;
  }
  if (!open) {
    remove(*connection);
    return;
  }
  if (connection->flush_due() &&
      std::find(to_flush_.begin(), to_flush_.end(), connection) == to_flush_.end()) {
    to_flush_.push_back(std::move(connection));
  }
}

void doq_listener::flush() {
  for (auto& connection : to_flush_) {
    if (!connections_.contains(connection.get())) continue;  // removed meanwhile
    bool open = false;
    try {
      open = connection->flush();
    } catch (const std::exception&) {
      open = false;
    }
    if (!open) remove(*connection);
  }
  to_flush_.clear();
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

void doq_listener::associate(const cid_key& id, doq_connection& connection) {
  if (by_id_.emplace(id, &connection).second) connection.ids().push_back(id);
}

void doq_listener::dissociate(const cid_key& id) {
  const auto found = by_id_.find(id);
  if (found == by_id_.end()) return;
  std::erase(found->second->ids(), id);
  by_id_.erase(found);
}

void doq_listener::remove(doq_connection& connection) {
  for (const cid_key& id : connection.ids()) by_id_.erase(id);
  connection.ids().clear();
  connections_.erase(&connection);
}

std::span<std::uint8_t> doq_listener::packet_buffer(std::size_t count, std::size_t size) {
  if (out_.size() < count * size) out_.resize(count * size);
  return {out_.data(), count * size};
}

void doq_listener::send(std::span<const doq_packet> packets) {
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

}  // namespace dnstransport::detail
