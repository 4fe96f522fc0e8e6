#pragma once
// Internal: the system calls the generator makes on its own sockets, counted where they are
// made. Each worker owns one (engine/counters.hpp: generator_counters) and hands it down to
// its clients' sockets, byte streams and TLS sessions; it is never shared between threads.
// The layers the responder shares (byte streams, TLS sessions) get none there and count
// nothing. Calls Asio makes on its own (epoll_wait, epoll_ctl, timerfd_settime) are not here.

#include <cerrno>
#include <cstdint>

namespace dnstransport::detail {

struct syscall_counter {
  std::uint64_t calls = 0;
  std::uint64_t would_block = 0;  // of calls: failed with EAGAIN / EWOULDBLOCK

  // One call that returned `result`; negative: it failed, and errno (still unchanged) says
  // why.
  void count(long result) noexcept {
    ++calls;
    if (result < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) ++would_block;
  }
  // `n` calls whose outcome does not matter here (socket set-up: socket, setsockopt,
  // bind).
  void count_calls(unsigned n) noexcept { calls += n; }

  void merge(const syscall_counter& other) noexcept {
    calls += other.calls;
    would_block += other.would_block;
  }
};

// For a layer that may have no counter (the responder's side).
inline void count_syscall(syscall_counter* counter, long result) noexcept {
  if (counter != nullptr) counter->count(result);
}

}  // namespace dnstransport::detail
