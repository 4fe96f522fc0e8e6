#pragma once
// Internal: what every DNS-over-QUIC connection of the responder shares: the GnuTLS set-up
// (certificate, TLS 1.3 only, the session ticket key), the 0-RTT anti-replay database and the
// secret stateless reset tokens are derived from. Built once per responder, before its
// threads start; used from every thread (the anti-replay table under a mutex).

#include <gnutls/gnutls.h>

#include <array>
#include <cstdint>
#include <memory>

#include <dnstransport/tls.hpp>

#include "responder/listener.hpp"
#include "transport/tls/gnutls_anti_replay.hpp"

struct ngtcp2_crypto_conn_ref;

namespace dnstransport::detail {

class shared_setup;

class doq_context final : public listener_shared {
 public:
  // Loads the certificate and key of `tls` (the same files as the TLS listener). With
  // `early_data`, sessions accept 0-RTT from clients resuming with a ticket; without, tickets
  // announce no early data and 0-RTT is refused.
  doq_context(const tls_server_options& tls, bool early_data);
  ~doq_context() override;
  doq_context(const doq_context&) = delete;
  doq_context& operator=(const doq_context&) = delete;

  // A server session set up for QUIC (ALPN "doq" mandatory, tickets sent by the caller once
  // the handshake completes), whose ngtcp2 callbacks find their connection through `ref`.
  // Null when GnuTLS cannot allocate one.
  // `claim_streams` (server_options::doq_open_stream_after): the session also raises the
  // client's stream limit for the server as ngtcp2 reads it, breaking the protocol on purpose.
  gnutls_session_t new_session(ngtcp2_crypto_conn_ref* ref, bool claim_streams) const;

  // Whether a session sends a new ticket after a resumed handshake (--no-ticket-renewal).
  bool renew_tickets() const noexcept { return renew_tickets_; }

  // The secret stateless reset tokens are derived from (RFC 9000, section 10.3.2).
  const std::array<std::uint8_t, 32>& static_secret() const noexcept { return static_secret_; }

 private:
  std::shared_ptr<shared_setup> setup_;
  gnutls_anti_replay anti_replay_;
  bool early_data_;
  bool renew_tickets_;
  std::array<std::uint8_t, 32> static_secret_{};
};

}  // namespace dnstransport::detail
