#pragma once
/// \file
/// Test support: the library's own DNS-over-QUIC responder (doq_listener and
/// its connections, server_doq*.cpp) as the far end of scripted datagram
/// sockets (scripted_datagram.hpp), so a DoQ client runs real QUIC and TLS
/// against it with no socket: each datagram a client sends is handed to the
/// listener as if read from its socket, a client's send call as one batch, and
/// the packets the listener sends go back to the client's socket by its
/// address. The listener's own timers (loss recovery, the closing period) run
/// on its thread's io_context, which every client socket polls from the
/// client's event loop while it is open. Datagrams can be lost on purpose, in
/// either direction.

#include <cstdint>
#include <map>
#include <memory>

#include <dnstransport/server.hpp>
#include <dnstransport/tls.hpp>

#include "responder/server_thread.hpp"
#include "scripted_datagram.hpp"

namespace dnstransport::scripted {

struct quic_script {
  /// The responder's options: doq_max_streams, doq_early_data, doq_retry,
  /// close_after_queries and the doq_* misbehaviours. Its certificate is made
  /// here.
  server_options server;
  /// Of each client socket's datagrams to the responder, every N-th is lost,
  /// counting from 1 (1: all of them; 0: none).
  std::uint64_t lose_every_to_server = 0;
  /// The same for the responder's datagrams to each client.
  std::uint64_t lose_every_to_client = 0;
};

/// What passed between the clients and the responder, over every client socket.
struct quic_log {
  std::uint64_t datagrams_to_server = 0;  ///< handed to the listener
  std::uint64_t datagrams_to_client = 0;  ///< handed to a client's socket
  std::uint64_t lost = 0;                 ///< lost on purpose, both ways
};

class quic_responder {
 public:
  /// A responder with one listener; `script` must outlive it.
  explicit quic_responder(const quic_script& script);
  ~quic_responder();
  quic_responder(const quic_responder&) = delete;
  quic_responder& operator=(const quic_responder&) = delete;

  /// The far end of each socket of the clients; the responder must outlive
  /// their run.
  datagram_peer_maker peers();
  /// TLS settings of a client that trusts the responder's certificate (GnuTLS,
  /// verified).
  tls_client_options client_tls() const;
  /// The listener's counts (connections accepted, answers, 0-RTT, Retry,
  /// stateless resets).
  const detail::server_counters& counters() const;
  const quic_log& log() const noexcept;

  class impl;

 private:
  std::unique_ptr<impl> impl_;
};

}  // namespace dnstransport::scripted
