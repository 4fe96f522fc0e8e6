#pragma once
/// \file
/// DNS-over-TLS settings shared by the client engine and the built-in responder, and the
/// choice between the two TLS libraries compiled in.

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dnstransport {

/// The TLS library that carries a connection. Both are driven by the same non-blocking
/// engine so that a comparison between them measures the libraries, not the glue.
enum class tls_backend { openssl, gnutls };

/// "openssl" or "gnutls".
std::string_view tls_backend_name(tls_backend backend) noexcept;

/// Backend from its name; nothing for an unknown name.
std::optional<tls_backend> parse_tls_backend(std::string_view name) noexcept;

/// Backends compiled into this build. A backend that is asked for and missing is an error:
/// the library never falls back to the other one.
std::vector<tls_backend> available_tls_backends();

/// A protocol version the user can pin.
enum class tls_version { v1_2, v1_3 };

/// "1.2" or "1.3".
std::string_view tls_version_name(tls_version version) noexcept;

/// Version from "1.2" / "1.3"; nothing otherwise.
std::optional<tls_version> parse_tls_version(std::string_view name) noexcept;

/// How the client side of a DNS-over-TLS connection behaves.
struct tls_client_options {
  /// The TLS library; DoQ runs on GnuTLS only (openssl is an error there).
  tls_backend backend = tls_backend::openssl;
  std::optional<tls_version> min_version;  ///< none: the library's default minimum (1.2)
  std::optional<tls_version> max_version;  ///< none: the highest the library supports
  std::string server_name;                 ///< SNI and name to verify; empty: no SNI
  std::vector<std::string> alpn{"dot"};    ///< ALPN protocols offered; RFC 7858 suggests "dot"
  bool verify = false;                     ///< verify the server certificate chain and name
  std::filesystem::path ca_file;           ///< trust anchors (PEM) when verifying
  std::string priority;  ///< OpenSSL cipher list (TLS 1.2) / GnuTLS priority string, as given
  bool resume = false;   ///< reuse the last session of the same client on reconnect
  /// With resume, send the first queries of a resumed connection as TLS 1.3 early data
  /// (0-RTT: with the ClientHello, DoT and DoH; in 0-RTT packets, DoQ) when the server's
  /// ticket allows it. Queries the server refuses are sent again after the handshake.
  bool early_data = false;
};

/// How the built-in responder's TLS listener behaves.
struct tls_server_options {
  /// The TLS library of the TLS and DoH listeners (the DoQ listener always uses GnuTLS).
  tls_backend backend = tls_backend::openssl;
  std::filesystem::path certificate_file;  ///< PEM chain; generated when empty
  std::filesystem::path key_file;          ///< PEM private key; generated when empty
  std::optional<tls_version> min_version;  ///< none: 1.2
  std::optional<tls_version> max_version;  ///< none: the highest the library supports
  /// As tls_client_options::priority; empty: the library's default.
  std::string priority;
  /// ALPN protocols the listener selects, in its order of preference, when the client offers
  /// one ("dot" for DoT, "h2" for DoH). A client that offers none of them still gets through,
  /// without ALPN, so it can tell what happened.
  std::vector<std::string> alpn{"dot"};
  bool session_tickets = true;  ///< issue tickets so clients can resume
  /// Send a new ticket after a resumed handshake too. false: the client keeps resuming from
  /// the ticket it has, as with dnsdist or unbound's tls-session-ticket-keys (OpenSSL only).
  bool renew_tickets = true;
  /// For testing clients: TLS 1.3 tickets sent after each full handshake, 0 for the library's
  /// default (OpenSSL's 2). Many in a row are post-handshake messages a client must read
  /// past to reach its answers. OpenSSL only.
  unsigned tickets_per_handshake = 0;
  /// Accept TLS 1.3 early data (0-RTT) from clients that resume a session: tickets announce
  /// it, and queries that came early are answered like the rest. With GnuTLS a replayed
  /// ClientHello's early data is refused (ClientHello recording); the OpenSSL listener does
  /// not guard against replay (its single-use tickets need a session cache shared by every
  /// thread). false: tickets announce no early data.
  bool early_data = true;
  /// With early_data, for testing clients: tickets still announce early data but every
  /// attempt is refused (as by a server that detected a replay, or lost its anti-replay
  /// state in a restart), so the client must send those queries again after the handshake.
  bool refuse_early_data = false;
};

/// Paths of a certificate and its key written to disk.
struct certificate_files {
  std::filesystem::path certificate_file;  ///< the certificate (PEM)
  std::filesystem::path key_file;          ///< its private key (PEM)
};

/// Writes a fresh self-signed certificate (ECDSA P-256, valid for a year, subject and
/// subjectAltName `common_name`, plus IP 127.0.0.1 and ::1) and its key as PEM files into
/// `directory` (created if needed). Throws setup_error naming the path on failure.
certificate_files generate_self_signed_certificate(const std::filesystem::path& directory,
                                                   const std::string& common_name = "localhost");

}  // namespace dnstransport
