#pragma once
// Internal: coalesced receiving's decision, made the same way by every client (UDP, TCP,
// DoT, DoH, DoQ). After a wake-up whose reads brought answers, a client with many queries in
// flight may read again after a short delay (worker::delay_read: one timer per worker for
// all its clients) instead of waiting for its socket at once: the answers that come in the
// meantime are read in one wake-up, and the queries that replace them leave in one write.
//
// The delay is at most run_plan::coalesce_ns and at most 1/20 of the client's recent
// latency, and none is taken under 10 us or with fewer than run_plan::coalesce_batch queries
// in flight. So it only engages where it cannot move a figure:
// - latency: answers are timed by the kernel's receive stamp (each datagram's over UDP and
//   DoQ; over TCP, DoT and DoH the newest segment's of a read, which an answer that came
//   during the delay may take): at most 1/20 of the latency late;
// - the load: by default it runs only where queries leave on a schedule (load.hpp,
//   generator_settings::coalesce_us), never in a closed loop, which sends a query when it
//   reads an answer and would send a delayed read's replacements together;
// - light loads (few in flight, latencies of tens of microseconds) never delay a read.

#include <algorithm>
#include <cstdint>
#include <utility>

#include "engine/run_plan.hpp"

namespace dnstransport::detail {

class read_coalescing {
 public:
  // A delay is at most this fraction of the recent latency.
  static constexpr std::uint64_t latency_factor = 20;
  // Shorter delays are not worth a timer: reads wait for readiness.
  static constexpr std::uint64_t min_delay_ns = 10'000;

  // A message that matched a query in flight came, `latency_ns` after the query was sent.
  // The recent latency follows falls at once and rises slowly (1/16 of the difference per
  // answer), so one slow answer does not lengthen the delays.
  void answered(std::uint64_t latency_ns) noexcept {
    ++taken_;
    latency_low_ns_ = latency_ns <= latency_low_ns_ || latency_low_ns_ == 0
                          ? latency_ns
                          : latency_low_ns_ + (latency_ns - latency_low_ns_) / 16;
  }

  // After a wake-up's reads: how long to wait before reading again, with `in_flight`
  // queries now in flight; 0: wait for the socket's readiness as usual. Starts the next
  // wake-up's count of answers.
  std::uint64_t delay_ns(const run_plan& plan, unsigned in_flight) noexcept {
    const unsigned taken = std::exchange(taken_, 0);
    if (plan.coalesce_ns == 0 || taken == 0 || in_flight < run_plan::coalesce_batch) return 0;
    const std::uint64_t delay = std::min(plan.coalesce_ns, latency_low_ns_ / latency_factor);
    return delay >= min_delay_ns ? delay : 0;
  }

  std::uint64_t recent_latency_ns() const noexcept { return latency_low_ns_; }

 private:
  unsigned taken_ = 0;  // answers since the last delay_ns
  std::uint64_t latency_low_ns_ = 0;
};

}  // namespace dnstransport::detail
