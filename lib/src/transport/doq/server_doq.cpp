// The DoQ listener's socket and routing: opening it, reading batches of datagrams, each
// datagram to the connection its ID names (or a new one for a client's first Initial), one
// flush per connection per batch, and the IDs routed. What it sends is in server_doq_send.cpp.
#include "transport/doq/server_doq.hpp"

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

// A datagram's way to its connection, in steps (inline: on_datagram is their one caller).

inline bool doq_listener::read_ids(std::span<const std::uint8_t> datagram, ngtcp2_version_cid& ids,
                                   const sockaddr_storage& local, socklen_t local_size,
                                   const sockaddr_storage& remote, socklen_t remote_size) {
  if (datagram.empty()) {
    dropped();
    return false;
  }
  const int decoded =
      ngtcp2_pkt_decode_version_cid(&ids, datagram.data(), datagram.size(), doq_cid_length);
  if (decoded == NGTCP2_ERR_VERSION_NEGOTIATION) {
    send_version_negotiation({ids.scid, ids.scidlen}, {ids.dcid, ids.dcidlen}, local, local_size,
                             remote, remote_size);
    return false;
  }
  if (decoded != 0) {
    dropped();
    return false;
  }
  return true;
}

inline std::shared_ptr<doq_connection> doq_listener::owner_of(doq_connection* connection) {
  const auto owner = connections_.find(connection);
  if (owner == connections_.end()) {
    dropped();
    return nullptr;
  }
  return owner->second;
}

inline bool doq_listener::retry_token_valid(const ngtcp2_pkt_hd& header,
                                            const sockaddr_storage& remote, socklen_t remote_size,
                                            ngtcp2_cid& original_dcid) const {
  const auto& secret = context_.static_secret();
  return header.token.base[0] == NGTCP2_CRYPTO_TOKEN_MAGIC_RETRY &&
         ngtcp2_crypto_verify_retry_token(&original_dcid, header.token.base, header.token.len,
                                          secret.data(), secret.size(), header.version,
                                          reinterpret_cast<const sockaddr*>(&remote), remote_size,
                                          &header.dcid, retry_token_lifetime, monotonic_ns()) == 0;
}

inline std::shared_ptr<doq_connection> doq_listener::open_connection(
    const ngtcp2_pkt_hd& header, const ngtcp2_path& path, const ngtcp2_cid* original_dcid) {
  std::shared_ptr<doq_connection> connection;
  try {
    connection = std::make_shared<doq_connection>(*this);
    if (!connection->init(header, path, original_dcid)) {
      remove(*connection);
      dropped();
      return nullptr;
    }
    connections_.emplace(connection.get(), connection);
  } catch (const std::exception&) {
    if (connection) remove(*connection);
    dropped();
    return nullptr;
  }
  thread_.counters.connections_accepted.fetch_add(1, std::memory_order_relaxed);
  return connection;
}

inline std::shared_ptr<doq_connection> doq_listener::accept(
    std::span<const std::uint8_t> datagram, const ngtcp2_version_cid& ids, const ngtcp2_path& path,
    const sockaddr_storage& local, socklen_t local_size, const sockaddr_storage& remote,
    socklen_t remote_size) {
  // Only a client's first Initial (long enough, a valid header) opens a connection;
  // anything else for an unknown ID is dropped, and a short-header packet with one of our
  // IDs' length gets a stateless reset: its connection ended here (or lives in another
  // server), and the reset tells the client at once instead of after its idle timeout.
  ngtcp2_pkt_hd header;
  if (ngtcp2_accept(&header, datagram.data(), datagram.size()) != 0) {
    if ((datagram[0] & 0x80) == 0 && ids.dcidlen == doq_cid_length) {
      send_stateless_reset({ids.dcid, ids.dcidlen}, datagram.size(), local, local_size, remote,
                           remote_size);
    }
    dropped();
    return nullptr;
  }
  ngtcp2_cid original_dcid;
  const bool validated = thread_.options().doq_retry;
  if (validated) {
    if (header.token.len == 0) {
      send_retry(header, remote, remote_size, local, local_size);
      return nullptr;
    }
    // Only a token of our Retry, for this address, recent, opens the connection.
    if (!retry_token_valid(header, remote, remote_size, original_dcid)) {
      dropped();
      return nullptr;
    }
  }
  return open_connection(header, path, validated ? &original_dcid : nullptr);
}

inline void doq_listener::deliver(std::shared_ptr<doq_connection> connection,
                                  const ngtcp2_path& path, std::span<const std::uint8_t> datagram) {
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

void doq_listener::on_datagram(std::span<const std::uint8_t> datagram,
                               const sockaddr_storage& local, socklen_t local_size,
                               const sockaddr_storage& remote, socklen_t remote_size) {
  ngtcp2_version_cid ids{};
  if (!read_ids(datagram, ids, local, local_size, remote, remote_size)) return;
  ngtcp2_path path{};
  path.local = {reinterpret_cast<sockaddr*>(const_cast<sockaddr_storage*>(&local)), local_size};
  path.remote = {reinterpret_cast<sockaddr*>(const_cast<sockaddr_storage*>(&remote)), remote_size};
  std::shared_ptr<doq_connection> connection;
  if (const auto found = by_id_.find(cid_key(ids.dcid, ids.dcidlen)); found != by_id_.end()) {
    connection = owner_of(found->second);
  } else {
    connection = accept(datagram, ids, path, local, local_size, remote, remote_size);
  }
  if (connection) deliver(std::move(connection), path, datagram);
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
  // A connection that never was one (its set-up failed) is not counted as ended.
  if (connections_.erase(&connection) != 0) {
    thread_.counters.doq_connections_ended.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace dnstransport::detail
