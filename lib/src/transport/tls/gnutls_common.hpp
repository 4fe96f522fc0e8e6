#pragma once
// Internal: the tls_backend.hpp interface over GnuTLS 3.7. What the backend's connection
// (gnutls_connection*.cpp, gnutls_failures.cpp, gnutls_verify.cpp) and its client and server
// contexts (gnutls_context.cpp) share: library set-up, GnuTLS-allocated buffers, version masks, the
// set-up sessions keep alive, the saved session and the connection class the contexts create.

#include <gnutls/gnutls.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <dnstransport/error.hpp>

#include "transport/tls/tls_backend.hpp"

namespace dnstransport::detail {

struct syscall_counter;

// What the GnuTLS clients (DoT, DoH, DoQ) offer when no --tls-priority is given: GnuTLS's
// NORMAL with X25519 first (as OpenSSL and browsers: TLS 1.3's key share is then X25519, with
// P-256 beside it) and AES-128-GCM first (NORMAL's AES-256-GCM makes TLS 1.3 derive its keys
// with SHA-384). Measured on DoQ, one query per connection: 380 -> 320 us of client CPU per
// full handshake, 260 -> 190 per resumed one.
inline constexpr const char* gnutls_client_priority =
    "NORMAL:-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1:+GROUP-SECP384R1:+GROUP-SECP521R1:"
    "+GROUP-X448:+GROUP-FFDHE2048:+GROUP-FFDHE3072:+GROUP-FFDHE4096:-CIPHER-ALL:+AES-128-GCM:"
    "+CHACHA20-POLY1305:+AES-256-GCM:+AES-128-CCM:+AES-256-CCM:+AES-128-CBC:+AES-256-CBC";

// Every GnuTLS client session (DoT, DoH, DoQ) sends a key share for the first group only
// (X25519 unless --tls-priority says otherwise), as OpenSSL does: GnuTLS's default also
// computes a P-256 share that a server supporting X25519 never uses. Measured on DoQ, one
// query per connection: 307 -> 285 us of client CPU per full handshake, 184 -> 156 per
// resumed one. A server without the first group costs a HelloRetryRequest round trip.
inline constexpr unsigned int gnutls_client_flags = GNUTLS_CLIENT | GNUTLS_KEY_SHARE_TOP;

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

// Sets of versions as bit masks, to intersect what a client offers with what we allow.
constexpr unsigned version_bit(tls_version version) {
  return version == tls_version::v1_3 ? 2u : 1u;
}

inline unsigned version_bit(unsigned char major, unsigned char minor) {
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
// keep alive through a shared pointer (GnuTLS does not reference count them). Defined in
// gnutls_context.cpp.
class shared_setup {
 public:
  shared_setup(const std::optional<tls_version>& min_version,
               const std::optional<tls_version>& max_version, const std::string& priority);

  gnutls_certificate_credentials_t credentials() const noexcept { return credentials_.get(); }

  // The versions this side allows, as a mask of version_bit() values.
  unsigned versions() const noexcept { return versions_; }

  // One ticket key per server context, so every responder thread can decrypt every ticket
  // the server issued. Null until generated.
  void generate_ticket_key();
  const gnutls_datum_t* ticket_key() const noexcept {
    return ticket_key_.datum.data != nullptr ? &ticket_key_.datum : nullptr;
  }

  // The name a client checks the server certificate against. GnuTLS keeps the pointer for
  // the session's lifetime, so it lives here rather than in the context. Null for none.
  void set_verify_name(std::string name) { verify_name_ = std::move(name); }
  const char* verify_name() const noexcept {
    return verify_name_.empty() ? nullptr : verify_name_.c_str();
  }

  ~shared_setup();
  shared_setup(const shared_setup&) = delete;
  shared_setup& operator=(const shared_setup&) = delete;

  // Applies the shared settings to a new session.
  void apply(gnutls_session_t session) const;

 private:
  gnutls_library library_;
  std::unique_ptr<gnutls_certificate_credentials_st, credentials_deleter> credentials_;
  std::unique_ptr<gnutls_priority_st, priority_deleter> priority_;
  unsigned versions_ = 0;
  gnutls_buffer ticket_key_;
  std::string verify_name_;
};

// Everything a server shares with its sessions: credentials from the certificate and key
// files and, when tickets are on, the ticket key. Throws setup_error naming the file. The TLS
// server context and the DNS-over-QUIC listener (server/server_doq_context.cpp) both load
// theirs here. Defined in gnutls_context.cpp.
std::shared_ptr<shared_setup> load_gnutls_server_setup(const tls_server_options& options);

// Everything a client shares with its sessions: trust anchors (the CA file, or the system's
// when verifying without one) and the name to verify. Throws setup_error naming the file. The
// TLS client context and the DNS-over-QUIC client (transport/doq) both load theirs here.
// Defined in gnutls_context.cpp.
std::shared_ptr<const shared_setup> load_gnutls_client_setup(const tls_client_options& options);

// An IPv4 or IPv6 literal, which SNI must not carry (RFC 6066).
bool is_ip_literal(const std::string& name);

class gnutls_ticket final : public tls_ticket {
 public:
  const gnutls_datum_t& data() const noexcept { return data_.datum; }
  gnutls_datum_t& data() noexcept { return data_.datum; }

 private:
  gnutls_buffer data_;
};

// One session on `fd`, client or server by `flags` (GNUTLS_CLIENT / GNUTLS_SERVER); the
// context applies its settings to get() before the first step. Defined in
// gnutls_connection.cpp (the session's steps), gnutls_connection_io.cpp (its socket I/O),
// gnutls_failures.cpp (its failures told apart) and gnutls_verify.cpp (--verify).
class gnutls_connection final : public tls_connection {
 public:
  gnutls_connection(std::shared_ptr<const shared_setup> setup, int fd, unsigned int flags,
                    bool resume);
  ~gnutls_connection() override;

  gnutls_connection(const gnutls_connection&) = delete;
  gnutls_connection& operator=(const gnutls_connection&) = delete;

  gnutls_session_t get() const noexcept { return session_; }

  tls_io handshake() override;
  tls_io read(std::uint8_t* data, std::size_t size, std::size_t& transferred) override;
  tls_io write(const std::uint8_t* data, std::size_t size, std::size_t& transferred) override;
  tls_io shutdown() override;
  void count_syscalls(syscall_counter& syscalls) override;
  std::size_t early_data_room() const override;
  tls_io write_early(const std::uint8_t* data, std::size_t size, std::size_t& transferred) override;
  early_data_status early_data() const override;
  std::size_t pending() const override;
  bool resumed() const override;

  // Client: the context set a ticket to resume from, and the run asked for early data (which
  // then may go when the ticket allows it).
  void set_resuming() noexcept { resuming_ = true; }
  void enable_early_data() noexcept { early_enabled_ = true; }
  // Client, --verify: checks the server's chain against the credentials' trust anchors and
  // `name` (null: no name check), unless `chains` holds the same chain verified before.
  void verify_once(verified_chains& chains, const char* name);
  std::unique_ptr<tls_ticket> ticket() override;
  std::string version() const override;
  std::string alpn() const override;
  tls_failure failure() const override { return failure_; }
  std::string error_message() const override { return error_message_; }
  std::uint64_t newest_arrival() const noexcept override { return newest_arrival_; }

 private:
  tls_io finish(int result);
  // Server, when the handshake ends: the early data GnuTLS accepted, for read() to hand out.
  void take_early_input();
  // What pull read from the socket and GnuTLS did not take yet.
  std::size_t read_ahead() const noexcept { return input_end_ - input_begin_; }
  // What the socket (or input_) holds for us (MSG_PEEK): nothing yet, octets, or the
  // peer's EOF.
  enum class input_state { none, waiting, ended };
  input_state peer_input() const noexcept;

  // Records which of our versions the client offers, for telling a version mismatch apart
  // from other negotiation failures.
  static int on_client_hello(gnutls_session_t session, unsigned int, unsigned int,
                             unsigned int incoming, const gnutls_datum_t* message);

  // GnuTLS leaves telling the peer why the handshake failed to the application; OpenSSL
  // always does it. Best effort: the session is over either way.
  void send_alert(int result) { gnutls_alert_send_appropriate(session_, result); }

  bool peer_closed() const;

  // GnuTLS's transport on the socket (recvmsg, with the receive stamp; sendmsg with
  // MSG_NOSIGNAL, as GNUTLS_NO_SIGNAL makes GnuTLS's own), each call counted; `transport`
  // is the connection. GnuTLS pulls a record's header and then its body: pull reads as much
  // as the socket holds into input_ and hands it out from there, one read per answer
  // instead of two.
  static ssize_t pull(gnutls_transport_ptr_t transport, void* data, std::size_t size);
  static ssize_t vec_push(gnutls_transport_ptr_t transport, const giovec_t* pieces, int count);
  static int pull_timeout(gnutls_transport_ptr_t transport, unsigned int ms);

  // gnutls_session_set_verify_function's callback for verify_once.
  static int verify_peer(gnutls_session_t session);
  std::string verification_message(int result) const;
  tls_io fail(tls_failure kind, std::string message);
  // GnuTLS sessions are unusable after a fatal error; answer the same from then on.
  tls_io end(tls_io result);

  std::shared_ptr<const shared_setup> setup_;
  int fd_;
  syscall_counter* syscalls_ = nullptr;  // null: GnuTLS's own transport, uncounted
  // With our transport (count_syscalls): octets read off the socket ahead of GnuTLS's
  // pulls, [input_begin_, input_end_) not taken yet. As large as the stream client's frame
  // buffer (frame_reader::default_capacity): tens of answers per read, and little memory
  // with tens of thousands of connections open.
  static constexpr std::size_t input_capacity = 4096;
  std::unique_ptr<std::uint8_t[]> input_;
  std::size_t input_begin_ = 0;
  std::size_t input_end_ = 0;
  std::uint64_t newest_arrival_ = 0;  // the newest receive stamp pull saw
  gnutls_session_t session_ = nullptr;
  bool resume_;
  bool handshake_done_ = false;
  bool early_enabled_ = false;  // GNUTLS_ENABLE_EARLY_DATA: the client sends, the server takes
  bool resuming_ = false;
  bool early_sent_ = false;
  early_input early_input_;  // server: the early data taken with the handshake
  bool client_hello_seen_ = false;
  unsigned offered_versions_ = 0;
  std::optional<tls_io> final_;
  verified_chains* chains_ = nullptr;  // verify_once
  const char* verify_name_ = nullptr;
  unsigned verify_status_ = 0;  // why verify_peer refused the chain (gnutls_certificate_status_t)
  tls_failure failure_ = tls_failure::none;
  std::string error_message_;
};

}  // namespace dnstransport::detail
