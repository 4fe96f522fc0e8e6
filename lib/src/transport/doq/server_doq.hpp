#pragma once
// Internal: the responder's DNS-over-QUIC listener (RFC 9250) on ngtcp2 and GnuTLS. Every
// responder thread has one, each with its own UDP socket on the same port (SO_REUSEPORT) and
// its own connections: the kernel picks the socket by the client's address and port, which
// stay the same for a connection (this responder supports no migration), so each
// connection's packets reach its thread. The socket is drained on readiness (Asio
// async_wait, then recvmmsg; the connections that read datagrams send once per batch); each
// datagram goes to the connection its destination connection ID names, a client's first
// Initial starts a new one, an unknown QUIC version gets a Version Negotiation packet, a
// short-header packet for an unknown connection a stateless reset, and anything else is
// dropped and counted. The socket and the routing are in server_doq.cpp, what the listener
// sends in server_doq_send.cpp; a connection is server_doq_connection.cpp.

#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <boost/asio/ip/udp.hpp>

#include "responder/server_thread.hpp"

struct ngtcp2_cid;
struct ngtcp2_pkt_hd;
struct ngtcp2_addr;
struct ngtcp2_path;
struct ngtcp2_version_cid;

namespace dnstransport::detail {

class doq_context;
class doq_connection;

// Length of the connection IDs the responder issues; short-header packets carry no length,
// so every ID of ours has this one.
inline constexpr std::size_t doq_cid_length = 16;
// How long a Retry token stays good: one round trip is all it needs.
inline constexpr std::uint64_t retry_token_lifetime = 10'000'000'000;  // ns

// A connection ID as a map key.
struct cid_key {
  std::array<std::uint8_t, 20> bytes{};  // QUIC v1 IDs are at most 20 octets
  std::uint8_t size = 0;

  cid_key() = default;
  cid_key(const std::uint8_t* data, std::size_t length);
  explicit cid_key(const ngtcp2_cid& cid);
  bool operator==(const cid_key& other) const noexcept {
    return size == other.size && bytes == other.bytes;
  }
};

struct cid_hash {
  std::size_t operator()(const cid_key& key) const noexcept {
    return std::hash<std::string_view>{}(
        std::string_view(reinterpret_cast<const char*>(key.bytes.data()), key.size));
  }
};

// One QUIC packet to send: where from, where to, and its bytes in the listener's buffer.
struct doq_packet {
  sockaddr_storage local{};
  socklen_t local_size = 0;
  sockaddr_storage remote{};
  socklen_t remote_size = 0;
  std::span<const std::uint8_t> bytes;
};

class doq_listener final : public thread_listener {
 public:
  doq_listener(server_thread& thread, const doq_context& context);
  ~doq_listener() override;
  doq_listener(const doq_listener&) = delete;
  doq_listener& operator=(const doq_listener&) = delete;

  std::uint16_t open(const boost::asio::ip::address& address, std::uint16_t port) override;
  void start() override;

  // For the connections.
  server_thread& thread() noexcept { return thread_; }
  const doq_context& context() const noexcept { return context_; }
  // Whether an ID is taken, so a new one can be drawn again.
  bool known(const cid_key& id) const { return by_id_.contains(id); }
  // Routes packets to `id` to `connection` (the IDs it issues), or stops doing so.
  void associate(const cid_key& id, doq_connection& connection);
  void dissociate(const cid_key& id);
  // Where a connection writes the packets of one flush, `count` of them at most, each of
  // `size` octets at most.
  std::span<std::uint8_t> packet_buffer(std::size_t count, std::size_t size);
  // Sends packets (a full socket buffer drops them: QUIC's loss recovery sends again).
  void send(std::span<const doq_packet> packets);
  // Forgets a connection that is over: its IDs and the listener's reference.
  void remove(doq_connection& connection);

  // One datagram read from the socket, from `remote` to `local`: to its connection, a new
  // one, or answered or dropped (on_readable; tests/support/scripted_quic.cpp hands them
  // over with no socket). May throw (memory): the caller drops the datagram.
  void on_datagram(std::span<const std::uint8_t> datagram, const sockaddr_storage& local,
                   socklen_t local_size, const sockaddr_storage& remote, socklen_t remote_size);
  // The end of a batch of datagrams: each connection that read some sends
  // (doq_connection::flush).
  void flush();
  // Where the packets go instead of the socket: a test's in-memory clients.
  using packet_sink = std::function<void(std::span<const doq_packet> packets)>;
  void send_to(packet_sink sink) { sink_ = std::move(sink); }

 private:
  void wait();
  void on_readable();
  // on_datagram's steps. Each is inline and defined in server_doq.cpp, where its one caller
  // is, so that the compiler can put it in place.
  // The datagram's version and connection IDs; false when it is for no connection: a
  // version other than v1 (answered with Version Negotiation) or no QUIC packet (dropped).
  inline bool read_ids(std::span<const std::uint8_t> datagram, ngtcp2_version_cid& ids,
                       const sockaddr_storage& local, socklen_t local_size,
                       const sockaddr_storage& remote, socklen_t remote_size);
  // The connection an ID of `connection` routes to; null (dropped) when it is no longer kept.
  inline std::shared_ptr<doq_connection> owner_of(doq_connection* connection);
  // A new connection for a datagram with an ID of no connection: a client's first Initial,
  // after a Retry when doq_retry asks for one. Null when there is none: a stateless reset,
  // a Retry or nothing was sent back.
  inline std::shared_ptr<doq_connection> accept(std::span<const std::uint8_t> datagram,
                                                const ngtcp2_version_cid& ids,
                                                const ngtcp2_path& path,
                                                const sockaddr_storage& local, socklen_t local_size,
                                                const sockaddr_storage& remote,
                                                socklen_t remote_size);
  // Whether an Initial's token is one of our Retry tokens, for `remote`, still good; it
  // gives the ID of the Initial that got the Retry.
  inline bool retry_token_valid(const ngtcp2_pkt_hd& header, const sockaddr_storage& remote,
                                socklen_t remote_size, ngtcp2_cid& original_dcid) const;
  inline std::shared_ptr<doq_connection> open_connection(const ngtcp2_pkt_hd& header,
                                                         const ngtcp2_path& path,
                                                         const ngtcp2_cid* original_dcid);
  // The datagram to its connection, which is forgotten when over, or flushed at the end of
  // the batch when it has something to send.
  inline void deliver(std::shared_ptr<doq_connection> connection, const ngtcp2_path& path,
                      std::span<const std::uint8_t> datagram);
  void send_version_negotiation(std::span<const std::uint8_t> dcid,
                                std::span<const std::uint8_t> scid, const sockaddr_storage& local,
                                socklen_t local_size, const sockaddr_storage& remote,
                                socklen_t remote_size);
  // One packet that answers a datagram of no connection, back the way it came.
  void send_reply(std::span<const std::uint8_t> bytes, const sockaddr_storage& local,
                  socklen_t local_size, const sockaddr_storage& remote, socklen_t remote_size);
  // A Retry for a client's first Initial (server_options::doq_retry).
  void send_retry(const ngtcp2_pkt_hd& header, const sockaddr_storage& remote,
                  socklen_t remote_size, const sockaddr_storage& local, socklen_t local_size);
  // A stateless reset for a packet of `size` octets to the unknown connection ID `dcid`.
  void send_stateless_reset(std::span<const std::uint8_t> dcid, std::size_t size,
                            const sockaddr_storage& local, socklen_t local_size,
                            const sockaddr_storage& remote, socklen_t remote_size);
  void dropped();
  // Room for the destination address of a datagram (IP_PKTINFO or IPV6_PKTINFO).
  static constexpr std::size_t control_size = CMSG_SPACE(sizeof(in6_pktinfo));

  server_thread& thread_;
  const doq_context& context_;
  boost::asio::ip::udp::socket socket_;
  // Bound to a wildcard address: each datagram's destination (IP_PKTINFO) is the local
  // address of its path, and packets go back from it.
  bool wildcard_ = false;
  std::uint16_t port_ = 0;
  sockaddr_storage bound_{};
  socklen_t bound_size_ = 0;
  std::unordered_map<cid_key, doq_connection*, cid_hash> by_id_;
  std::unordered_map<doq_connection*, std::shared_ptr<doq_connection>> connections_;
  std::vector<std::shared_ptr<doq_connection>> to_flush_;  // read in this batch, to send
  std::vector<std::uint8_t> in_;
  std::vector<std::uint8_t> out_;
  packet_sink sink_;  // empty: the socket
};

}  // namespace dnstransport::detail
