#include "responder/rate_limiter.hpp"

#include <algorithm>
#include <cmath>

#include "util/clock.hpp"

namespace dnstransport::detail {

namespace {

// The burst (by default 5 ms' worth): enough to absorb a few milliseconds' stall of the
// generator or of a responder thread (a query held in a socket buffer is judged when it is
// read) at a rate under the limit, small enough that a window of 0.1 s holds hardly more
// than its share and that a step of a search over the limit fails.
constexpr std::uint64_t minimum_burst = 16;
// One query per 1,000 s at the least, so the arithmetic stays far from overflowing.
constexpr double longest_interval_ps = 1e15;

}  // namespace

rate_limiter::rate_limiter(double per_second, double burst_seconds)
    : epoch_ns_(monotonic_ns()),
      interval_ps_(static_cast<std::uint64_t>(
          std::clamp(std::round(1e12 / per_second), 1.0, longest_interval_ps))) {
  const auto burst =
      std::max(minimum_burst, static_cast<std::uint64_t>(std::ceil(per_second * burst_seconds)));
  tolerance_ps_ = (burst - 1) * interval_ps_;
}

std::uint32_t rate_limiter::take(std::uint32_t wanted, std::uint64_t now_ns) noexcept {
  if (wanted == 0) return 0;
  const std::uint64_t now_ps = now_ns > epoch_ns_ ? (now_ns - epoch_ns_) * 1000 : 0;
  const std::uint64_t latest = now_ps + tolerance_ps_;  // a query due later must wait
  std::uint64_t due = due_ps_.load(std::memory_order_relaxed);
  for (;;) {
    // Time that passed with no query is credit only up to the burst.
    const std::uint64_t from = std::max(due, now_ps);
    if (from > latest) return 0;
    const std::uint64_t granted =
        std::min<std::uint64_t>(wanted, (latest - from) / interval_ps_ + 1);
    if (due_ps_.compare_exchange_weak(due, from + granted * interval_ps_,
                                      std::memory_order_relaxed)) {
      return static_cast<std::uint32_t>(granted);
    }
  }
}

std::uint64_t rate_limiter::reserve(std::uint64_t now_ns) noexcept {
  const std::uint64_t now_ps = now_ns > epoch_ns_ ? (now_ns - epoch_ns_) * 1000 : 0;
  std::uint64_t due = due_ps_.load(std::memory_order_relaxed);
  std::uint64_t from = 0;
  do {
    from = std::max(due, now_ps);
  } while (!due_ps_.compare_exchange_weak(due, from + interval_ps_, std::memory_order_relaxed));
  if (from <= now_ps + tolerance_ps_) return now_ns;
  return epoch_ns_ + (from - tolerance_ps_ + 999) / 1000;
}

}  // namespace dnstransport::detail
