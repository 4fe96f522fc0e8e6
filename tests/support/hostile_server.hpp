#pragma once
/// \file
/// Test support: a DNS responder that misbehaves on purpose, over UDP, TCP, DNS over TLS or
/// DNS over HTTPS (either TLS library; DoH connections are driven by h2_peer.hpp's scripts),
/// listening on 127.0.0.1 on a free port. What it does is a script:
/// a message script says what to send back for each query (and when), a connection script
/// drives a whole TCP/TLS connection. Each connection runs on its own thread; everything
/// stops and is joined in the destructor.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <dnstransport/load.hpp>
#include <dnstransport/tls.hpp>

#include "stream_peer.hpp"

namespace dnstransport::hostile {

/// One message sent back for a query.
struct reply {
  bytes data;             ///< a DNS message (streams add the length prefix)
  microseconds delay{0};  ///< sent this long after the query arrived
  bool unframed = false;  ///< streams: sent as it is, without a length prefix
};

/// What to send back for the `number`-th query the responder received (0-based, over all
/// connections): nothing, one answer, several, broken ones, late ones.
using message_script =
    std::function<std::vector<reply>(std::span<const std::uint8_t> query, std::uint64_t number)>;

/// Drives one accepted TCP/TLS connection from accept to close.
using connection_script = std::function<void(stream_peer& peer)>;

/// Where and how the responder listens.
struct hostile_options {
  transport_kind transport = transport_kind::udp;
  /// Port on 127.0.0.1; 0 picks a free one. A UDP and a TCP responder may share a port.
  std::uint16_t port = 0;
  /// TLS: library, versions, certificate (a self-signed one for "localhost" when empty).
  tls_server_options tls;
  /// TLS: complete the handshake before the connection script runs; off, the script gets
  /// the raw TCP connection (to stall or garble the handshake itself).
  bool tls_handshake = true;
  /// Reads a PROXY protocol header (version 1 or 2) before each UDP query and at the start
  /// of each TCP/TLS connection (before TLS), as a server behind a proxy does; a datagram or
  /// connection without a valid one is dropped (counted in proxy_refused).
  bool proxy_protocol = false;
};

/// A PROXY header the responder read: the address and port it claimed, the destination it
/// named, whether it said TCP, and its TLVs.
struct proxied_client {
  std::string source;  ///< address, as text
  std::uint16_t source_port = 0;
  std::string destination;
  std::uint16_t destination_port = 0;
  bool stream = true;
  std::vector<std::pair<std::uint8_t, bytes>> tlvs;
  int version = 2;
};

/// The running responder.
class hostile_server {
 public:
  /// Answers per query as `script` says, over any transport.
  hostile_server(hostile_options options, message_script script);
  /// Runs `script` on every TCP/TLS connection.
  hostile_server(hostile_options options, connection_script script);
  ~hostile_server();
  hostile_server(const hostile_server&) = delete;
  hostile_server& operator=(const hostile_server&) = delete;

  std::uint16_t port() const noexcept;
  /// Connections accepted so far (TCP/TLS).
  std::uint64_t connections() const noexcept;
  /// Queries received so far, over all connections.
  std::uint64_t queries() const noexcept;
  /// Source addresses (dotted IPv4) that queries (UDP) or connections (TCP/TLS) came from.
  std::set<std::string> sources() const;
  /// With hostile_options::proxy_protocol: the headers read, in order (one per UDP query,
  /// one per TCP/TLS connection), and the datagrams and connections dropped for lacking one.
  std::vector<proxied_client> proxied() const;
  std::uint64_t proxy_refused() const noexcept;
  /// The certificate the TLS listener presents.
  const certificate_files& certificate() const noexcept;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// Every query a responder received, in the order they came (over all connections).
class query_log {
 public:
  void add(std::span<const std::uint8_t> query);
  std::vector<bytes> queries() const;

 private:
  mutable std::mutex mutex_;
  std::vector<bytes> queries_;
};

/// `script`, with every query recorded in `log` first.
message_script recorded(std::shared_ptr<query_log> log, message_script script);

/// A TCP port of 127.0.0.1 held bound but not listening, for as long as the object lives:
/// connects to it are refused, and no other test's listener can take it meanwhile (the
/// socket has no SO_REUSEADDR).
class unlistened_tcp_port {
 public:
  unlistened_tcp_port();
  ~unlistened_tcp_port();
  unlistened_tcp_port(const unlistened_tcp_port&) = delete;
  unlistened_tcp_port& operator=(const unlistened_tcp_port&) = delete;
  std::uint16_t port() const noexcept { return port_; }

 private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
};

/// Serves `script` on one connection: reads queries, sends the replies when they are due,
/// until the client goes away. Returns when the connection is gone.
void serve_messages(stream_peer& peer, const message_script& script);

}  // namespace dnstransport::hostile
