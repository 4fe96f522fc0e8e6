#pragma once
// Internal: pinning threads to CPUs.

namespace dnstransport::detail {

// Pins the calling thread to one CPU; returns false (and changes nothing) when refused.
bool pin_current_thread(int cpu) noexcept;

// Number of CPUs the process may run on.
unsigned usable_cpu_count() noexcept;

}  // namespace dnstransport::detail
