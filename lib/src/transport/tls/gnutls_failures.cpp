// A GnuTLS session's failures told apart by kind (tls_failure): GnuTLS's error codes and the
// alerts received, with the versions the client offered (on_client_hello), so a version
// mismatch reads as one on both backends; the alert sent back.

#include <gnutls/gnutls.h>

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "transport/tls/gnutls_common.hpp"

namespace dnstransport::detail {
namespace {

bool is_gnutls_certificate_alert(int alert) {
  switch (alert) {
    case GNUTLS_A_BAD_CERTIFICATE:
    case GNUTLS_A_UNSUPPORTED_CERTIFICATE:
    case GNUTLS_A_CERTIFICATE_REVOKED:
    case GNUTLS_A_CERTIFICATE_EXPIRED:
    case GNUTLS_A_CERTIFICATE_UNKNOWN:
    case GNUTLS_A_UNKNOWN_CA:
      return true;
    default:
      return false;
  }
}

}  // namespace

tls_io gnutls_connection::finish(int result) {
  switch (result) {
    case GNUTLS_E_AGAIN:
    case GNUTLS_E_INTERRUPTED:
      return gnutls_record_get_direction(session_) == 1 ? tls_io::want_write : tls_io::want_read;
    case GNUTLS_E_PREMATURE_TERMINATION:
      return end(tls_io::closed);
    case GNUTLS_E_PUSH_ERROR:
    case GNUTLS_E_PULL_ERROR:
      return fail(tls_failure::reset, gnutls_strerror(result));
    case GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR:
    case GNUTLS_E_CERTIFICATE_ERROR:
      send_alert(result);
      return fail(tls_failure::certificate, verification_message(result));
    case GNUTLS_E_FATAL_ALERT_RECEIVED: {
      // The peer picks the alert byte, so it may be no value of GnuTLS's enum: keep it as
      // an integer and ask for a name only within the enum's range.
      const int alert = static_cast<int>(gnutls_alert_get(session_));
      const tls_failure kind = alert == GNUTLS_A_PROTOCOL_VERSION   ? tls_failure::protocol_version
                               : is_gnutls_certificate_alert(alert) ? tls_failure::certificate
                                                                    : tls_failure::handshake_alert;
      const char* name = alert >= 0 && alert <= GNUTLS_A_MAX
                             ? gnutls_alert_get_name(static_cast<gnutls_alert_description_t>(alert))
                             : nullptr;
      if (name == nullptr) {
        return fail(kind, fmt::format("{} (unknown alert {})", gnutls_strerror(result), alert));
      }
      return fail(kind, fmt::format("{} ({})", gnutls_strerror(result), name));
    }
    case GNUTLS_E_UNSUPPORTED_VERSION_PACKET:
    case GNUTLS_E_NO_PRIORITIES_WERE_SET:
      send_alert(result);
      return fail(tls_failure::protocol_version, gnutls_strerror(result));
    case GNUTLS_E_NO_CIPHER_SUITES:
      // GnuTLS settles on a version before it looks for a suite, so a client without a
      // version in common fails here and would get a handshake_failure alert. OpenSSL
      // answers protocol_version; so do we, for the same verdict on both backends.
      if (client_hello_seen_ && (offered_versions_ & setup_->versions()) == 0) {
        gnutls_alert_send(session_, GNUTLS_AL_FATAL, GNUTLS_A_PROTOCOL_VERSION);
        return fail(tls_failure::protocol_version,
                    fmt::format("{} (the client offers no TLS version allowed here)",
                                gnutls_strerror(result)));
      }
      send_alert(result);
      return fail(tls_failure::other, gnutls_strerror(result));
    case GNUTLS_E_UNEXPECTED_PACKET:
    case GNUTLS_E_RECORD_OVERFLOW:
      // Before the handshake completes these mean the bytes were never TLS records;
      // afterwards they mean a corrupted stream.
      send_alert(result);
      return fail(handshake_done_ ? tls_failure::other : tls_failure::not_tls,
                  gnutls_strerror(result));
    case GNUTLS_E_UNEXPECTED_PACKET_LENGTH:
      // GnuTLS says this both for a malformed message and for a stream that ended inside
      // a record; OpenSSL calls the latter an EOF, and so do we.
      if (peer_closed()) return end(tls_io::closed);
      send_alert(result);
      return fail(tls_failure::other, gnutls_strerror(result));
    default:
      send_alert(result);
      return fail(tls_failure::other, gnutls_strerror(result));
  }
}

int gnutls_connection::on_client_hello(gnutls_session_t session, unsigned int, unsigned int,
                                       unsigned int incoming, const gnutls_datum_t* message) {
  auto* self = static_cast<gnutls_connection*>(gnutls_session_get_ptr(session));
  if (self == nullptr || incoming == 0 || message == nullptr || message->size < 2) return 0;
  struct client_offer {
    unsigned versions = 0;
    bool listed = false;
  };
  client_offer offer;
  const auto collect = [](void* context, unsigned int extension, const unsigned char* data,
                          unsigned int size) {
    constexpr unsigned int supported_versions = 43;
    if (extension != supported_versions || size < 1) return 0;
    auto& found = *static_cast<client_offer*>(context);
    found.listed = true;
    const unsigned int end = std::min(size, 1u + data[0]);
    for (unsigned int i = 1; i + 1 < end; i += 2) {
      found.versions |= version_bit(data[i], data[i + 1]);
    }
    return 0;
  };
  gnutls_ext_raw_parse(&offer, collect, message, GNUTLS_EXT_RAW_FLAG_TLS_CLIENT_HELLO);
  // Without supported_versions the legacy version field is the client's highest version.
  self->offered_versions_ =
      offer.listed ? offer.versions : version_bit(message->data[0], message->data[1]);
  self->client_hello_seen_ = true;
  return 0;
}

tls_io gnutls_connection::fail(tls_failure kind, std::string message) {
  failure_ = kind;
  error_message_ = std::move(message);
  return end(tls_io::error);
}

tls_io gnutls_connection::end(tls_io result) {
  final_ = result;
  return result;
}

}  // namespace dnstransport::detail
