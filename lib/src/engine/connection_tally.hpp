#pragma once
// Internal: what a client that keeps connections (stream, QUIC) knows of the one it has open:
// when its set-up began, whether it is counted, the queries sent on it and the order and
// spacing of their answers. client_base (engine.hpp) begins one per connection and counts
// answers into it.

#include <algorithm>
#include <cstdint>
#include <limits>

namespace dnstransport::detail {

struct connection_tally {
  std::uint64_t started_ns = 0;  // when its set-up began
  std::uint64_t sent = 0;        // queries sent on it
  std::uint64_t highest_sequence_answered = 0;
  bool any_answered = false;
  bool counted = false;  // set-up began after the warm-up: the connection is counted
  // When the newest answer on it arrived, and its shortest latency so far (warm-up included).
  std::uint64_t last_answer_ns = 0;
  std::uint64_t shortest_latency_ns = std::numeric_limits<std::uint64_t>::max();

  // An answer to the client's `sequence`-th query came on the connection: true when it
  // overtook the answer to a later query (out of order).
  bool overtaken(std::uint64_t sequence) noexcept {
    if (any_answered && sequence < highest_sequence_answered) return true;
    highest_sequence_answered = sequence;
    any_answered = true;
    return false;
  }

  // How an answer stood to the answers before it on the connection. A whole answer time is
  // 3/4 of the connection's shortest latency.
  struct spacing {
    // Its query was sent a whole answer time or more before the previous answer arrived: it
    // waited behind an earlier query, long enough to be answered by then had the server
    // worked on the two together.
    bool queued = false;
    // Queued, in order, and a whole answer time after the previous answer: as if the server
    // had started on it only then. (Answers that follow queries sent one by one, each
    // answered a latency after its own send, are never both queued and that far apart.)
    bool one_at_a_time = false;
  };
  // The answer to a query sent at `sent_ns` arrived at `arrived_ns`; `in_order`: it overtook
  // no later query's answer (overtaken() said false). Call once per answer, in arrival order.
  spacing space(std::uint64_t sent_ns, std::uint64_t arrived_ns, bool in_order) noexcept {
    spacing s;
    const auto whole_answer_time = [this](std::uint64_t t) {
      return t * 4 >= shortest_latency_ns * 3;
    };
    if (last_answer_ns != 0 && last_answer_ns > sent_ns &&
        whole_answer_time(last_answer_ns - sent_ns)) {
      s.queued = true;
      const std::uint64_t gap = arrived_ns > last_answer_ns ? arrived_ns - last_answer_ns : 0;
      s.one_at_a_time = in_order && whole_answer_time(gap);
    }
    last_answer_ns = std::max(last_answer_ns, arrived_ns);
    if (arrived_ns > sent_ns)
      shortest_latency_ns = std::min(shortest_latency_ns, arrived_ns - sent_ns);
    return s;
  }
};

}  // namespace dnstransport::detail
