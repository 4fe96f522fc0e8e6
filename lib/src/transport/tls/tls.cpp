#include <dnstransport/tls.hpp>

#include <csignal>
#include <string>

#include <dnstransport/error.hpp>

#include <fmt/format.h>

#include "transport/tls/tls_backend.hpp"

namespace dnstransport {

std::string_view tls_backend_name(tls_backend backend) noexcept {
  switch (backend) {
    case tls_backend::openssl:
      return "openssl";
    case tls_backend::gnutls:
      return "gnutls";
  }
  return "unknown";
}

std::optional<tls_backend> parse_tls_backend(std::string_view name) noexcept {
  if (name == "openssl") return tls_backend::openssl;
  if (name == "gnutls") return tls_backend::gnutls;
  return std::nullopt;
}

std::vector<tls_backend> available_tls_backends() {
  std::vector<tls_backend> backends;
#ifdef DNSTRANSPORT_HAVE_OPENSSL
  backends.push_back(tls_backend::openssl);
#endif
#ifdef DNSTRANSPORT_HAVE_GNUTLS
  backends.push_back(tls_backend::gnutls);
#endif
  return backends;
}

std::string_view tls_version_name(tls_version version) noexcept {
  switch (version) {
    case tls_version::v1_2:
      return "1.2";
    case tls_version::v1_3:
      return "1.3";
  }
  return "unknown";
}

std::optional<tls_version> parse_tls_version(std::string_view name) noexcept {
  if (name == "1.2") return tls_version::v1_2;
  if (name == "1.3") return tls_version::v1_3;
  return std::nullopt;
}

namespace detail {

const char* tls_failure_name(tls_failure failure) noexcept {
  switch (failure) {
    case tls_failure::none:
      return "none";
    case tls_failure::certificate:
      return "certificate";
    case tls_failure::protocol_version:
      return "protocol_version";
    case tls_failure::not_tls:
      return "not_tls";
    case tls_failure::handshake_alert:
      return "handshake_alert";
    case tls_failure::reset:
      return "reset";
    case tls_failure::other:
      return "other";
  }
  return "unknown";
}

// Both backends would quietly produce a context that can never complete a handshake.
void check_version_range(const std::optional<tls_version>& min_version,
                         const std::optional<tls_version>& max_version,
                         std::string_view min_setting, std::string_view max_setting) {
  if (min_version && max_version && *min_version > *max_version) {
    throw setup_error(fmt::format(
        "{} {} is above {} {}: the minimum version is above the maximum, so no TLS version is "
        "left to use",
        setting(min_setting), tls_version_name(*min_version), setting(max_setting),
        tls_version_name(*max_version)));
  }
}

namespace {

[[noreturn]] void throw_missing_backend(tls_backend backend) {
  std::string available;
  for (const tls_backend b : available_tls_backends()) {
    if (!available.empty()) available += ", ";
    available += tls_backend_name(b);
  }
  if (available.empty()) available = "none";
  throw setup_error(fmt::format("TLS backend {} is not compiled into this build (available: {})",
                                tls_backend_name(backend), available));
}

// ALPN protocol names travel with a one-octet length.
void check_alpn(const std::vector<std::string>& protocols) {
  for (const std::string& protocol : protocols) {
    if (protocol.empty() || protocol.size() > 255) {
      throw setup_error(
          fmt::format("invalid TLS ALPN protocol \"{}\": needs 1 to 255 bytes", protocol));
    }
  }
}

}  // namespace

namespace {
// OpenSSL writes to the socket with write(2), which raises SIGPIPE on a connection the peer
// has closed; a load generator must count that as a closed connection, not die of it. The
// disposition is changed only while it is still the default.
void ignore_sigpipe() {
  struct sigaction current {};
  if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
    signal(SIGPIPE, SIG_IGN);
  }
}
}  // namespace

std::unique_ptr<tls_client_context> make_tls_client_context(const tls_client_options& options) {
  ignore_sigpipe();
  check_version_range(options.min_version, options.max_version, "tls_client_options::min_version",
                      "tls_client_options::max_version");
  check_alpn(options.alpn);
  switch (options.backend) {
    case tls_backend::openssl:
#ifdef DNSTRANSPORT_HAVE_OPENSSL
      return make_openssl_client_context(options);
#else
      break;
#endif
    case tls_backend::gnutls:
#ifdef DNSTRANSPORT_HAVE_GNUTLS
      return make_gnutls_client_context(options);
#else
      break;
#endif
  }
  throw_missing_backend(options.backend);
}

std::unique_ptr<tls_server_context> make_tls_server_context(const tls_server_options& options) {
  ignore_sigpipe();
  check_version_range(options.min_version, options.max_version, "tls_server_options::min_version",
                      "tls_server_options::max_version");
  check_alpn(options.alpn);
  // Generating a certificate for empty paths is the responder's job (it owns the directory
  // the files go to); a context only loads files.
  if (options.certificate_file.empty() || options.key_file.empty()) {
    throw setup_error("a TLS server needs both a certificate file and a key file");
  }
  switch (options.backend) {
    case tls_backend::openssl:
#ifdef DNSTRANSPORT_HAVE_OPENSSL
      return make_openssl_server_context(options);
#else
      break;
#endif
    case tls_backend::gnutls:
#ifdef DNSTRANSPORT_HAVE_GNUTLS
      return make_gnutls_server_context(options);
#else
      break;
#endif
  }
  throw_missing_backend(options.backend);
}

}  // namespace detail
}  // namespace dnstransport
