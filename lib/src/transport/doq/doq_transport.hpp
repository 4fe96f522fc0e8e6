#pragma once
// Internal: DNS over QUIC (RFC 9250) as a transport of the engine, on ngtcp2 and its GnuTLS
// crypto helper (Debian's OpenSSL 3.0 has no QUIC API). A client runs one QUIC connection
// at a time on a UDP socket of its own: one query per bidirectional stream, as many streams in
// flight as its queries in flight and the server's stream limit allow, the connection
// replaced after queries_per_connection queries. With resumption the client keeps the
// server's newest ticket and transport parameters; with early data it sends its first
// queries in 0-RTT.

#include <gnutls/gnutls.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <dnstransport/tls.hpp>

#include "engine/engine.hpp"
#include "transport/udp/datagram_socket.hpp"

namespace dnstransport::detail {

class shared_setup;

// What the DoQ transport needs from the run's settings.
struct doq_settings {
  std::uint64_t queries_per_connection = 0;  // then the client reconnects; 0: never
  bool resume = false;                       // offer the newest ticket when reconnecting
  bool early_data = false;                   // with resume: first queries in 0-RTT
  // Close a connection with nothing in flight or to send for this long; the next query
  // opens a new one. 0: never.
  std::uint64_t idle_timeout_ns = 0;
};

class doq_transport final : public client_transport {
 public:
  // TLS 1.3 only, ALPN "doq"; the rest (trust anchors, verification, SNI, priority) from
  // `tls`. `sockets`: what each client's socket is; UDP sockets unless a test scripts them.
  // Throws setup_error naming what cannot be loaded.
  doq_transport(const doq_settings& settings, const tls_client_options& tls,
                datagram_socket_factory sockets = make_udp_socket);
  ~doq_transport() override;
  doq_transport(const doq_transport&) = delete;
  doq_transport& operator=(const doq_transport&) = delete;

  std::unique_ptr<client_base> make_client(worker& owner, unsigned index,
                                           std::uint64_t quota) const override;

  const doq_settings& settings() const noexcept { return settings_; }
  // A client's socket (not open yet).
  std::unique_ptr<datagram_socket> make_socket(readiness_set& readiness,
                                               datagram_socket::ready_callback on_ready,
                                               syscall_counter& syscalls) const {
    return sockets_(readiness, std::move(on_ready), syscalls);
  }

  // A client session set up for QUIC (server name, verification, ALPN, early data allowed).
  // Null when GnuTLS cannot allocate one.
  gnutls_session_t new_session() const;

 private:
  doq_settings settings_;
  datagram_socket_factory sockets_;
  std::shared_ptr<const shared_setup> setup_;
  std::string sni_;
  bool verify_ = false;
};

}  // namespace dnstransport::detail
