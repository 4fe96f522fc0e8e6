#pragma once
/// \file
/// Test support: in-memory connections for the stream client (in the spirit of Boost.Beast's
/// test::stream), whatever protocol the far end speaks. A stream_transport or doh_transport
/// built with these sockets connects to a peer_end made per connection: what the client
/// writes goes to the peer's take(), what the peer sends the client reads, in the pieces the
/// wire_script says. No socket, no thread, no timing: a run is decided by the script alone.
/// The DNS peer is in scripted_stream.hpp, the HTTP/2 one in scripted_h2.hpp.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "transport/stream/stream_socket.hpp"

namespace dnstransport::scripted {

/// How the in-memory connections carry octets.
struct wire_script {
  /// The client's reads return at most these many octets, cycling (1: one octet per read).
  std::vector<std::size_t> read_pieces{65536};
  /// Octets the peer takes per write call (fewer than offered: a partial write).
  std::size_t write_limit = 65536;
  /// Before each write that the peer takes, one call says want_write: the client must wait
  /// for writability and write the same bytes again.
  bool want_write_first = false;
  /// Every connect fails with this errno (0: connects succeed, after a writable wait).
  int connect_error = 0;
  /// The application protocol the stream says its TLS handshake agreed on in ALPN ("h2"
  /// for DoH), as a TLS stream's session would; empty: a plain stream, with no TLS session.
  std::string alpn;
};

/// What the wire saw, over every connection of every client.
struct wire_log {
  std::uint64_t connections = 0;
  std::uint64_t closed_by_client = 0;  ///< the client closed (FIN or RST)
  std::uint64_t abortive_closes = 0;   ///< of those, with RST
  std::uint64_t partial_writes = 0;    ///< write calls that took fewer octets than offered
  std::uint64_t reads = 0;             ///< read calls that returned data
};

/// The far end of one in-memory connection: it takes what the client writes and sends
/// octets back, then maybe closes or resets the connection once they are read.
class peer_end {
 public:
  virtual ~peer_end() = default;

  /// The client wrote `octets` (as many as the wire took in one write call).
  virtual void take(std::span<const std::uint8_t> octets) = 0;

  /// Octets sent and not read by the client yet.
  std::size_t available() const noexcept { return to_client_.size() - read_offset_; }
  /// Whether a read would not wait: octets, or the end of the connection, are there.
  bool readable() const noexcept { return available() > 0 || closing_ || resetting_; }
  /// Moves at most `out.size()` octets to the client; how many.
  std::size_t read(std::span<std::uint8_t> out) noexcept;
  /// The peer ends the connection once the client read what it sent: with EOF (closing) or
  /// a reset (resetting; writes fail at once).
  bool closing() const noexcept { return closing_; }
  bool resetting() const noexcept { return resetting_; }

 protected:
  /// Queues `octets` for the client.
  void send(std::span<const std::uint8_t> octets);
  /// After what was sent so far: EOF (`reset` false) or a reset.
  void end_after_sending(bool reset) noexcept { (reset ? resetting_ : closing_) = true; }

 private:
  std::vector<std::uint8_t> to_client_;
  std::size_t read_offset_ = 0;
  bool closing_ = false;
  bool resetting_ = false;
};

/// Makes the far end of each new connection.
using peer_maker = std::function<std::unique_ptr<peer_end>()>;

/// Sockets for a stream transport whose connections run to peers from `make_peer`, carried
/// as `wire` says; `wire`, `log` and what `make_peer` refers to must outlive the run.
detail::stream_socket_factory make_scripted_sockets(const wire_script& wire, wire_log& log,
                                                    peer_maker make_peer);

}  // namespace dnstransport::scripted
