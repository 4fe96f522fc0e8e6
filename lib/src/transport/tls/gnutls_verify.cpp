// A GnuTLS client's check of the server's certificate chain (--verify): each chain verified
// in full once per context (verified_chains), and the reasons a verification failed.

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "transport/tls/gnutls_common.hpp"

namespace dnstransport::detail {

void gnutls_connection::verify_once(verified_chains& chains, const char* name) {
  chains_ = &chains;
  verify_name_ = name;
  gnutls_session_set_ptr(session_, this);
  gnutls_session_set_verify_function(session_, &verify_peer);
}

int gnutls_connection::verify_peer(gnutls_session_t session) {
  auto* self = static_cast<gnutls_connection*>(gnutls_session_get_ptr(session));
  verified_chains& chains = *self->chains_;
  // The chain as sent (DER, leaf first): GnuTLS has not parsed it yet.
  unsigned int count = 0;
  const gnutls_datum_t* sent = gnutls_certificate_get_peers(session, &count);
  verified_chains::digest chain{};
  bool hashed = false;
  gnutls_hash_hd_t hash = nullptr;
  if (sent != nullptr && count > 0 && gnutls_hash_init(&hash, GNUTLS_DIG_SHA256) == 0) {
    hashed = true;
    for (unsigned int i = 0; hashed && i < count; ++i) {
      hashed = gnutls_hash(hash, sent[i].data, sent[i].size) == 0;
    }
    // The OCSP responses stapled to them take part in the verdict (a revoked one, or none
    // for a must-staple certificate, fails it): the same chain with other staples is
    // another chain here.
    for (unsigned int i = 0; hashed && i < count; ++i) {
      gnutls_datum_t response{};
      const bool stapled = gnutls_ocsp_status_request_get2(session, i, &response) == 0;
      const std::uint8_t marker = stapled ? 1 : 0;
      hashed = gnutls_hash(hash, &marker, 1) == 0 &&
               (!stapled || gnutls_hash(hash, response.data, response.size) == 0);
    }
    gnutls_hash_deinit(hash, chain.data());
  }
  if (hashed && chains.known(chain)) return 0;
  chains.count_verification();
  unsigned int status = 0;
  if (gnutls_certificate_verify_peers3(session, self->verify_name_, &status) < 0) {
    return GNUTLS_E_CERTIFICATE_ERROR;
  }
  if (status != 0) {
    self->verify_status_ = status;
    return GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR;
  }
  if (hashed) chains.add(chain);
  return 0;
}

std::string gnutls_connection::verification_message(int result) const {
  const unsigned int status =
      verify_status_ != 0 ? verify_status_ : gnutls_session_get_verify_cert_status(session_);
  gnutls_buffer text;
  if (status == 0 ||
      gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &text.datum, 0) < 0) {
    return gnutls_strerror(result);
  }
  std::string_view reasons(reinterpret_cast<const char*>(text.datum.data), text.datum.size);
  while (!reasons.empty() && (reasons.back() == ' ' || reasons.back() == '\0')) {
    reasons.remove_suffix(1);
  }
  return fmt::format("certificate verification failed: {}", reasons);
}

}  // namespace dnstransport::detail
