#pragma once
// Internal: the one clock of the engine. CLOCK_MONOTONIC through the vDSO costs a few tens of
// nanoseconds; the engine reads it once per batch of events, not per query.

#include <cstdint>
#include <ctime>

namespace dnstransport::detail {

inline std::uint64_t monotonic_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

inline constexpr std::uint64_t seconds_to_ns(double seconds) noexcept {
  return static_cast<std::uint64_t>(seconds * 1e9);
}

}  // namespace dnstransport::detail
