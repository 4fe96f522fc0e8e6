#pragma once
// Internal: what a client that keeps connections (stream, QUIC) knows of the one it has open:
// when its set-up began, whether it is counted, the queries sent on it and the order of their
// answers. client_base (engine.hpp) begins one per connection and counts answers into it.

#include <cstdint>

namespace dnstransport::detail {

struct connection_tally {
  std::uint64_t started_ns = 0;  // when its set-up began
  std::uint64_t sent = 0;        // queries sent on it
  std::uint64_t highest_sequence_answered = 0;
  bool any_answered = false;
  bool counted = false;  // set-up began after the warm-up: the connection is counted

  // An answer to the client's `sequence`-th query came on the connection: true when it
  // overtook the answer to a later query (out of order).
  bool overtaken(std::uint64_t sequence) noexcept {
    if (any_answered && sequence < highest_sequence_answered) return true;
    highest_sequence_answered = sequence;
    any_answered = true;
    return false;
  }
};

}  // namespace dnstransport::detail
