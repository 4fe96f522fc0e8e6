#pragma once
// Internal: a non-blocking byte stream over a connected TCP socket, plain or TLS, behind one
// contract. The stream client and the responder drive it the same way: call a step, and on
// want_read / want_write wait for that readiness of the socket (Asio) and call again. Which
// kind a connection gets is decided once, where it is opened (stream_connector /
// stream_acceptor); nothing above this layer asks whether it is TLS. Nothing here throws on
// the I/O path. What only TLS has (sessions, tickets, ALPN) is the tls_connection a TLS
// stream gives (tls()); the plain stream knows none of it.

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "transport/tls/tls_backend.hpp"

namespace dnstransport::detail {

struct syscall_counter;
class tls_ticket;
class tls_client_context;
class tls_server_context;

/// Outcome of one non-blocking step.
enum class stream_io {
  done,        // the step completed (handshake finished, bytes moved)
  want_read,   // wait until the socket is readable, then call the same step again
  want_write,  // wait until the socket is writable, then call the same step again
  closed,      // the peer ended the stream: EOF, or TLS close_notify
  failed,      // reset or another fatal error: see failure_cause() and error_message()
};

class byte_stream {
 public:
  virtual ~byte_stream() = default;

  /// "tcp" or "tls", for messages ("tls handshake: ...").
  virtual const char* name() const noexcept = 0;

  /// Whether the stream has a handshake of its own above TCP (TLS), counted apart.
  virtual bool has_handshake() const noexcept = 0;

  /// Advances that handshake; done at once for plain TCP.
  virtual stream_io handshake() = 0;

  /// Reads what is available into `buffer`; on done, `transferred` > 0.
  virtual stream_io read(std::span<std::uint8_t> buffer, std::size_t& transferred) = 0;

  /// Bytes already taken off the socket and held inside the stream (TLS records): a read may
  /// return more without the socket becoming readable.
  virtual bool has_buffered_input() const = 0;

  /// The kernel's receive stamp (util/receive_time.hpp: CLOCK_REALTIME, ns) of the newest
  /// segment the stream's reads took off the socket so far, where the socket has stamps on
  /// (enable_receive_stamps); 0 when none came. Every byte a read returned arrived at or
  /// before it, so it bounds when an answer came more tightly than the time it was read.
  virtual std::uint64_t newest_arrival() const noexcept { return 0; }

  /// Whether a read returns at most one unit of the protocol (a TLS record), so that a read
  /// shorter than the buffer does not mean the socket has nothing more.
  virtual bool reads_by_record() const noexcept { return false; }

  /// Writes the pieces in order, as much as the stream takes now. On done, `transferred`
  /// bytes were taken (maybe fewer than all). After want_read / want_write nothing was
  /// taken: call again with the same bytes (they may be at another address).
  virtual stream_io write(std::span<const iovec> pieces, std::size_t& transferred) = 0;

  /// TLS client, before the first handshake step: when the session resumes a ticket that
  /// allows early data (and the run asked for it), writes go out as early data (0-RTT) until
  /// the handshake is done, and the octets they may carry are returned; 0 otherwise.
  virtual std::size_t begin_early_data() { return 0; }

  /// Ends the session the way its protocol does (TLS close_notify; nothing for plain TCP).
  /// The socket stays open; its owner closes it.
  virtual void shutdown() = 0;

  /// The TLS session of a TLS stream (what its handshake agreed on and resumed, its early
  /// data, the ticket for the next connection); null for plain TCP, which has none.
  virtual tls_connection* tls() noexcept { return nullptr; }

  /// After failed: a short stable cause for counters ("ECONNRESET", "tls_certificate",
  /// "tls_closed" for a peer that hung up in a TLS handshake) and the full message.
  virtual std::string failure_cause() const = 0;
  virtual std::string error_message() const = 0;
};

/// What one step of a stream's handshake came to, read once for both of its drivers (the
/// stream client and the responder's server_stream_connection): done (with what the TLS
/// session says of it), a wait for the socket, or failed (the peer hung up or the handshake
/// broke: failure_cause() and error_message() say why).
struct handshake_step {
  enum class outcome { done, want_read, want_write, failed };
  outcome result = outcome::failed;
  bool resumed = false;              ///< done: the TLS session resumed a ticket
  bool early_data_accepted = false;  ///< done: the peer took the early data (0-RTT)
};

/// Advances `stream`'s handshake by one step (done at once for plain TCP).
handshake_step advance_handshake(byte_stream& stream);

/// Opens the client side of a stream on a connected, non-blocking socket it does not own.
class stream_connector {
 public:
  virtual ~stream_connector() = default;
  /// `resume_from` (may be null) is offered where the stream has sessions to resume.
  /// `spare` (may be null): a closed stream this connector opened before, which it may
  /// reuse instead of allocating one per connection. `syscalls` (may be null) counts the
  /// stream's reads and writes on the socket (TLS: the library's).
  virtual std::unique_ptr<byte_stream> open(int fd, const tls_ticket* resume_from,
                                            std::unique_ptr<byte_stream> spare,
                                            syscall_counter* syscalls) = 0;
  /// TLS with --verify: what its context's certificate checks did (verified_chains.hpp).
  virtual verified_chains::counts certificate_checks() const { return {}; }
};

/// Opens the server side of a stream on an accepted, non-blocking socket it does not own.
class stream_acceptor {
 public:
  virtual ~stream_acceptor() = default;
  virtual std::unique_ptr<byte_stream> open(int fd) = 0;
};

/// Plain TCP: DNS over TCP (RFC 7766). `syscalls` (may be null) counts its recv and sendmsg.
std::unique_ptr<byte_stream> make_tcp_stream(int fd, syscall_counter* syscalls = nullptr);
std::unique_ptr<stream_connector> make_tcp_connector();
std::unique_ptr<stream_acceptor> make_tcp_acceptor();

/// TLS over TCP: DNS over TLS (RFC 7858), either library. The context outlives the streams:
/// the connector owns it, or the caller keeps it.
std::unique_ptr<stream_connector> make_tls_connector(tls_client_context& context);
std::unique_ptr<stream_connector> make_tls_connector(std::unique_ptr<tls_client_context> context);
std::unique_ptr<stream_acceptor> make_tls_acceptor(tls_server_context& context);

/// Total size of `pieces`.
std::size_t total_size(std::span<const iovec> pieces) noexcept;

}  // namespace dnstransport::detail
