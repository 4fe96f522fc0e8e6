#pragma once
/// \file
/// Test support: an in-memory DNS-over-HTTPS server for the DoH client, on
/// scripted_socket.hpp's connections: an HTTP/2 server session (h2_server.hpp) per
/// connection, whose requests a script answers, refuses, resets, holds or goes away on. The
/// stream says its TLS handshake agreed on "h2" (wire_script::alpn), so the DoH client runs
/// over it without TLS. No socket, no thread, no timing: a run is decided by the script.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

#include "h2_server.hpp"
#include "scripted_socket.hpp"

namespace dnstransport::scripted {

class h2_connection;

/// What the server does with one complete request of a connection: answer it through
/// `connection` (an h2_server), or not (yet).
using h2_handler =
    std::function<void(h2_connection& connection, const hostile::h2_request& request)>;

/// How the wire carries octets (ALPN "h2" unless told otherwise), and:
struct h2_script : wire_script {
  h2_script() { alpn = "h2"; }
  hostile::h2_options h2;  ///< the server's SETTINGS
  /// Makes each new connection's handler, which may keep state of its own (requests held
  /// for later); unset: every request is answered at once.
  std::function<h2_handler()> handler_for_connection;
};

/// What the wire and the servers saw, over every connection of every client.
struct h2_log : wire_log {
  std::uint64_t requests = 0;         ///< complete requests
  std::uint64_t gets = 0;             ///< of those, GET (the query in ?dns=)
  std::uint64_t posts = 0;            ///< of those, POST (the query as the body)
  std::uint64_t resets_received = 0;  ///< RST_STREAM from the client (requests cancelled)
  std::uint64_t broken_sessions = 0;  ///< connections on which the client broke HTTP/2
  std::size_t most_open_streams = 0;  ///< most streams a client had open on a connection
};

/// The server end of one in-memory connection: an h2_server whose client is the DoH client
/// at the other end. What it queues is sent when the client's write has been taken, or
/// earlier with flush().
class h2_connection final : public peer_end, public hostile::h2_server {
 public:
  h2_connection(const h2_script& script, h2_log& log);

  void take(std::span<const std::uint8_t> octets) override;
  /// Sends what is queued now, ahead of anything queued after.
  void flush();
  /// Sends what is queued, then `octets` as they are (frames nghttp2 would not send).
  void send_raw(std::span<const std::uint8_t> octets);

 private:
  h2_log& log_;
  h2_handler handler_;
  std::uint64_t resets_counted_ = 0;
};

/// Sockets for a doh_transport whose connections run to `script`'s server; `script` and
/// `log` must outlive the run.
detail::stream_socket_factory make_h2_socket_factory(const h2_script& script, h2_log& log);

}  // namespace dnstransport::scripted
