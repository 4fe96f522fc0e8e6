#pragma once
// Internal: one non-blocking TLS state machine interface, implemented over OpenSSL and over
// GnuTLS. The session works directly on a connected non-blocking socket it does not own;
// the caller (the stream client or the responder) waits for readiness with Asio and calls
// again. Nothing here throws on the I/O path; setup (contexts) throws setup_error.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <dnstransport/tls.hpp>

#include "transport/tls/verified_chains.hpp"

namespace dnstransport::detail {

struct syscall_counter;

/// Result of one non-blocking TLS step.
enum class tls_io {
  done,        // the step completed (handshake finished, bytes moved, shutdown sent)
  want_read,   // wait until the socket is readable, then call the same step again
  want_write,  // wait until the socket is writable, then call the same step again
  closed,      // the peer closed the TLS session (close_notify) or the TCP stream (EOF)
  error,       // fatal: see failure() and error_message(); the session is unusable
};

/// Why a session failed, in words a DNS operator acts on.
enum class tls_failure {
  none,
  certificate,       // verification failed (unknown CA, wrong name, expired)
  protocol_version,  // no common TLS version
  not_tls,           // the peer did not speak TLS (e.g. plain DNS over TCP on the port)
  handshake_alert,   // the peer aborted the handshake with another alert
  reset,             // TCP reset or other socket error mid-session
  other,
};

/// Short stable name ("certificate", "protocol_version", ...).
const char* tls_failure_name(tls_failure failure) noexcept;

/// What became of a connection's TLS 1.3 early data (0-RTT), once its handshake is done.
enum class early_data_status {
  not_sent,  // none was sent (client) or received (server)
  accepted,  // the server took it: it was processed as the connection's first data
  rejected,  // the server skipped it: the client must send it again
};

/// What a listener's tickets allow a resuming client to send as early data: a few hundred
/// queries.
inline constexpr std::uint32_t max_early_data = 16384;

/// Server: the early data a session took during its handshake, handed out by read() before
/// anything the client sent after it.
class early_input {
 public:
  void add(const std::uint8_t* data, std::size_t size) {
    data_.insert(data_.end(), data, data + size);
  }
  std::size_t pending() const noexcept { return data_.size() - read_; }
  /// Copies what is left (at most `size` octets) into `out`; false when nothing is.
  bool take(std::uint8_t* out, std::size_t size, std::size_t& transferred) noexcept {
    if (read_ == data_.size()) return false;
    transferred = std::min(size, data_.size() - read_);
    std::copy_n(data_.data() + read_, transferred, out);
    read_ += transferred;
    return true;
  }

 private:
  std::vector<std::uint8_t> data_;
  std::size_t read_ = 0;
};

/// Opaque saved session (ticket) for resumption; backend specific.
class tls_ticket {
 public:
  virtual ~tls_ticket() = default;
};

/// One TLS connection over a connected, non-blocking socket `fd`.
class tls_connection {
 public:
  virtual ~tls_connection() = default;

  /// Advances the handshake.
  virtual tls_io handshake() = 0;

  /// Reads decrypted application data into [data, data+size). On done, `transferred` > 0.
  virtual tls_io read(std::uint8_t* data, std::size_t size, std::size_t& transferred) = 0;

  /// Writes application data. On done, `transferred` bytes (maybe fewer than `size`) were
  /// taken. After want_read/want_write, call again with the same data and size.
  virtual tls_io write(const std::uint8_t* data, std::size_t size, std::size_t& transferred) = 0;

  /// Sends close_notify (does not wait for the peer's).
  virtual tls_io shutdown() = 0;

  /// Before the first step: counts every read and write the library makes on the socket
  /// (and the session's own peeks at it) in `syscalls`, which outlives the session. A
  /// session not told counts nothing (the responder's).
  virtual void count_syscalls(syscall_counter& syscalls) = 0;

  /// Client, before handshake(): how many octets of early data write_early may take: the
  /// limit of the ticket the session resumes, when the context enabled early data; 0 when
  /// none may go.
  virtual std::size_t early_data_room() const { return 0; }

  /// Client, before the handshake is done: application data sent as TLS 1.3 early data
  /// (0-RTT), with the ClientHello. Same contract as write; the handshake follows.
  virtual tls_io write_early(const std::uint8_t* /*data*/, std::size_t /*size*/,
                             std::size_t& transferred) {
    transferred = 0;
    return tls_io::error;
  }

  /// After the handshake: what became of the early data the client sent (server: took).
  /// A server that accepted early data returns it from read() before anything else.
  virtual early_data_status early_data() const { return early_data_status::not_sent; }

  /// After count_syscalls: the kernel's receive stamp (byte_stream::newest_arrival) of the
  /// newest segment the session's reads took off the socket; 0 when none came.
  virtual std::uint64_t newest_arrival() const noexcept { return 0; }

  /// Input buffered inside the session, off the socket: a read can succeed (or must be
  /// tried) without the socket becoming readable. The decrypted octets a read would return,
  /// or at least 1 while records read ahead of need wait undecrypted (the clients read as
  /// much as the socket holds in one call). 0: wait for readability.
  virtual std::size_t pending() const = 0;

  /// True when the finished handshake resumed an earlier session.
  virtual bool resumed() const = 0;

  /// The session to resume from on the next connection, if the server issued one (for TLS
  /// 1.3 tickets arrive after the handshake, with the first reads). Null when none.
  virtual std::unique_ptr<tls_ticket> ticket() = 0;

  /// Negotiated protocol ("TLSv1.3"), after the handshake.
  virtual std::string version() const = 0;

  /// The application protocol both sides agreed on in ALPN ("dot", "h2"), after the
  /// handshake; empty when the server selected none.
  virtual std::string alpn() const = 0;

  /// Details of the last error: kind and library message.
  virtual tls_failure failure() const = 0;
  virtual std::string error_message() const = 0;
};

/// Client configuration compiled once per run; shared read-only by all worker threads.
class tls_client_context {
 public:
  virtual ~tls_client_context() = default;
  /// New session on `fd`; resumes from `resume_from` when given and resumption is on.
  virtual std::unique_ptr<tls_connection> connect(int fd, const tls_ticket* resume_from) = 0;
  /// With verification on: certificate chains verified in full, and handshakes that took the
  /// verdict of a chain verified before (verified_chains.hpp); zeros without.
  virtual verified_chains::counts certificate_checks() const { return {}; }
};

/// Server configuration compiled once; shared read-only by the responder's threads.
class tls_server_context {
 public:
  virtual ~tls_server_context() = default;
  virtual std::unique_ptr<tls_connection> accept(int fd) = 0;
};

/// Throws setup_error (naming the two settings by their paths, `min_setting` and
/// `max_setting`: "load_spec::tls.min_version") when the minimum is above the maximum: both
/// backends would make a context that never completes a handshake.
void check_version_range(const std::optional<tls_version>& min_version,
                         const std::optional<tls_version>& max_version,
                         std::string_view min_setting, std::string_view max_setting);

/// Builds a context for the backend named in the options. Throws setup_error when the
/// backend is not compiled in, a file does not load, or an option is not supported.
std::unique_ptr<tls_client_context> make_tls_client_context(const tls_client_options& options);
std::unique_ptr<tls_server_context> make_tls_server_context(const tls_server_options& options);

/// Backend implementations behind the two functions above, which check the backend choice
/// and the version range first. Each is defined only when its library is compiled in.
std::unique_ptr<tls_client_context> make_openssl_client_context(const tls_client_options& options);
std::unique_ptr<tls_server_context> make_openssl_server_context(const tls_server_options& options);
std::unique_ptr<tls_client_context> make_gnutls_client_context(const tls_client_options& options);
std::unique_ptr<tls_server_context> make_gnutls_server_context(const tls_server_options& options);

}  // namespace dnstransport::detail
