// One GnuTLS session behind the tls_connection interface: the handshake, read, write and
// shutdown steps, early data, the saved session for resumption and what the handshake agreed
// on. Its socket I/O is in gnutls_connection_io.cpp, its failures in gnutls_failures.cpp,
// certificate checks in gnutls_verify.cpp; the class is in gnutls_common.hpp.

#include <gnutls/gnutls.h>

#include <cstdint>
#include <memory>
#include <new>
#include <string>

#include "transport/tls/gnutls_common.hpp"

namespace dnstransport::detail {

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

}  // namespace dnstransport::detail
