#pragma once
/// \file
/// Test support: a scripted in-memory DNS peer for the stream client, on scripted_socket.hpp's
/// connections. The peer answers each query by echoing it as a response, delivers the answers
/// in chosen pieces, takes writes in chosen pieces, closes or resets after a number of
/// answers, sends a zero length prefix, answers in reverse order, or refuses connections.
/// No socket, no thread, no timing: a run is decided by the script alone.

#include <cstddef>
#include <cstdint>

#include "scripted_socket.hpp"

namespace dnstransport::scripted {

/// How the wire carries octets (read pieces, partial writes, refused connects), and:
struct peer_script : wire_script {
  /// Answers per connection; after that the peer reads on without answering, or:
  std::uint64_t answers_per_connection = UINT64_MAX;
  enum class then { keep_reading, close, reset } after_answers = then::keep_reading;
  /// The first answer of each connection is replaced by a zero length prefix.
  bool zero_length_first = false;
  /// Answers are held until this many are due, then sent last first (RFC 7766 allows it).
  std::size_t reverse_batch = 1;
};

/// What the wire and the peer saw, over every connection of every client.
struct peer_log : wire_log {
  std::uint64_t queries_received = 0;
  std::uint64_t answers_sent = 0;
};

/// Sockets for a stream_transport that run `script`; `log` must outlive the run.
detail::stream_socket_factory make_socket_factory(const peer_script& script, peer_log& log);

}  // namespace dnstransport::scripted
