// One GnuTLS session behind the tls_connection interface: handshake, read, write and
// shutdown steps, the saved session for resumption, and failures told apart by kind (with
// the client's offered versions, so a version mismatch reads as one on both backends).

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "transport/tls/gnutls_common.hpp"
#include "util/receive_time.hpp"
#include "util/syscall_counter.hpp"

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

gnutls_connection::gnutls_connection(std::shared_ptr<const shared_setup> setup, int fd,
                                     unsigned int flags, bool resume)
    : setup_(std::move(setup)),
      fd_(fd),
      resume_(resume),
      early_enabled_((flags & GNUTLS_ENABLE_EARLY_DATA) != 0) {
  if (gnutls_init(&session_, flags | GNUTLS_NONBLOCK | GNUTLS_NO_SIGNAL) < 0) {
    throw std::bad_alloc();
  }
  // No library timer: the caller owns timeouts, as it does with OpenSSL.
  gnutls_handshake_set_timeout(session_, 0);
  gnutls_transport_set_int(session_, fd_);
  if ((flags & GNUTLS_SERVER) != 0) {
    gnutls_session_set_ptr(session_, this);
    gnutls_handshake_set_hook_function(session_, GNUTLS_HANDSHAKE_CLIENT_HELLO, GNUTLS_HOOK_PRE,
                                       &on_client_hello);
  }
}

gnutls_connection::~gnutls_connection() {
  gnutls_deinit(session_);
}

tls_io gnutls_connection::handshake() {
  if (final_) return *final_;
  constexpr int max_records_in_a_row = 64;
  int records_in_a_row = 0;
  for (;;) {
    const int result = gnutls_handshake(session_);
    if (result == GNUTLS_E_SUCCESS) {
      handshake_done_ = true;
      take_early_input();
      return tls_io::done;
    }
    if ((result == GNUTLS_E_AGAIN || result == GNUTLS_E_INTERRUPTED) &&
        gnutls_record_get_direction(session_) == 0) {
      // GnuTLS can ask for more while the next records already wait in the socket (it
      // takes one SSLv2-style record per call), or after the peer's EOF (found by
      // fuzz_tls): go on while there is input, end at EOF, so the caller never waits on a
      // socket that is already readable.
      const input_state input = peer_input();
      if (input == input_state::ended) return end(tls_io::closed);
      if (input == input_state::waiting && ++records_in_a_row < max_records_in_a_row) continue;
    }
    // Warning alerts are not fatal; the handshake goes on.
    if (result == GNUTLS_E_AGAIN || result == GNUTLS_E_INTERRUPTED ||
        gnutls_error_is_fatal(result) != 0) {
      return finish(result);
    }
  }
}

void gnutls_connection::take_early_input() {
  if (!early_enabled_ || gnutls_session_is_resumed(session_) == 0 ||
      (gnutls_session_get_flags(session_) & GNUTLS_SFLAGS_EARLY_DATA) == 0) {
    return;
  }
  std::uint8_t buffer[4096];
  for (;;) {
    const ssize_t n = gnutls_record_recv_early_data(session_, buffer, sizeof buffer);
    if (n <= 0) break;  // GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE: all taken (or a client)
    early_input_.add(buffer, static_cast<std::size_t>(n));
  }
}

tls_io gnutls_connection::read(std::uint8_t* data, std::size_t size, std::size_t& transferred) {
  transferred = 0;
  if (final_) return *final_;
  // Early data came before anything else the client sent.
  if (early_input_.take(data, size, transferred)) return tls_io::done;
  // Each pass below takes a record out of the read-ahead buffer, which pull refills from
  // the socket, so only a peer sending thousands of post-handshake messages in a row meets
  // this bound. Stopping there with records still read ahead leaves them until the peer's
  // next bytes end a readiness wait; a bound of 64 did that after a few hundred tickets
  // (hostile_tls_tickets_test).
  std::size_t records_in_a_row = 0;
  for (;;) {
    const ssize_t result = gnutls_record_recv(session_, data, size);
    if (result > 0) {
      transferred = static_cast<std::size_t>(result);
      return tls_io::done;
    }
    // close_notify; the session can still send ours.
    if (result == 0) return tls_io::closed;
    // GnuTLS answers "again" after a post-handshake message (a TLS 1.3 ticket) without
    // looking further: records read ahead behind it would wait for a readiness that never
    // comes.
    if ((result == GNUTLS_E_AGAIN || result == GNUTLS_E_INTERRUPTED) && read_ahead() > 0 &&
        gnutls_record_get_direction(session_) == 0 && ++records_in_a_row < input_capacity) {
      continue;
    }
    // A TLS 1.2 renegotiation request or a warning alert: a DNS client ignores both.
    if (result == GNUTLS_E_AGAIN || result == GNUTLS_E_INTERRUPTED ||
        gnutls_error_is_fatal(static_cast<int>(result)) != 0) {
      return finish(static_cast<int>(result));
    }
  }
}

tls_io gnutls_connection::write(const std::uint8_t* data, std::size_t size,
                                std::size_t& transferred) {
  transferred = 0;
  if (final_) return *final_;
  // After GNUTLS_E_AGAIN GnuTLS expects the same data again, which the interface promises.
  const ssize_t result = gnutls_record_send(session_, data, size);
  if (result >= 0) {
    transferred = static_cast<std::size_t>(result);
    return tls_io::done;
  }
  return finish(static_cast<int>(result));
}

void gnutls_connection::count_syscalls(syscall_counter& syscalls) {
  syscalls_ = &syscalls;
  input_ = std::make_unique_for_overwrite<std::uint8_t[]>(input_capacity);
  gnutls_transport_set_ptr(session_, this);
  gnutls_transport_set_pull_function(session_, &pull);
  gnutls_transport_set_pull_timeout_function(session_, &pull_timeout);
  gnutls_transport_set_vec_push_function(session_, &vec_push);
}

ssize_t gnutls_connection::pull(gnutls_transport_ptr_t transport, void* data, std::size_t size) {
  auto* self = static_cast<gnutls_connection*>(transport);
  if (self->read_ahead() == 0) {
    const ssize_t n =
        receive_stamped(self->fd_, self->input_.get(), input_capacity, self->newest_arrival_);
    self->syscalls_->count(n);
    if (n <= 0) return n;  // GnuTLS reads errno, which counting leaves alone
    self->input_begin_ = 0;
    self->input_end_ = static_cast<std::size_t>(n);
  }
  // Fewer octets than asked for are fine: GnuTLS pulls again for the rest.
  const std::size_t taken = std::min(size, self->read_ahead());
  std::memcpy(data, self->input_.get() + self->input_begin_, taken);
  self->input_begin_ += taken;
  return static_cast<ssize_t>(taken);
}

ssize_t gnutls_connection::vec_push(gnutls_transport_ptr_t transport, const giovec_t* pieces,
                                    int count) {
  const auto* self = static_cast<const gnutls_connection*>(transport);
  msghdr message{};
  message.msg_iov = const_cast<giovec_t*>(pieces);
  message.msg_iovlen = static_cast<std::size_t>(count);
  const ssize_t n = ::sendmsg(self->fd_, &message, MSG_NOSIGNAL);
  self->syscalls_->count(n);
  return n;
}

int gnutls_connection::pull_timeout(gnutls_transport_ptr_t transport, unsigned int ms) {
  // Not called on a session without timeouts (GNUTLS_NONBLOCK, no handshake timeout), but
  // GnuTLS's own would take the transport pointer for a descriptor.
  const auto* self = static_cast<const gnutls_connection*>(transport);
  if (self->read_ahead() > 0) return 1;
  pollfd ready{self->fd_, POLLIN, 0};
  const int n = ::poll(&ready, 1, ms == GNUTLS_INDEFINITE_TIMEOUT ? -1 : static_cast<int>(ms));
  self->syscalls_->count(n);
  return n;
}

tls_io gnutls_connection::shutdown() {
  if (final_) return *final_;
  const int result = gnutls_bye(session_, GNUTLS_SHUT_WR);
  return result == GNUTLS_E_SUCCESS ? tls_io::done : finish(result);
}

std::size_t gnutls_connection::pending() const {
  return gnutls_record_check_pending(session_) + read_ahead() + early_input_.pending();
}

std::size_t gnutls_connection::early_data_room() const {
  // The ticket's own limit, which GnuTLS takes from the ticket when resuming. A ticket that
  // announced no early data leaves GnuTLS's "not set", 0xffffffff (which only QUIC tickets
  // carry, RFC 9001 section 4.6.1; a DoT server announces what it takes).
  if (!early_enabled_ || !resuming_ || handshake_done_) return 0;
  const std::size_t room = gnutls_record_get_max_early_data_size(session_);
  return room == 0xffffffffu ? 0 : room;
}

tls_io gnutls_connection::write_early(const std::uint8_t* data, std::size_t size,
                                      std::size_t& transferred) {
  transferred = 0;
  if (final_) return *final_;
  // Buffered by GnuTLS, all of it, and sent after the ClientHello by the first handshake
  // step. GnuTLS 3.7 answers 0 rather than the size it took.
  const ssize_t result = gnutls_record_send_early_data(session_, data, size);
  if (result < 0) return finish(static_cast<int>(result));
  transferred = size;
  early_sent_ = true;
  return tls_io::done;
}

early_data_status gnutls_connection::early_data() const {
  const bool took =
      handshake_done_ && (gnutls_session_get_flags(session_) & GNUTLS_SFLAGS_EARLY_DATA) != 0;
  if (!early_sent_) return took ? early_data_status::accepted : early_data_status::not_sent;
  return took ? early_data_status::accepted : early_data_status::rejected;
}

bool gnutls_connection::resumed() const {
  return gnutls_session_is_resumed(session_) != 0;
}

std::unique_ptr<tls_ticket> gnutls_connection::ticket() {
  if (!resume_ || !handshake_done_) return nullptr;
  // Without a received TLS 1.3 ticket GnuTLS would wait for one, then return data that
  // cannot resume.
  if (gnutls_protocol_get_version(session_) == GNUTLS_TLS1_3 &&
      (gnutls_session_get_flags(session_) & GNUTLS_SFLAGS_SESSION_TICKET) == 0) {
    return nullptr;
  }
  auto ticket = std::make_unique<gnutls_ticket>();
  if (gnutls_session_get_data2(session_, &ticket->data()) < 0) return nullptr;
  return ticket;
}

std::string gnutls_connection::alpn() const {
  gnutls_datum_t name{};
  if (gnutls_alpn_get_selected_protocol(session_, &name) < 0 || name.data == nullptr) return {};
  return std::string(reinterpret_cast<const char*>(name.data), name.size);
}

std::string gnutls_connection::version() const {
  // The same spelling as OpenSSL, so reports do not depend on the backend.
  const gnutls_protocol_t version = gnutls_protocol_get_version(session_);
  switch (version) {
    case GNUTLS_TLS1_2:
      return "TLSv1.2";
    case GNUTLS_TLS1_3:
      return "TLSv1.3";
    default: {
      const char* name = gnutls_protocol_get_name(version);
      return name != nullptr ? name : "unknown";
    }
  }
}

gnutls_connection::input_state gnutls_connection::peer_input() const noexcept {
  if (read_ahead() > 0) return input_state::waiting;
  std::uint8_t byte = 0;
  const ssize_t n = ::recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  count_syscall(syscalls_, n);
  return n > 0 ? input_state::waiting : n == 0 ? input_state::ended : input_state::none;
}

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

bool gnutls_connection::peer_closed() const {
  if (read_ahead() > 0) return false;
  char byte;
  const ssize_t n = ::recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  count_syscall(syscalls_, n);
  return n == 0;
}

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
