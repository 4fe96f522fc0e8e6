#include "transport/doq/doq_transport.hpp"

#include <ngtcp2/ngtcp2_crypto_gnutls.h>

#include <exception>

#include "transport/doq/doq_client.hpp"
#include "transport/doq/doq_codes.hpp"
#include "transport/tls/gnutls_common.hpp"

namespace dnstransport::detail {

namespace {

tls_client_options quic_tls_options(const tls_client_options& tls) {
  tls_client_options o = tls;
  // QUIC carries TLS 1.3 only (RFC 9001, section 4.2) and forbids the middlebox
  // compatibility mode's ChangeCipherSpec (section 8.4).
  o.min_version = tls_version::v1_3;
  o.max_version = tls_version::v1_3;
  o.priority = (o.priority.empty() ? std::string(gnutls_client_priority) : o.priority) +
               ":%DISABLE_TLS13_COMPAT_MODE";
  return o;
}

}  // namespace

doq_transport::doq_transport(const doq_settings& settings, const tls_client_options& tls,
                             datagram_socket_factory sockets)
    : settings_(settings),
      sockets_(std::move(sockets)),
      setup_(load_gnutls_client_setup(quic_tls_options(tls))),
      sni_(is_ip_literal(tls.server_name) ? std::string() : tls.server_name),
      verify_(tls.verify) {}

doq_transport::~doq_transport() = default;

gnutls_session_t doq_transport::new_session() const {
  unsigned int flags = gnutls_client_flags | GNUTLS_NO_END_OF_EARLY_DATA;
  if (settings_.early_data) flags |= GNUTLS_ENABLE_EARLY_DATA;
  gnutls_session_t session = nullptr;
  if (gnutls_init(&session, flags) < 0) return nullptr;
  bool ok = true;
  try {
    setup_->apply(session);
  } catch (const std::exception&) {
    ok = false;
  }
  gnutls_datum_t alpn{reinterpret_cast<unsigned char*>(const_cast<char*>(doq_alpn.data())),
                      static_cast<unsigned int>(doq_alpn.size())};
  ok = ok && ngtcp2_crypto_gnutls_configure_client_session(session) == 0 &&
       gnutls_alpn_set_protocols(session, &alpn, 1, 0) == 0 &&
       (sni_.empty() ||
        gnutls_server_name_set(session, GNUTLS_NAME_DNS, sni_.data(), sni_.size()) == 0);
  if (!ok) {
    gnutls_deinit(session);
    return nullptr;
  }
  if (verify_) gnutls_session_set_verify_cert(session, setup_->verify_name(), 0);
  return session;
}

std::unique_ptr<client_base> doq_transport::make_client(worker& owner, unsigned index,
                                                        std::uint64_t quota) const {
  return std::make_unique<doq_client>(owner, index, quota, *this);
}

}  // namespace dnstransport::detail
