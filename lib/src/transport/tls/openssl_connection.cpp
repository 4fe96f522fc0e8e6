// One OpenSSL session behind the tls_connection interface: handshake, read, write and
// shutdown steps, the saved session for resumption, and failures told apart by kind.

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <system_error>

#include <fmt/format.h>

#include "transport/tls/openssl_common.hpp"
#include "util/receive_time.hpp"
#include "util/syscall_counter.hpp"

namespace dnstransport::detail {
namespace {

// Alerts a peer sends when it rejected our certificate.
bool is_openssl_certificate_alert(int alert) {
  switch (alert) {
    case SSL_AD_BAD_CERTIFICATE:
    case SSL_AD_UNSUPPORTED_CERTIFICATE:
    case SSL_AD_CERTIFICATE_REVOKED:
    case SSL_AD_CERTIFICATE_EXPIRED:
    case SSL_AD_CERTIFICATE_UNKNOWN:
    case SSL_AD_UNKNOWN_CA:
    case SSL_AD_BAD_CERTIFICATE_STATUS_RESPONSE:
      return true;
    default:
      return false;
  }
}

// A socket BIO makes one read(2) or write(2) per BIO_read or BIO_write: each is counted as
// it returns, in the counter that is the BIO's callback argument.
long count_socket_call(BIO* bio, int oper, const char*, std::size_t, int, long, int ret,
                       std::size_t*) {
  if (oper == (BIO_CB_READ | BIO_CB_RETURN) || oper == (BIO_CB_WRITE | BIO_CB_RETURN)) {
    auto* counter = reinterpret_cast<syscall_counter*>(BIO_get_callback_arg(bio));
    ++counter->calls;
    if (ret <= 0 && BIO_should_retry(bio)) ++counter->would_block;
  }
  return ret;
}

// The client's read side (count_syscalls): recvmsg with the kernel's receive stamp, which
// OpenSSL's socket BIO cannot return; otherwise it reads as that BIO does (sock_read): a
// non-fatal error sets the retry flag, 0 is the peer's EOF (BIO_eof, which OpenSSL asks to
// tell an unexpected EOF apart), errno is left for the caller to read.
int stamped_read(BIO* bio, char* data, int size) {
  auto& reader = *static_cast<openssl_connection::stamped_reader*>(BIO_get_data(bio));
  BIO_clear_retry_flags(bio);
  if (data == nullptr || size <= 0) return 0;
  for (;;) {
    const ssize_t n =
        receive_stamped(reader.fd, data, static_cast<std::size_t>(size), reader.newest_arrival);
    reader.syscalls->count(n);
    if (n > 0) return static_cast<int>(n);
    if (n == 0) {
      BIO_set_flags(bio, BIO_FLAGS_IN_EOF);
      return 0;
    }
    switch (errno) {
      case EINTR:
        continue;
      case EAGAIN:
#if EWOULDBLOCK != EAGAIN
      case EWOULDBLOCK:
#endif
      case ENOTCONN:  // a Fast Open connect not made yet
      case EINPROGRESS:
      case EALREADY:
      case EPROTO:
        BIO_set_retry_read(bio);
        break;
      default:
        break;
    }
    return -1;
  }
}

long stamped_ctrl(BIO* bio, int command, long, void*) {
  switch (command) {
    case BIO_CTRL_EOF:
      return BIO_test_flags(bio, BIO_FLAGS_IN_EOF) != 0 ? 1 : 0;
    case BIO_CTRL_FLUSH:
      return 1;
    default:
      return 0;  // no kTLS, nothing pending, no descriptor to hand out
  }
}

// One method for every connection, made on first use and kept for the process.
const BIO_METHOD* stamped_reader_method() {
  static BIO_METHOD* const method = [] {
    BIO_METHOD* m =
        BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "dnstransport stamped read");
    if (m != nullptr &&
        (BIO_meth_set_read(m, &stamped_read) != 1 || BIO_meth_set_ctrl(m, &stamped_ctrl) != 1)) {
      BIO_meth_free(m);
      m = nullptr;
    }
    return m;
  }();
  return method;
}

}  // namespace

openssl_connection::openssl_connection(ssl_ptr ssl, bool early_data)
    : ssl_(std::move(ssl)), early_enabled_(early_data) {
  SSL_set_app_data(ssl_.get(), this);
}

tls_io openssl_connection::handshake() {
  if (final_) return *final_;
  if (early_enabled_ && !early_finished_ && SSL_is_server(ssl_.get()) == 1) {
    if (const tls_io r = take_early_input(); r != tls_io::done) return r;
  }
  begin_call();
  const int result = SSL_do_handshake(ssl_.get());
  return result == 1 ? tls_io::done : finish(result);
}

tls_io openssl_connection::take_early_input() {
  // A server that did not call this would skip the early data (rejected); one whose client
  // sent none gets FINISH at once.
  std::uint8_t buffer[4096];
  for (;;) {
    begin_call();
    std::size_t n = 0;
    const int result = SSL_read_early_data(ssl_.get(), buffer, sizeof buffer, &n);
    if (result == SSL_READ_EARLY_DATA_SUCCESS) {
      early_input_.add(buffer, n);
      continue;
    }
    if (result == SSL_READ_EARLY_DATA_FINISH) {
      early_finished_ = true;
      return tls_io::done;
    }
    return finish(0);
  }
}

tls_io openssl_connection::read(std::uint8_t* data, std::size_t size, std::size_t& transferred) {
  transferred = 0;
  if (final_) return *final_;
  // Early data came before anything else the client sent.
  if (early_input_.take(data, size, transferred)) return tls_io::done;
  begin_call();
  const int result = SSL_read_ex(ssl_.get(), data, size, &transferred);
  return result == 1 ? tls_io::done : finish(result);
}

tls_io openssl_connection::write(const std::uint8_t* data, std::size_t size,
                                 std::size_t& transferred) {
  transferred = 0;
  if (final_) return *final_;
  begin_call();
  const int result = SSL_write_ex(ssl_.get(), data, size, &transferred);
  return result == 1 ? tls_io::done : finish(result);
}

tls_io openssl_connection::shutdown() {
  if (final_) return *final_;
  begin_call();
  // 0 means our close_notify went out and the peer's has not arrived, which is all we ask.
  const int result = SSL_shutdown(ssl_.get());
  return result >= 0 ? tls_io::done : finish(result);
}

void openssl_connection::count_syscalls(syscall_counter& syscalls) {
  if (reader_.syscalls != nullptr) return;
  // SSL_set_fd gave the session one socket BIO for both directions. Reads go through a BIO
  // of ours that keeps the receive stamps (where one can be made); writes stay on it.
  const int fd = SSL_get_rfd(ssl_.get());
  const BIO_METHOD* method = stamped_reader_method();
  BIO* reader = fd >= 0 && method != nullptr ? BIO_new(method) : nullptr;
  if (reader != nullptr) {
    reader_.fd = fd;
    reader_.syscalls = &syscalls;
    BIO_set_data(reader, &reader_);
    BIO_set_init(reader, 1);
    SSL_set0_rbio(ssl_.get(), reader);  // drops the socket BIO's read reference
  }
  for (BIO* bio : {SSL_get_rbio(ssl_.get()), SSL_get_wbio(ssl_.get())}) {
    if (bio == nullptr || bio == reader || BIO_get_callback_ex(bio) == &count_socket_call) {
      continue;
    }
    BIO_set_callback_ex(bio, &count_socket_call);
    BIO_set_callback_arg(bio, reinterpret_cast<char*>(&syscalls));
  }
}

std::size_t openssl_connection::pending() const {
  const auto decrypted = static_cast<std::size_t>(SSL_pending(ssl_.get()));
  // Read ahead (the client), the next records may sit in the session's buffer, off the
  // socket: SSL_pending counts only the current record's data, SSL_has_pending those too.
  const std::size_t read_ahead = decrypted == 0 && SSL_has_pending(ssl_.get()) == 1 ? 1 : 0;
  return decrypted + read_ahead + early_input_.pending();
}

std::size_t openssl_connection::early_data_room() const {
  if (!early_enabled_ || early_sent_ || SSL_is_server(ssl_.get()) == 1 ||
      SSL_is_init_finished(ssl_.get()) == 1) {
    return 0;
  }
  const SSL_SESSION* session = SSL_get0_session(ssl_.get());
  return session == nullptr ? 0 : SSL_SESSION_get_max_early_data(session);
}

tls_io openssl_connection::write_early(const std::uint8_t* data, std::size_t size,
                                       std::size_t& transferred) {
  transferred = 0;
  if (final_) return *final_;
  begin_call();
  // The first call sends the ClientHello with the data; the handshake steps finish it.
  const int result = SSL_write_early_data(ssl_.get(), data, size, &transferred);
  if (result != 1) return finish(result);
  early_sent_ = true;
  return tls_io::done;
}

early_data_status openssl_connection::early_data() const {
  switch (SSL_get_early_data_status(ssl_.get())) {
    case SSL_EARLY_DATA_ACCEPTED:
      return early_data_status::accepted;
    case SSL_EARLY_DATA_REJECTED:
      return early_data_status::rejected;
    default:
      return early_data_status::not_sent;
  }
}

bool openssl_connection::resumed() const {
  return SSL_session_reused(ssl_.get()) == 1;
}

std::unique_ptr<tls_ticket> openssl_connection::ticket() {
  if (!latest_session_) return nullptr;
  // A copy: OpenSSL marks the connection's own session unusable when the connection is
  // freed without close_notify, which is how most DNS connections end.
  ssl_session_ptr copy(SSL_SESSION_dup(latest_session_.get()));
  if (!copy) return nullptr;
  return std::make_unique<openssl_ticket>(std::move(copy));
}

std::string openssl_connection::version() const {
  return SSL_get_version(ssl_.get());
}

std::string openssl_connection::alpn() const {
  const unsigned char* name = nullptr;
  unsigned int size = 0;
  SSL_get0_alpn_selected(ssl_.get(), &name, &size);
  return name == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(name), size);
}

int openssl_connection::on_new_session(SSL* ssl, SSL_SESSION* session) {
  auto* self = static_cast<openssl_connection*>(SSL_get_app_data(ssl));
  if (self == nullptr) return 0;
  self->latest_session_.reset(session);
  return 1;
}

void openssl_connection::begin_call() {
  ERR_clear_error();
  errno = 0;
}

tls_io openssl_connection::finish(int result) {
  const int saved_errno = errno;
  switch (SSL_get_error(ssl_.get(), result)) {
    case SSL_ERROR_WANT_READ:
      return tls_io::want_read;
    case SSL_ERROR_WANT_WRITE:
      return tls_io::want_write;
    case SSL_ERROR_ZERO_RETURN:
      // close_notify: the session is still sound enough to send ours back.
      return tls_io::closed;
    case SSL_ERROR_SYSCALL:
      // A socket error, or with neither errno nor a queued error, an EOF.
      if (saved_errno != 0) {
        return fail(tls_failure::reset,
                    std::error_code(saved_errno, std::generic_category()).message());
      }
      if (ERR_peek_error() == 0) return end(tls_io::closed);
      break;
    case SSL_ERROR_SSL:
      break;
    default:
      return fail(tls_failure::other, openssl_error_text(ERR_peek_error()));
  }
  const unsigned long code = ERR_peek_error();
  if (ERR_GET_LIB(code) == ERR_LIB_SYS) {
    return fail(tls_failure::reset, openssl_error_text(code));
  }
  if (ERR_GET_LIB(code) == ERR_LIB_SSL &&
      ERR_GET_REASON(code) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
    return end(tls_io::closed);
  }
  const tls_failure kind = classify(code);
  std::string message = openssl_error_text(code);
  const long verify_result = SSL_get_verify_result(ssl_.get());
  if (kind == tls_failure::certificate && verify_result != X509_V_OK) {
    message += fmt::format(" ({})", X509_verify_cert_error_string(verify_result));
  }
  return fail(kind, std::move(message));
}

tls_failure openssl_connection::classify(unsigned long code) const {
  if (ERR_GET_LIB(code) != ERR_LIB_SSL) return tls_failure::other;
  const int reason = ERR_GET_REASON(code);
  if (reason >= SSL_AD_REASON_OFFSET) {
    const int alert = reason - SSL_AD_REASON_OFFSET;
    if (alert == SSL_AD_PROTOCOL_VERSION) return tls_failure::protocol_version;
    if (is_openssl_certificate_alert(alert)) return tls_failure::certificate;
    return tls_failure::handshake_alert;
  }
  switch (reason) {
    case SSL_R_CERTIFICATE_VERIFY_FAILED:
      return tls_failure::certificate;
    case SSL_R_UNSUPPORTED_PROTOCOL:
    case SSL_R_NO_PROTOCOLS_AVAILABLE:
    case SSL_R_VERSION_TOO_LOW:
    case SSL_R_VERSION_TOO_HIGH:
    case SSL_R_WRONG_SSL_VERSION:
      return tls_failure::protocol_version;
    case SSL_R_WRONG_VERSION_NUMBER:
    case SSL_R_PACKET_LENGTH_TOO_LONG:
    case SSL_R_HTTP_REQUEST:
    case SSL_R_HTTPS_PROXY_REQUEST:
#ifdef SSL_R_RECORD_LAYER_FAILURE  // OpenSSL 3.2 and later
    case SSL_R_RECORD_LAYER_FAILURE:
#endif
      // Before the handshake completes these mean the bytes were never TLS records;
      // afterwards they mean a corrupted stream.
      return SSL_is_init_finished(ssl_.get()) ? tls_failure::other : tls_failure::not_tls;
    default:
      return tls_failure::other;
  }
}

tls_io openssl_connection::fail(tls_failure kind, std::string message) {
  failure_ = kind;
  error_message_ = std::move(message);
  return end(tls_io::error);
}

tls_io openssl_connection::end(tls_io result) {
  ERR_clear_error();
  final_ = result;
  return result;
}

}  // namespace dnstransport::detail
