#pragma once
// Internal: the responder's one rate limit (server_options::rate_limit), shared by every
// server thread and listener. A token bucket in its "virtual scheduling" form (GCRA): one
// atomic holds the time the next query is due, and a query conforms when that time is no
// later than now plus the burst tolerance. Refilled from CLOCK_MONOTONIC; lock-free (one
// compare-exchange per batch of queries).

#include <atomic>
#include <cstdint>

namespace dnstransport::detail {

class rate_limiter {
 public:
  // At most `per_second` queries per second (> 0), with a burst of 16 queries or
  // `burst_seconds`' worth, whichever is more: over any window of W seconds at most
  // per_second * W + burst queries conform.
  explicit rate_limiter(double per_second, double burst_seconds = 0.005);

  // UDP: takes up to `wanted` tokens at `now_ns` (monotonic_ns()); returns how many it got,
  // in 0..wanted. The queries that got none are dropped.
  std::uint32_t take(std::uint32_t wanted, std::uint64_t now_ns) noexcept;

  // Streams: takes the next token, even one not due yet, and returns when it is due (at
  // most now_ns when it is there now). The caller answers its query then: every waiting
  // connection holds a token of its own, in the order they asked, so no two wake for the
  // same one. A token whose query is never answered (the connection closed) is lost.
  std::uint64_t reserve(std::uint64_t now_ns) noexcept;

  // Queries a burst may hold, for tests.
  std::uint64_t burst() const noexcept { return tolerance_ps_ / interval_ps_ + 1; }

 private:
  // Times are picoseconds since epoch_ns_, so the interval of any sensible rate is exact
  // to far better than a part per million; 2^64 ps is 213 days of uptime.
  std::uint64_t epoch_ns_;
  std::uint64_t interval_ps_;             // between two queries at the limit
  std::uint64_t tolerance_ps_;            // (burst - 1) intervals
  std::atomic<std::uint64_t> due_ps_{0};  // when the next query is due, without the burst
};

}  // namespace dnstransport::detail
