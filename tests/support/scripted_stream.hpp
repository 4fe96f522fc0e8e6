#pragma once
/// \file
/// Test support: a scripted in-memory peer for the stream client (in the spirit of
/// Boost.Beast's test::stream). The client's connections run on scripted sockets instead of
/// TCP: the peer answers each query by echoing it as a response, delivers the answers in
/// chosen pieces, takes writes in chosen pieces, closes or resets after a number of
/// answers, sends a zero length prefix, answers in reverse order, or refuses connections.
/// No socket, no thread, no timing: a run is decided by the script alone.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "transport/stream/stream_socket.hpp"

namespace dnstransport::scripted {

struct peer_script {
  /// The client's reads return at most these many octets, cycling (1: one octet per read).
  std::vector<std::size_t> read_pieces{65536};
  /// Octets the peer takes per write call (fewer than offered: a partial write).
  std::size_t write_limit = 65536;
  /// Before each write that the peer takes, one call says want_write: the client must wait
  /// for writability and write the same bytes again.
  bool want_write_first = false;
  /// Answers per connection; after that the peer reads on without answering, or:
  std::uint64_t answers_per_connection = UINT64_MAX;
  enum class then { keep_reading, close, reset } after_answers = then::keep_reading;
  /// The first answer of each connection is replaced by a zero length prefix.
  bool zero_length_first = false;
  /// Answers are held until this many are due, then sent last first (RFC 7766 allows it).
  std::size_t reverse_batch = 1;
  /// Every connect fails with this errno (0: connects succeed, after a writable wait).
  int connect_error = 0;
};

/// What the peer saw, over every connection of every client.
struct peer_log {
  std::uint64_t connections = 0;
  std::uint64_t queries_received = 0;
  std::uint64_t answers_sent = 0;
  std::uint64_t closed_by_client = 0;  ///< the client closed (FIN or RST)
  std::uint64_t abortive_closes = 0;   ///< of those, with RST
  std::uint64_t partial_writes = 0;    ///< write calls that took fewer octets than offered
  std::uint64_t reads = 0;             ///< read calls that returned data
};

/// Sockets for a stream_transport that run `script`; `log` must outlive the run.
detail::stream_socket_factory make_socket_factory(const peer_script& script, peer_log& log);

}  // namespace dnstransport::scripted
