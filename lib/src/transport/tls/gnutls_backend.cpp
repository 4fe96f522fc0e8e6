// The tls_backend.hpp interface over GnuTLS 3.7.

#include <arpa/inet.h>
#include <gnutls/gnutls.h>
#include <sys/socket.h>

#include <algorithm>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include <dnstransport/error.hpp>

#include "transport/tls/tls_backend.hpp"

namespace dnstransport::detail {
namespace {

// GnuTLS initialises itself when loaded unless told otherwise (GNUTLS_NO_IMPLICIT_INIT or a
// static build); the calls are reference counted, so each context holding one is safe.
class gnutls_library {
 public:
  gnutls_library() {
    if (const int result = gnutls_global_init(); result < 0) {
      throw setup_error(fmt::format("cannot initialise GnuTLS: {}", gnutls_strerror(result)));
    }
  }
  ~gnutls_library() { gnutls_global_deinit(); }
  gnutls_library(const gnutls_library&) = delete;
  gnutls_library& operator=(const gnutls_library&) = delete;
};

// A datum GnuTLS allocated for us.
struct gnutls_buffer {
  gnutls_datum_t datum{nullptr, 0};
  gnutls_buffer() = default;
  gnutls_buffer(const gnutls_buffer&) = delete;
  gnutls_buffer& operator=(const gnutls_buffer&) = delete;
  ~gnutls_buffer() { gnutls_free(datum.data); }
};

const char* version_keyword(tls_version version) {
  return version == tls_version::v1_3 ? "+VERS-TLS1.3" : "+VERS-TLS1.2";
}

// Sets of versions as bit masks, to intersect what a client offers with what we allow.
constexpr unsigned version_bit(tls_version version) {
  return version == tls_version::v1_3 ? 2u : 1u;
}

unsigned version_bit(unsigned char major, unsigned char minor) {
  if (major != 3) return 0;
  if (minor == 3) return version_bit(tls_version::v1_2);
  if (minor == 4) return version_bit(tls_version::v1_3);
  return 0;
}

struct credentials_deleter {
  void operator()(gnutls_certificate_credentials_t credentials) const noexcept {
    gnutls_certificate_free_credentials(credentials);
  }
};
struct priority_deleter {
  void operator()(gnutls_priority_t priority) const noexcept { gnutls_priority_deinit(priority); }
};

// Credentials and the compiled priority string, which both roles need and which sessions
// keep alive through a shared pointer (GnuTLS does not reference count them).
class shared_setup {
 public:
  shared_setup(const std::optional<tls_version>& min_version,
               const std::optional<tls_version>& max_version, const std::string& priority) {
    gnutls_certificate_credentials_t credentials = nullptr;
    if (const int result = gnutls_certificate_allocate_credentials(&credentials); result < 0) {
      throw setup_error(
          fmt::format("cannot allocate GnuTLS credentials: {}", gnutls_strerror(result)));
    }
    credentials_.reset(credentials);
    // The user's string picks algorithms; the version range always comes from the options
    // so that both backends negotiate the same versions.
    std::string full = priority.empty() ? "NORMAL" : priority;
    full += ":-VERS-ALL";
    const tls_version low = min_version.value_or(tls_version::v1_2);
    const tls_version high = max_version.value_or(tls_version::v1_3);
    for (const tls_version version : {tls_version::v1_2, tls_version::v1_3}) {
      if (version >= low && version <= high) {
        full += ':';
        full += version_keyword(version);
        versions_ |= version_bit(version);
      }
    }
    gnutls_priority_t compiled = nullptr;
    const char* error_position = nullptr;
    if (const int result = gnutls_priority_init(&compiled, full.c_str(), &error_position);
        result < 0) {
      throw setup_error(fmt::format(
          "invalid TLS priority \"{}\": GnuTLS rejects \"{}\" at offset {} (\"{}\"): {}", priority,
          full, error_position != nullptr ? error_position - full.c_str() : 0,
          error_position != nullptr ? error_position : "", gnutls_strerror(result)));
    }
    priority_.reset(compiled);
  }

  gnutls_certificate_credentials_t credentials() const noexcept { return credentials_.get(); }

  // The versions this side allows, as a mask of version_bit() values.
  unsigned versions() const noexcept { return versions_; }

  // One ticket key per server context, so every responder thread can decrypt every ticket
  // the server issued. Null until generated.
  void generate_ticket_key() {
    if (const int result = gnutls_session_ticket_key_generate(&ticket_key_.datum); result < 0) {
      throw setup_error(
          fmt::format("cannot create a TLS session ticket key: {}", gnutls_strerror(result)));
    }
  }
  const gnutls_datum_t* ticket_key() const noexcept {
    return ticket_key_.datum.data != nullptr ? &ticket_key_.datum : nullptr;
  }

  // The name a client checks the server certificate against. GnuTLS keeps the pointer for
  // the session's lifetime, so it lives here rather than in the context. Null for none.
  void set_verify_name(std::string name) { verify_name_ = std::move(name); }
  const char* verify_name() const noexcept {
    return verify_name_.empty() ? nullptr : verify_name_.c_str();
  }

  ~shared_setup() {
    if (ticket_key_.datum.data != nullptr) {
      gnutls_memset(ticket_key_.datum.data, 0, ticket_key_.datum.size);
    }
  }
  shared_setup(const shared_setup&) = delete;
  shared_setup& operator=(const shared_setup&) = delete;

  // Applies the shared settings to a new session.
  void apply(gnutls_session_t session) const {
    if (gnutls_priority_set(session, priority_.get()) < 0 ||
        gnutls_credentials_set(session, GNUTLS_CRD_CERTIFICATE, credentials_.get()) < 0) {
      throw std::bad_alloc();
    }
  }

 private:
  gnutls_library library_;
  std::unique_ptr<gnutls_certificate_credentials_st, credentials_deleter> credentials_;
  std::unique_ptr<gnutls_priority_st, priority_deleter> priority_;
  unsigned versions_ = 0;
  gnutls_buffer ticket_key_;
  std::string verify_name_;
};

class gnutls_ticket final : public tls_ticket {
 public:
  const gnutls_datum_t& data() const noexcept { return data_.datum; }
  gnutls_datum_t& data() noexcept { return data_.datum; }

 private:
  gnutls_buffer data_;
};

bool is_certificate_alert(gnutls_alert_description_t alert) {
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

class gnutls_connection final : public tls_connection {
 public:
  gnutls_connection(std::shared_ptr<const shared_setup> setup, int fd, unsigned int flags,
                    bool resume)
      : setup_(std::move(setup)), fd_(fd), resume_(resume) {
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

  ~gnutls_connection() override { gnutls_deinit(session_); }

  gnutls_connection(const gnutls_connection&) = delete;
  gnutls_connection& operator=(const gnutls_connection&) = delete;

  gnutls_session_t get() const noexcept { return session_; }

  tls_io handshake() override {
    if (final_) return *final_;
    for (;;) {
      const int result = gnutls_handshake(session_);
      if (result == GNUTLS_E_SUCCESS) {
        handshake_done_ = true;
        return tls_io::done;
      }
      // Warning alerts are not fatal; the handshake goes on.
      if (result == GNUTLS_E_AGAIN || result == GNUTLS_E_INTERRUPTED ||
          gnutls_error_is_fatal(result) != 0) {
        return finish(result);
      }
    }
  }

  tls_io read(std::uint8_t* data, std::size_t size, std::size_t& transferred) override {
    transferred = 0;
    if (final_) return *final_;
    for (;;) {
      const ssize_t result = gnutls_record_recv(session_, data, size);
      if (result > 0) {
        transferred = static_cast<std::size_t>(result);
        return tls_io::done;
      }
      // close_notify; the session can still send ours.
      if (result == 0) return tls_io::closed;
      // A TLS 1.2 renegotiation request or a warning alert: a DNS client ignores both.
      if (result == GNUTLS_E_AGAIN || result == GNUTLS_E_INTERRUPTED ||
          gnutls_error_is_fatal(static_cast<int>(result)) != 0) {
        return finish(static_cast<int>(result));
      }
    }
  }

  tls_io write(const std::uint8_t* data, std::size_t size, std::size_t& transferred) override {
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

  tls_io shutdown() override {
    if (final_) return *final_;
    const int result = gnutls_bye(session_, GNUTLS_SHUT_WR);
    return result == GNUTLS_E_SUCCESS ? tls_io::done : finish(result);
  }

  std::size_t pending() const override { return gnutls_record_check_pending(session_); }

  bool resumed() const override { return gnutls_session_is_resumed(session_) != 0; }

  std::unique_ptr<tls_ticket> ticket() override {
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

  std::string version() const override {
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

  tls_failure failure() const override { return failure_; }
  std::string error_message() const override { return error_message_; }

 private:
  tls_io finish(int result) {
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
        const gnutls_alert_description_t alert = gnutls_alert_get(session_);
        const tls_failure kind = alert == GNUTLS_A_PROTOCOL_VERSION ? tls_failure::protocol_version
                                 : is_certificate_alert(alert)      ? tls_failure::certificate
                                                                    : tls_failure::handshake_alert;
        const char* name = gnutls_alert_get_name(alert);
        return fail(kind, fmt::format("{} ({})", gnutls_strerror(result),
                                      name != nullptr ? name : "unknown alert"));
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

  // Records which of our versions the client offers, for telling a version mismatch apart
  // from other negotiation failures.
  static int on_client_hello(gnutls_session_t session, unsigned int, unsigned int,
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

  // GnuTLS leaves telling the peer why the handshake failed to the application; OpenSSL
  // always does it. Best effort: the session is over either way.
  void send_alert(int result) { gnutls_alert_send_appropriate(session_, result); }

  bool peer_closed() const {
    char byte;
    return ::recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
  }

  std::string verification_message(int result) const {
    const unsigned int status = gnutls_session_get_verify_cert_status(session_);
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

  tls_io fail(tls_failure kind, std::string message) {
    failure_ = kind;
    error_message_ = std::move(message);
    return end(tls_io::error);
  }

  // GnuTLS sessions are unusable after a fatal error; answer the same from then on.
  tls_io end(tls_io result) {
    final_ = result;
    return result;
  }

  std::shared_ptr<const shared_setup> setup_;
  int fd_;
  gnutls_session_t session_ = nullptr;
  bool resume_;
  bool handshake_done_ = false;
  bool client_hello_seen_ = false;
  unsigned offered_versions_ = 0;
  std::optional<tls_io> final_;
  tls_failure failure_ = tls_failure::none;
  std::string error_message_;
};

// Everything a client context shares with its sessions: trust anchors and the name to
// verify.
std::shared_ptr<const shared_setup> load_client_setup(const tls_client_options& options) {
  auto setup =
      std::make_shared<shared_setup>(options.min_version, options.max_version, options.priority);
  if (!options.ca_file.empty()) {
    const int result = gnutls_certificate_set_x509_trust_file(
        setup->credentials(), options.ca_file.c_str(), GNUTLS_X509_FMT_PEM);
    if (result <= 0) {
      throw setup_error(fmt::format("cannot load TLS CA file {}: {}", options.ca_file.string(),
                                    result < 0 ? gnutls_strerror(result) : "no certificate found"));
    }
  }
  if (options.verify && options.ca_file.empty()) {
    if (const int result = gnutls_certificate_set_x509_system_trust(setup->credentials());
        result < 0) {
      throw setup_error(
          fmt::format("cannot load the system's TLS trust anchors: {}", gnutls_strerror(result)));
    }
  }
  // GnuTLS checks an IP literal against the certificate's IP addresses by itself.
  setup->set_verify_name(options.server_name);
  return setup;
}

bool is_ip_literal(const std::string& name) {
  unsigned char address[16];
  return inet_pton(AF_INET, name.c_str(), address) == 1 ||
         inet_pton(AF_INET6, name.c_str(), address) == 1;
}

class gnutls_client_context final : public tls_client_context {
 public:
  explicit gnutls_client_context(const tls_client_options& options)
      : setup_(load_client_setup(options)),
        alpn_names_(options.alpn),
        // RFC 6066 forbids IP literals in SNI.
        sni_(is_ip_literal(options.server_name) ? std::string() : options.server_name),
        verify_(options.verify),
        resume_(options.resume) {
    // GnuTLS copies the names when a session takes them.
    for (std::string& name : alpn_names_) {
      alpn_.push_back(gnutls_datum_t{reinterpret_cast<unsigned char*>(name.data()),
                                     static_cast<unsigned int>(name.size())});
    }
  }

  std::unique_ptr<tls_connection> connect(int fd, const tls_ticket* resume_from) override {
    auto session = std::make_unique<gnutls_connection>(setup_, fd, GNUTLS_CLIENT, resume_);
    gnutls_session_t s = session->get();
    setup_->apply(s);
    if (!sni_.empty() && gnutls_server_name_set(s, GNUTLS_NAME_DNS, sni_.data(), sni_.size()) < 0) {
      throw std::bad_alloc();
    }
    if (!alpn_.empty() &&
        gnutls_alpn_set_protocols(s, alpn_.data(), static_cast<unsigned>(alpn_.size()), 0) < 0) {
      throw std::bad_alloc();
    }
    if (verify_) gnutls_session_set_verify_cert(s, setup_->verify_name(), 0);
    if (resume_) {
      if (const auto* ticket = dynamic_cast<const gnutls_ticket*>(resume_from)) {
        // Data GnuTLS cannot use only means a full handshake.
        gnutls_session_set_data(s, ticket->data().data, ticket->data().size);
      }
    }
    return session;
  }

 private:
  std::shared_ptr<const shared_setup> setup_;
  std::vector<std::string> alpn_names_;
  std::vector<gnutls_datum_t> alpn_;
  std::string sni_;
  bool verify_;
  bool resume_;
};

// Everything a server context shares with its sessions: credentials from the files and,
// when tickets are on, the ticket key.
std::shared_ptr<const shared_setup> load_server_setup(const tls_server_options& options) {
  if (options.session_tickets && !options.renew_tickets) {
    throw setup_error(
        "the gnutls server backend always renews session tickets; keeping them (no ticket "
        "renewal) needs the openssl backend");
  }
  auto setup =
      std::make_shared<shared_setup>(options.min_version, options.max_version, options.priority);
  gnutls_buffer certificate;
  gnutls_buffer key;
  if (gnutls_load_file(options.certificate_file.c_str(), &certificate.datum) < 0) {
    throw setup_error(
        fmt::format("cannot read TLS certificate file {}", options.certificate_file.string()));
  }
  if (gnutls_load_file(options.key_file.c_str(), &key.datum) < 0) {
    throw setup_error(fmt::format("cannot read TLS key file {}", options.key_file.string()));
  }
  if (const int result = gnutls_certificate_set_x509_key_mem2(
          setup->credentials(), &certificate.datum, &key.datum, GNUTLS_X509_FMT_PEM, nullptr, 0);
      result < 0) {
    if (result == GNUTLS_E_CERTIFICATE_KEY_MISMATCH) {
      throw setup_error(fmt::format("TLS key file {} does not match certificate file {}: {}",
                                    options.key_file.string(), options.certificate_file.string(),
                                    gnutls_strerror(result)));
    }
    throw setup_error(fmt::format("cannot load TLS certificate file {} with key file {}: {}",
                                  options.certificate_file.string(), options.key_file.string(),
                                  gnutls_strerror(result)));
  }
  if (options.session_tickets) setup->generate_ticket_key();
  return setup;
}

class gnutls_server_context final : public tls_server_context {
 public:
  explicit gnutls_server_context(const tls_server_options& options)
      : setup_(load_server_setup(options)) {}

  std::unique_ptr<tls_connection> accept(int fd) override {
    const gnutls_datum_t* ticket_key = setup_->ticket_key();
    auto session = std::make_unique<gnutls_connection>(
        setup_, fd, GNUTLS_SERVER | (ticket_key != nullptr ? 0 : GNUTLS_NO_TICKETS), false);
    gnutls_session_t s = session->get();
    setup_->apply(s);
    if (ticket_key != nullptr && gnutls_session_ticket_enable_server(s, ticket_key) < 0) {
      throw std::bad_alloc();
    }
    // Without GNUTLS_ALPN_MANDATORY, clients that offer no "dot" still get through. GnuTLS
    // copies the name.
    const gnutls_datum_t dot{alpn_dot_, sizeof alpn_dot_};
    if (gnutls_alpn_set_protocols(s, &dot, 1, 0) < 0) throw std::bad_alloc();
    return session;
  }

 private:
  std::shared_ptr<const shared_setup> setup_;
  unsigned char alpn_dot_[3] = {'d', 'o', 't'};
};

}  // namespace

std::unique_ptr<tls_client_context> make_gnutls_client_context(const tls_client_options& options) {
  return std::make_unique<gnutls_client_context>(options);
}

std::unique_ptr<tls_server_context> make_gnutls_server_context(const tls_server_options& options) {
  return std::make_unique<gnutls_server_context>(options);
}

}  // namespace dnstransport::detail
