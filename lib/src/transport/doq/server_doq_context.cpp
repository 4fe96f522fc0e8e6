#include "transport/doq/server_doq_context.hpp"

#include <gnutls/crypto.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>

#include <exception>
#include <string_view>

#include <fmt/format.h>

#include <dnstransport/error.hpp>

#include "transport/doq/doq_codes.hpp"
#include "transport/tls/gnutls_common.hpp"

namespace dnstransport::detail {

namespace {

// The ClientHello has been read and ALPN negotiated: GNUTLS_ALPN_MANDATORY only refuses a
// client that offers other protocols, so one that offers none is refused here (RFC 9250,
// section 4.1.1: the "doq" token is what says the client speaks DoQ).
int check_alpn(gnutls_session_t session, unsigned int, unsigned int, unsigned int,
               const gnutls_datum_t*) {
  gnutls_datum_t selected{nullptr, 0};
  if (gnutls_alpn_get_selected_protocol(session, &selected) != 0 ||
      std::string_view(reinterpret_cast<const char*>(selected.data), selected.size) != doq_alpn) {
    return GNUTLS_E_NO_APPLICATION_PROTOCOL;
  }
  return 0;
}

// For doq_open_stream_after: once the ClientHello is read, ngtcp2 holds the client's transport
// parameters until the handshake keys are in place; the server's own streams allowed in them
// go from 0 to 1 there (with room for a few octets on it), so that ngtcp2 lets the responder
// open one the client never granted.
int check_alpn_and_claim_streams(gnutls_session_t session, unsigned int type, unsigned int when,
                                 unsigned int incoming, const gnutls_datum_t* message) {
  if (const int result = check_alpn(session, type, when, incoming, message); result != 0) {
    return result;
  }
  auto* ref = static_cast<ngtcp2_crypto_conn_ref*>(gnutls_session_get_ptr(session));
  ngtcp2_conn* conn = ref->get_conn(ref);
  auto* params =
      const_cast<ngtcp2_transport_params*>(ngtcp2_conn_get_remote_transport_params(conn));
  if (params != nullptr && params->initial_max_streams_bidi == 0) {
    params->initial_max_streams_bidi = 1;
    params->initial_max_stream_data_bidi_remote = 64;  // room for what it sends there
  }
  return 0;
}

tls_server_options quic_tls_options(const tls_server_options& tls) {
  tls_server_options o = tls;
  // QUIC carries TLS 1.3 only (RFC 9001, section 4.2) and forbids the middlebox
  // compatibility mode's ChangeCipherSpec (section 8.4).
  o.min_version = tls_version::v1_3;
  o.max_version = tls_version::v1_3;
  o.priority =
      (o.priority.empty() ? std::string("NORMAL") : o.priority) + ":%DISABLE_TLS13_COMPAT_MODE";
  o.session_tickets = true;
  return o;
}

}  // namespace

doq_context::doq_context(const tls_server_options& tls, bool early_data)
    : setup_(load_gnutls_server_setup(quic_tls_options(tls))),
      early_data_(early_data),
      renew_tickets_(tls.renew_tickets) {
  if (gnutls_rnd(GNUTLS_RND_KEY, static_secret_.data(), static_secret_.size()) != 0) {
    throw setup_error("cannot draw the DNS-over-QUIC stateless reset secret from GnuTLS");
  }
}

doq_context::~doq_context() = default;

gnutls_session_t doq_context::new_session(ngtcp2_crypto_conn_ref* ref, bool claim_streams) const {
  unsigned int flags = GNUTLS_SERVER | GNUTLS_NO_AUTO_SEND_TICKET | GNUTLS_NO_END_OF_EARLY_DATA;
  if (early_data_) flags |= GNUTLS_ENABLE_EARLY_DATA;
  gnutls_session_t session = nullptr;
  if (gnutls_init(&session, flags) < 0) return nullptr;
  gnutls_datum_t alpn{reinterpret_cast<unsigned char*>(const_cast<char*>(doq_alpn.data())),
                      static_cast<unsigned int>(doq_alpn.size())};
  bool ok = true;
  try {
    setup_->apply(session);
  } catch (const std::exception&) {
    ok = false;
  }
  ok = ok && gnutls_session_ticket_enable_server(session, setup_->ticket_key()) == 0 &&
       ngtcp2_crypto_gnutls_configure_server_session(session) == 0 &&
       gnutls_alpn_set_protocols(session, &alpn, 1,
                                 GNUTLS_ALPN_MANDATORY | GNUTLS_ALPN_SERVER_PRECEDENCE) == 0;
  if (!ok) {
    gnutls_deinit(session);
    return nullptr;
  }
  gnutls_handshake_set_hook_function(session, GNUTLS_HANDSHAKE_CLIENT_HELLO, GNUTLS_HOOK_POST,
                                     claim_streams ? check_alpn_and_claim_streams : check_alpn);
  if (early_data_) {
    anti_replay_.enable(session);
    // RFC 9001, section 4.6.1: a ticket that allows 0-RTT says so with 0xffffffff; QUIC's own
    // flow control limits what the client sends.
    gnutls_record_set_max_early_data_size(session, 0xffffffffu);
  }
  gnutls_session_set_ptr(session, ref);
  return session;
}

}  // namespace dnstransport::detail
