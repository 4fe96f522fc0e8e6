#pragma once
/// \file
/// Test support: scripted in-memory datagram sockets for the UDP and DoQ
/// clients (the datagram_socket seam). Each socket a client opens gets a peer
/// of its own making, which sees every datagram the client sends, one send call
/// at a time, and answers through the socket's link; what it answers wakes the
/// client's read wait. The sockets can refuse to open, take fewer datagrams
/// than offered, or fail a send or a receive with an errno. `dns_peer` is a
/// scripted DNS responder over them: per query it answers, drops, duplicates,
/// holds back, truncates (TC=1), or sends a wrong ID, a malformed, a mismatched
/// or an oversized answer. No socket, no thread, no timing: a run is decided by
/// the script alone.

#include <netinet/in.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "transport/udp/datagram_socket.hpp"

namespace dnstransport::scripted {

/// How the far end of one scripted socket sends to its client.
class datagram_link {
 public:
  virtual ~datagram_link() = default;
  /// One datagram for the client (copied); a read wait ends.
  virtual void to_client(std::span<const std::uint8_t> datagram) = 0;
  /// The client's address as its peer sees it: 127.0.0.2, port 10000 plus the
  /// socket's index.
  virtual sockaddr_in client_address() const = 0;
  /// The client's event loop, for timers of the peer's own.
  virtual boost::asio::io_context& io() = 0;
};

/// The far end of one scripted socket.
class datagram_peer {
 public:
  virtual ~datagram_peer() = default;
  /// The datagrams of one send call, in order (a GSO message already cut into
  /// its packets).
  virtual void from_client(std::span<const std::vector<std::uint8_t>> datagrams) = 0;
};

/// Makes the far end of each socket as it opens; `link` outlives it. `index`
/// counts the sockets made, from 0.
using datagram_peer_maker =
    std::function<std::unique_ptr<datagram_peer>(datagram_link& link, unsigned index)>;

struct socket_script {
  /// Every open fails with this errno (0: sockets open).
  int open_error = 0;
  /// Per send call, cycling: messages taken at most (fewer than offered: a
  /// partial send); 0: the call fails with EAGAIN, and the socket is writable
  /// again at once.
  std::vector<std::size_t> send_limits{SIZE_MAX};
  /// The first receive calls of each socket fail with these errnos, in order,
  /// before any datagram is returned (ECONNREFUSED: a pending ICMP error).
  std::vector<int> receive_errors;
};

/// What the sockets saw, over every socket of every client.
struct socket_log {
  std::uint64_t sockets_opened = 0;
  std::uint64_t send_calls = 0;
  std::uint64_t partial_sends = 0;  ///< calls that took fewer messages than offered
  std::uint64_t refused_sends = 0;  ///< calls failed with EAGAIN
  std::uint64_t datagrams_from_clients = 0;
  std::uint64_t datagrams_to_clients = 0;
  std::uint64_t closes = 0;
};

/// Sockets whose far ends `make_peer` makes; `script` and `log` must outlive
/// the run.
detail::datagram_socket_factory make_datagram_socket_factory(const socket_script& script,
                                                             socket_log& log,
                                                             datagram_peer_maker make_peer);

/// What the DNS peer does with one query.
enum class dns_reply {
  answer,      ///< the query echoed as its answer (QR set, NOERROR, no records)
  drop,        ///< nothing
  duplicate,   ///< the answer twice in a row
  hold,        ///< the answer after the next query's, or at the end of the send call
  truncated,   ///< the answer with TC set
  wrong_id,    ///< the answer with an ID no query in flight has (top bit flipped)
  malformed,   ///< the answer cut inside its question
  mismatched,  ///< the answer to another name
  oversized,   ///< the answer padded past the 512 octets its query allows
};

struct dns_script {
  /// Replies to the queries each socket receives, in turn, cycling.
  std::vector<dns_reply> replies{dns_reply::answer};
};

struct dns_log {
  std::uint64_t queries_received = 0;
  std::uint64_t answers_sent = 0;  ///< datagrams, duplicates included
};

/// A DNS responder per socket, running `script`; `script` and `log` must
/// outlive the run.
datagram_peer_maker dns_peer(const dns_script& script, dns_log& log);

}  // namespace dnstransport::scripted
