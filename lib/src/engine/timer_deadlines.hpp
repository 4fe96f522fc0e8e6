#pragma once
// Internal: a worker's deadlines (its next open-loop arrival, the end of its read delay) and
// what its one timer, the readiness set's (readiness.hpp), must do about them (worker.cpp).
//
// An Asio steady_timer costs two timerfd_settime calls per expiry: Asio re-arms its one timerfd
// when a timer fires (to the next timer of its queue) and again when the next wait becomes the
// earliest. On a VM an arm reprograms the guest's timer hardware, a trap to the hypervisor
// (on the reference VM about a third of an open-loop run's client CPU at 50,000 q/s went to
// them). The readiness set's timer costs no call when it expires and one per arm, and it is
// armed only when the earliest deadline comes before the time it is already armed for;
// deadlines that are due already run from the event loop's queue (a post, no call).

#include <algorithm>
#include <array>
#include <cstdint>

namespace dnstransport::detail {

// No system call here: unit-tested with its own clock.
class timer_deadlines {
 public:
  static constexpr std::uint64_t none = UINT64_MAX;
  enum slot : unsigned { arrivals = 0, delays = 1 };

  void set(slot s, std::uint64_t due) noexcept { due_[s] = due; }
  std::uint64_t due(slot s) const noexcept { return due_[s]; }
  std::uint64_t earliest() const noexcept { return std::min(due_[0], due_[1]); }

  // What the timer must do at `now`, the deadlines set: keep (it is armed for the earliest or
  // sooner, or a run is queued, or there is none), arm for `at`, or run at once (due now).
  enum class step { keep, arm, run_now };
  struct action {
    step what = step::keep;
    std::uint64_t at = none;
  };
  action plan(std::uint64_t now) noexcept {
    const std::uint64_t e = earliest();
    if (e == none || run_queued_) return {};
    if (e <= now) {
      run_queued_ = true;
      return {step::run_now, e};
    }
    if (armed_for_ <= e) return {};  // a wake-up comes first (at worst one too early)
    armed_for_ = e;
    return {step::arm, e};
  }
  // The timer expired or a queued run began, at `now`.
  void woke(std::uint64_t now) noexcept {
    if (armed_for_ <= now) armed_for_ = none;  // a timerfd never expires early
    run_queued_ = false;
  }
  std::uint64_t armed_for() const noexcept { return armed_for_; }

 private:
  std::array<std::uint64_t, 2> due_{none, none};
  std::uint64_t armed_for_ = none;  // the timerfd's expiry (none: disarmed or expired)
  bool run_queued_ = false;
};

}  // namespace dnstransport::detail
