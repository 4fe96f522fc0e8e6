// OpenSSL client and server contexts behind the tls_backend.hpp interface: protocol
// versions and ciphers, CA files and name verification, SNI, ALPN, certificates and keys,
// session tickets. Each connect/accept hands the session to openssl_connection.

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <dnstransport/error.hpp>

#include "transport/tls/openssl_common.hpp"
#include "transport/tls/tls_backend.hpp"

namespace dnstransport::detail {
namespace {

// For setup errors: the reason OpenSSL queued for the call that just failed.
std::string take_setup_error() {
  std::string text = openssl_error_text(ERR_peek_error());
  ERR_clear_error();
  return text;
}

int openssl_version(tls_version version) {
  return version == tls_version::v1_3 ? TLS1_3_VERSION : TLS1_2_VERSION;
}

bool is_ip_literal(const std::string& name) {
  unsigned char address[16];
  return inet_pton(AF_INET, name.c_str(), address) == 1 ||
         inet_pton(AF_INET6, name.c_str(), address) == 1;
}

// Settings both roles share: the version range and the cipher selection.
void configure_protocol(SSL_CTX* ctx, const std::optional<tls_version>& min_version,
                        const std::optional<tls_version>& max_version,
                        const std::string& priority) {
  SSL_CTX_set_min_proto_version(ctx, openssl_version(min_version.value_or(tls_version::v1_2)));
  if (max_version) SSL_CTX_set_max_proto_version(ctx, openssl_version(*max_version));

  // OpenSSL keeps TLS 1.3 suites apart from the classic cipher list; the option takes both
  // kinds in one string, so route each entry to the setting that understands it.
  std::string cipher_list;
  std::string ciphersuites;
  std::size_t begin = 0;
  while (begin < priority.size()) {
    std::size_t end = priority.find_first_of(":, ", begin);
    if (end == std::string::npos) end = priority.size();
    if (end > begin) {
      std::string& target = priority.compare(begin, 4, "TLS_") == 0 ? ciphersuites : cipher_list;
      if (!target.empty()) target += ':';
      target.append(priority, begin, end - begin);
    }
    begin = end + 1;
  }
  if (!cipher_list.empty() && SSL_CTX_set_cipher_list(ctx, cipher_list.c_str()) != 1) {
    throw setup_error(
        fmt::format("invalid TLS priority \"{}\": OpenSSL accepts no cipher in "
                    "\"{}\" ({})",
                    priority, cipher_list, take_setup_error()));
  }
  if (!ciphersuites.empty() && SSL_CTX_set_ciphersuites(ctx, ciphersuites.c_str()) != 1) {
    throw setup_error(
        fmt::format("invalid TLS priority \"{}\": OpenSSL accepts no TLS 1.3 "
                    "ciphersuite in \"{}\" ({})",
                    priority, ciphersuites, take_setup_error()));
  }
}

ssl_ctx_ptr new_ssl_ctx(const SSL_METHOD* method) {
  ssl_ctx_ptr ctx(SSL_CTX_new(method));
  if (!ctx) throw setup_error("cannot create an OpenSSL context: " + take_setup_error());
  // The caller may retry a write after a partial one from a buffer that moved.
  SSL_CTX_set_mode(ctx.get(), SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  return ctx;
}

// SSL_CTX_set_cert_verify_callback: verifies the chain the server sent, unless the same
// chain passed before under this context (`arg`: its verified_chains). OpenSSL has parsed
// the certificates by then; what a known chain saves is the path building, the signature
// checks of the chain and the name check.
int verify_chain_once(X509_STORE_CTX* store, void* arg) {
  auto& chains = *static_cast<verified_chains*>(arg);
  verified_chains::digest chain{};
  bool hashed = false;
  if (EVP_MD_CTX* md = EVP_MD_CTX_new()) {
    hashed = EVP_DigestInit_ex(md, EVP_sha256(), nullptr) == 1;
    // The chain as sent, leaf first (the leaf alone if OpenSSL gives no list).
    const STACK_OF(X509)* sent = X509_STORE_CTX_get0_untrusted(store);
    const int count = sent != nullptr ? sk_X509_num(sent) : 0;
    for (int i = 0; hashed && i < std::max(count, 1); ++i) {
      X509* certificate = count > 0 ? sk_X509_value(sent, i) : X509_STORE_CTX_get0_cert(store);
      unsigned char* der = nullptr;  // the encoding OpenSSL kept from the parse
      const int size = certificate != nullptr ? i2d_X509(certificate, &der) : -1;
      hashed = size > 0 && EVP_DigestUpdate(md, der, static_cast<std::size_t>(size)) == 1;
      OPENSSL_free(der);
    }
    unsigned int size = 0;
    hashed = hashed && EVP_DigestFinal_ex(md, chain.data(), &size) == 1 && size == chain.size();
    EVP_MD_CTX_free(md);
  }
  if (hashed && chains.known(chain)) return 1;
  chains.count_verification();
  const int verified = X509_verify_cert(store);
  if (verified == 1 && hashed) chains.add(chain);
  return verified;
}

class openssl_client_context final : public tls_client_context {
 public:
  explicit openssl_client_context(const tls_client_options& options)
      : ctx_(new_ssl_ctx(TLS_client_method())),
        resume_(options.resume),
        early_data_(options.resume && options.early_data) {
    SSL_CTX* ctx = ctx_.get();
    configure_protocol(ctx, options.min_version, options.max_version, options.priority);
    // One read(2) takes whatever the socket holds, up to the session's read buffer, instead
    // of a record's header and then its body: one call per answer rather than two.
    // pending() then also counts records read ahead and not decrypted yet.
    SSL_CTX_set_read_ahead(ctx, 1);

    if (!options.alpn.empty()) {
      std::string wire;
      for (const std::string& protocol : options.alpn) {
        wire += static_cast<char>(protocol.size());
        wire += protocol;
      }
      // Unlike most of OpenSSL, this returns 0 on success.
      if (SSL_CTX_set_alpn_protos(ctx, reinterpret_cast<const unsigned char*>(wire.data()),
                                  static_cast<unsigned>(wire.size())) != 0) {
        throw setup_error("cannot set the TLS ALPN protocols: " + take_setup_error());
      }
    }

    if (!options.ca_file.empty() &&
        SSL_CTX_load_verify_locations(ctx, options.ca_file.c_str(), nullptr) != 1) {
      throw setup_error(fmt::format("cannot load TLS CA file {}: {}", options.ca_file.string(),
                                    take_setup_error()));
    }
    if (options.verify) {
      if (options.ca_file.empty() && SSL_CTX_set_default_verify_paths(ctx) != 1) {
        throw setup_error("cannot load the system's TLS trust anchors: " + take_setup_error());
      }
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
      SSL_CTX_set_cert_verify_callback(ctx, &verify_chain_once, &chains_);
      // Set once here so every session inherits the name check without per-connection work.
      X509_VERIFY_PARAM* param = SSL_CTX_get0_param(ctx);
      X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
      const int set = is_ip_literal(options.server_name)
                          ? X509_VERIFY_PARAM_set1_ip_asc(param, options.server_name.c_str())
                      : options.server_name.empty()
                          ? 1
                          : X509_VERIFY_PARAM_set1_host(param, options.server_name.c_str(), 0);
      if (set != 1) {
        throw setup_error(fmt::format("invalid TLS server name \"{}\": {}", options.server_name,
                                      take_setup_error()));
      }
    }
    // RFC 6066 forbids IP literals in SNI.
    if (!is_ip_literal(options.server_name)) sni_ = options.server_name;

    if (resume_) {
      // Sessions are handed to the caller through ticket(); OpenSSL's own cache would only
      // add locking shared by all threads.
      SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL);
      SSL_CTX_sess_set_new_cb(ctx, &openssl_connection::on_new_session);
    }
  }

  std::unique_ptr<tls_connection> connect(int fd, const tls_ticket* resume_from) override {
    ssl_ptr ssl(SSL_new(ctx_.get()));
    if (!ssl || SSL_set_fd(ssl.get(), fd) != 1) throw std::bad_alloc();
    SSL_set_connect_state(ssl.get());
    if (!sni_.empty()) SSL_set_tlsext_host_name(ssl.get(), sni_.c_str());
    if (resume_) {
      if (const auto* ticket = dynamic_cast<const openssl_ticket*>(resume_from)) {
        // A copy each time: a TLS 1.3 session OpenSSL has resumed from is not offered again,
        // and a server that renews no ticket on resumption (dnsdist, unbound with
        // tls-session-ticket-keys) would otherwise see every other handshake in full. Both
        // backends thus follow one policy: offer the newest ticket the server gave, as often
        // as needed, until a newer one arrives.
        const ssl_session_ptr copy(SSL_SESSION_dup(ticket->get()));
        if (copy) SSL_set_session(ssl.get(), copy.get());
      }
    }
    return std::make_unique<openssl_connection>(std::move(ssl), early_data_);
  }

  verified_chains::counts certificate_checks() const override { return chains_.totals(); }

 private:
  verified_chains chains_;  // before ctx_, whose callback points at it
  ssl_ctx_ptr ctx_;
  bool resume_;
  bool early_data_;
  std::string sni_;
};

// A ticket that decrypts is used without issuing a new one, so the client resumes from the
// same ticket again; any other ticket leads to a full handshake, as OpenSSL would do.
SSL_TICKET_RETURN keep_ticket(SSL*, SSL_SESSION*, const unsigned char*, size_t,
                              SSL_TICKET_STATUS status, void*) {
  switch (status) {
    case SSL_TICKET_SUCCESS:
    case SSL_TICKET_SUCCESS_RENEW:
      return SSL_TICKET_RETURN_USE;
    case SSL_TICKET_EMPTY:
    case SSL_TICKET_NO_DECRYPT:
      return SSL_TICKET_RETURN_IGNORE_RENEW;
    default:
      return SSL_TICKET_RETURN_ABORT;
  }
}

// Picks the listener's most preferred protocol among those the client offers (`arg`: the
// listener's list); any other offer is answered without ALPN rather than with a fatal alert,
// so clients with other or no ALPN settings still get through.
int select_alpn(SSL*, const unsigned char** out, unsigned char* out_size, const unsigned char* in,
                unsigned int in_size, void* arg) {
  for (const std::string& wanted : *static_cast<const std::vector<std::string>*>(arg)) {
    for (unsigned int i = 0; i < in_size;) {
      const unsigned int size = in[i];
      if (i + 1 + size > in_size) break;
      if (size == wanted.size() && std::memcmp(in + i + 1, wanted.data(), size) == 0) {
        *out = in + i + 1;
        *out_size = static_cast<unsigned char>(size);
        return SSL_TLSEXT_ERR_OK;
      }
      i += 1 + size;
    }
  }
  return SSL_TLSEXT_ERR_NOACK;
}

class openssl_server_context final : public tls_server_context {
 public:
  explicit openssl_server_context(const tls_server_options& options)
      : ctx_(new_ssl_ctx(TLS_server_method())), alpn_(options.alpn) {
    SSL_CTX* ctx = ctx_.get();
    configure_protocol(ctx, options.min_version, options.max_version, options.priority);

    if (SSL_CTX_use_certificate_chain_file(ctx, options.certificate_file.c_str()) != 1) {
      throw setup_error(fmt::format("cannot load TLS certificate file {}: {}",
                                    options.certificate_file.string(), take_setup_error()));
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, options.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
      throw setup_error(fmt::format("cannot load TLS key file {}: {}", options.key_file.string(),
                                    take_setup_error()));
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
      throw setup_error(fmt::format("TLS key file {} does not match certificate file {}: {}",
                                    options.key_file.string(), options.certificate_file.string(),
                                    take_setup_error()));
    }

    // Resumption rests on stateless tickets alone: a server-side cache would be a lock
    // shared by every responder thread. Without tickets nothing can be resumed.
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    static constexpr unsigned char session_id_context[] = "dnstransport";
    SSL_CTX_set_session_id_context(ctx, session_id_context, sizeof session_id_context - 1);
    if (!options.session_tickets) {
      SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
      SSL_CTX_set_num_tickets(ctx, 0);
    } else if (!options.renew_tickets) {
      SSL_CTX_set_session_ticket_cb(ctx, nullptr, &keep_ticket, nullptr);
    }
    if (options.session_tickets && options.tickets_per_handshake != 0) {
      SSL_CTX_set_num_tickets(ctx, options.tickets_per_handshake);
    }
    if (options.session_tickets && options.early_data) {
      // OpenSSL's guard against replayed early data keeps used tickets in the session cache,
      // which is off here: the guard is off too (tls_server_options::early_data).
      SSL_CTX_set_max_early_data(ctx, max_early_data);
      SSL_CTX_set_options(ctx, SSL_OP_NO_ANTI_REPLAY);
      if (options.refuse_early_data) {
        SSL_CTX_set_allow_early_data_cb(
            ctx, [](SSL*, void*) { return 0; }, nullptr);
      }
      early_data_ = true;
    }
    if (!alpn_.empty()) SSL_CTX_set_alpn_select_cb(ctx, &select_alpn, &alpn_);
  }

  std::unique_ptr<tls_connection> accept(int fd) override {
    ssl_ptr ssl(SSL_new(ctx_.get()));
    if (!ssl || SSL_set_fd(ssl.get(), fd) != 1) throw std::bad_alloc();
    SSL_set_accept_state(ssl.get());
    return std::make_unique<openssl_connection>(std::move(ssl), early_data_);
  }

 private:
  ssl_ctx_ptr ctx_;
  bool early_data_ = false;
  std::vector<std::string> alpn_;  // what select_alpn picks from, most preferred first
};

}  // namespace

std::unique_ptr<tls_client_context> make_openssl_client_context(const tls_client_options& options) {
  return std::make_unique<openssl_client_context>(options);
}

std::unique_ptr<tls_server_context> make_openssl_server_context(const tls_server_options& options) {
  return std::make_unique<openssl_server_context>(options);
}

}  // namespace dnstransport::detail
