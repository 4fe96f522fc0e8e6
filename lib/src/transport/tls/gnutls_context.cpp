// GnuTLS client and server contexts behind the tls_backend.hpp interface: the set-up their
// sessions share (credentials, priority string with the version range, ticket key), CA files
// and name verification, SNI, ALPN, certificates and keys. Each connect/accept makes a
// gnutls_connection and applies the set-up to it.

#include <arpa/inet.h>
#include <gnutls/gnutls.h>

#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <dnstransport/error.hpp>

#include "transport/tls/gnutls_anti_replay.hpp"
#include "transport/tls/gnutls_common.hpp"
#include "transport/tls/tls_backend.hpp"

namespace dnstransport::detail {
namespace {

const char* version_keyword(tls_version version) {
  return version == tls_version::v1_3 ? "+VERS-TLS1.3" : "+VERS-TLS1.2";
}

}  // namespace

bool is_ip_literal(const std::string& name) {
  unsigned char address[16];
  return inet_pton(AF_INET, name.c_str(), address) == 1 ||
         inet_pton(AF_INET6, name.c_str(), address) == 1;
}

shared_setup::shared_setup(const std::optional<tls_version>& min_version,
                           const std::optional<tls_version>& max_version,
                           const std::string& priority) {
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
    throw setup_error(
        fmt::format("invalid TLS priority \"{}\": GnuTLS rejects \"{}\" at offset {} (\"{}\"): {}",
                    priority, full, error_position != nullptr ? error_position - full.c_str() : 0,
                    error_position != nullptr ? error_position : "", gnutls_strerror(result)));
  }
  priority_.reset(compiled);
}

void shared_setup::generate_ticket_key() {
  if (const int result = gnutls_session_ticket_key_generate(&ticket_key_.datum); result < 0) {
    throw setup_error(
        fmt::format("cannot create a TLS session ticket key: {}", gnutls_strerror(result)));
  }
}

shared_setup::~shared_setup() {
  if (ticket_key_.datum.data != nullptr) {
    gnutls_memset(ticket_key_.datum.data, 0, ticket_key_.datum.size);
  }
}

void shared_setup::apply(gnutls_session_t session) const {
  if (gnutls_priority_set(session, priority_.get()) < 0 ||
      gnutls_credentials_set(session, GNUTLS_CRD_CERTIFICATE, credentials_.get()) < 0) {
    throw std::bad_alloc();
  }
}

std::shared_ptr<const shared_setup> load_gnutls_client_setup(const tls_client_options& options) {
  auto setup = std::make_shared<shared_setup>(
      options.min_version, options.max_version,
      options.priority.empty() ? std::string(gnutls_client_priority) : options.priority);
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

namespace {

class gnutls_client_context final : public tls_client_context {
 public:
  explicit gnutls_client_context(const tls_client_options& options)
      : setup_(load_gnutls_client_setup(options)),
        alpn_names_(options.alpn),
        // RFC 6066 forbids IP literals in SNI.
        sni_(is_ip_literal(options.server_name) ? std::string() : options.server_name),
        verify_(options.verify),
        resume_(options.resume),
        early_data_(options.resume && options.early_data) {
    // GnuTLS copies the names when a session takes them.
    for (std::string& name : alpn_names_) {
      alpn_.push_back(gnutls_datum_t{reinterpret_cast<unsigned char*>(name.data()),
                                     static_cast<unsigned int>(name.size())});
    }
  }

  std::unique_ptr<tls_connection> connect(int fd, const tls_ticket* resume_from) override {
    // Not GNUTLS_ENABLE_EARLY_DATA: with it GnuTLS would announce early data on every
    // resumed connection, data or none; gnutls_record_send_early_data turns it on itself.
    auto session = std::make_unique<gnutls_connection>(setup_, fd, gnutls_client_flags, resume_);
    if (early_data_) session->enable_early_data();
    gnutls_session_t s = session->get();
    setup_->apply(s);
    if (!sni_.empty() && gnutls_server_name_set(s, GNUTLS_NAME_DNS, sni_.data(), sni_.size()) < 0) {
      throw std::bad_alloc();
    }
    if (!alpn_.empty() &&
        gnutls_alpn_set_protocols(s, alpn_.data(), static_cast<unsigned>(alpn_.size()), 0) < 0) {
      throw std::bad_alloc();
    }
    if (verify_) session->verify_once(chains_, setup_->verify_name());
    if (resume_) {
      if (const auto* ticket = dynamic_cast<const gnutls_ticket*>(resume_from)) {
        // Data GnuTLS cannot use only means a full handshake.
        if (gnutls_session_set_data(s, ticket->data().data, ticket->data().size) == 0) {
          session->set_resuming();
        }
      }
    }
    return session;
  }

  verified_chains::counts certificate_checks() const override { return chains_.totals(); }

 private:
  std::shared_ptr<const shared_setup> setup_;
  verified_chains chains_;
  std::vector<std::string> alpn_names_;
  std::vector<gnutls_datum_t> alpn_;
  std::string sni_;
  bool verify_;
  bool resume_;
  bool early_data_;
};

}  // namespace

std::shared_ptr<shared_setup> load_gnutls_server_setup(const tls_server_options& options) {
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

namespace {

std::shared_ptr<const shared_setup> load_server_setup(const tls_server_options& options) {
  if (options.session_tickets && !options.renew_tickets) {
    throw setup_error(
        "the gnutls server backend always renews session tickets; keeping them (no ticket "
        "renewal) needs the openssl backend");
  }
  if (options.tickets_per_handshake != 0) {
    throw setup_error(
        "the gnutls server backend sends one session ticket per handshake; a number of them "
        "needs the openssl backend");
  }
  return load_gnutls_server_setup(options);
}

class gnutls_server_context final : public tls_server_context {
 public:
  explicit gnutls_server_context(const tls_server_options& options)
      : setup_(load_server_setup(options)), alpn_names_(options.alpn) {
    if (options.early_data && setup_->ticket_key() != nullptr) {
      anti_replay_ = std::make_unique<gnutls_anti_replay>(options.refuse_early_data);
    }
    for (std::string& name : alpn_names_) {
      alpn_.push_back(gnutls_datum_t{reinterpret_cast<unsigned char*>(name.data()),
                                     static_cast<unsigned>(name.size())});
    }
  }

  std::unique_ptr<tls_connection> accept(int fd) override {
    const gnutls_datum_t* ticket_key = setup_->ticket_key();
    auto session = std::make_unique<gnutls_connection>(
        setup_, fd,
        GNUTLS_SERVER | (ticket_key != nullptr ? 0 : GNUTLS_NO_TICKETS) |
            (anti_replay_ ? GNUTLS_ENABLE_EARLY_DATA : 0),
        false);
    gnutls_session_t s = session->get();
    setup_->apply(s);
    if (anti_replay_) {
      anti_replay_->enable(s);
      gnutls_record_set_max_early_data_size(s, max_early_data);
    }
    if (ticket_key != nullptr && gnutls_session_ticket_enable_server(s, ticket_key) < 0) {
      throw std::bad_alloc();
    }
    // Without GNUTLS_ALPN_MANDATORY, clients that offer none of the listener's protocols
    // still get through; GNUTLS_ALPN_SERVER_PRECEDENCE: the listener's order wins. GnuTLS
    // copies the names.
    if (!alpn_.empty() &&
        gnutls_alpn_set_protocols(s, alpn_.data(), static_cast<unsigned>(alpn_.size()),
                                  GNUTLS_ALPN_SERVER_PRECEDENCE) < 0) {
      throw std::bad_alloc();
    }
    return session;
  }

 private:
  std::shared_ptr<const shared_setup> setup_;
  std::vector<std::string> alpn_names_;
  std::vector<gnutls_datum_t> alpn_;                 // points into alpn_names_
  std::unique_ptr<gnutls_anti_replay> anti_replay_;  // set: early data accepted
};

}  // namespace

std::unique_ptr<tls_client_context> make_gnutls_client_context(const tls_client_options& options) {
  return std::make_unique<gnutls_client_context>(options);
}

std::unique_ptr<tls_server_context> make_gnutls_server_context(const tls_server_options& options) {
  return std::make_unique<gnutls_server_context>(options);
}

}  // namespace dnstransport::detail
