#pragma once
/// \file
/// Transports of a program's own: DNS over a byte stream the program defines on a TCP
/// connection (a proxy's header before the messages, a vendor's framing or handshake), run
/// by the library's stream client and responder as DNS over TCP is. Once registered with
/// register_transport, it is a transport_kind like the built-in ones: run_load, the client,
/// sweeps, searches, reports and the responder take it, and its traits say what applies
/// (connections, queries per connection, connect latency; no TLS figures).
///
/// The library connects (source addresses, TCP Fast Open, the PROXY protocol's header
/// before the stream's first octets), waits for the socket's readiness, writes DNS messages
/// with their 2-octet length (RFC 7766) through the stream, reads and checks the answers,
/// pipelines, and counts connections, handshakes and failures; the stream only moves
/// octets. Its calls are made on the worker thread (responder: the server thread) that owns
/// the connection, never two at once on one stream.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include <dnstransport/transport.hpp>

namespace dnstransport {

/// What one non-blocking step of a user_stream came to.
enum class stream_status {
  done,        ///< the step completed (handshake finished, octets moved)
  want_read,   ///< call the same step again once the socket is readable
  want_write,  ///< call the same step again once the socket is writable
  closed,      ///< the peer ended the stream (EOF)
  failed,      ///< a fatal error: failure_cause() and error_message() say which
};

/// One connection's byte stream of a user transport, over a connected non-blocking TCP
/// socket that it does not own (the library closes it).
class user_stream {
 public:
  virtual ~user_stream() = default;

  /// Advances the stream's own handshake, before any DNS message: done when it has none or
  /// it is over. Called again after want_read / want_write.
  virtual stream_status handshake() { return stream_status::done; }

  /// Reads what is available into `buffer`; on done, `transferred` > 0 octets of the DNS
  /// stream (messages with their 2-octet length) are in it.
  virtual stream_status read(std::span<std::uint8_t> buffer, std::size_t& transferred) = 0;

  /// Writes the pieces of the DNS stream in order, as much as it takes now: on done,
  /// `transferred` octets were taken (maybe fewer than all). After want_read / want_write
  /// nothing was taken, and the same octets come again.
  virtual stream_status write(std::span<const std::span<const std::uint8_t>> pieces,
                              std::size_t& transferred) = 0;

  /// Whether octets already taken off the socket wait inside the stream, so that a read
  /// returns more without the socket becoming readable.
  virtual bool has_buffered_input() const { return false; }

  /// Ends the stream the way its protocol does, before the socket is closed.
  virtual void shutdown() {}

  /// After failed: a short stable cause for the counts of failures ("bad_greeting").
  virtual std::string failure_cause() const { return "failed"; }
  /// After failed: the whole message.
  virtual std::string error_message() const { return failure_cause(); }
};

/// A transport of the program's own, for register_transport.
struct user_transport {
  std::string name;        ///< in lists, tables and the JSON: lower-case letters, digits and _
  std::string long_name;   ///< for tables and messages ("DNS over FOO"); empty: the name
  std::string short_name;  ///< as operators write it; empty: the name
  std::uint16_t default_port = 53;  ///< its registered port
  /// Whether the stream has a handshake of its own, counted as a connection's handshake
  /// (full) with its time, as TLS's is.
  bool has_handshake = false;
  /// The client's stream over a freshly connected socket `fd` (non-blocking). Required.
  std::function<std::unique_ptr<user_stream>(int fd)> client;
  /// The responder's stream over an accepted socket `fd` (non-blocking). Optional: without
  /// it the built-in responder cannot listen for the transport.
  std::function<std::unique_ptr<user_stream>(int fd)> server;
};

/// Registers `transport` and returns its kind, which load_spec::target.transport,
/// client_settings, sweep_plan and server_options::listen take from then on;
/// parse_transport finds it by name. Register before any load, sweep or responder starts
/// (registering is not synchronised with them). Throws setup_error for a name that is not
/// lower-case letters, digits and _ (or is pid or cgroup, words of a sweep's targets), a name
/// or alias already taken, no client factory, a default port of 0, or more than
/// max_transports - 1 transports in all (the last kind is never registered).
transport_kind register_transport(user_transport transport);

/// The kind a result file's transport name reads as: the transport registered under that
/// name, or, for a name this program has no transport of (a file written by a program with a
/// transport of its own), a transport registered from the name alone, so that the file's
/// runs can be read, tabled and plotted (`dnstransport report` does this). Such a transport
/// keeps connections over TCP, as every program's own transport does; a load over it is a
/// setup_error, and the responder cannot listen for it. Throws setup_error for a name a
/// transport cannot have (see register_transport) or when the table is full.
transport_kind transport_of_record(std::string_view name);

}  // namespace dnstransport
