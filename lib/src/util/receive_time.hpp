#pragma once
// Internal: when a datagram arrived, from the kernel's stamp (SO_TIMESTAMPNS) rather than
// from when the generator read it. The kernel stamps each datagram with CLOCK_REALTIME as it
// is received; the engine's clock is CLOCK_MONOTONIC (util/clock.hpp). Both clocks are read
// once per batch of datagrams, and each stamp is taken as an age before that reading: the
// two clocks differ by an offset that only a clock step or NTP slewing changes, which over
// the microseconds between a datagram's arrival and its read is nothing.

#include <sys/socket.h>

#include <cstdint>
#include <cstring>
#include <ctime>

namespace dnstransport::detail {

// Room for one datagram's stamp in msg_control.
struct receive_stamp_space {
  alignas(cmsghdr) unsigned char data[CMSG_SPACE(sizeof(timespec))];
};

// Asks the kernel to stamp every datagram `fd` receives; false when it refuses (answers then
// take the time they were read).
inline bool enable_receive_stamps(int fd) noexcept {
  const int on = 1;
  return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on) == 0;
}

// The two clocks read together after a batch of datagrams was read.
struct receive_clock {
  std::uint64_t monotonic_now = 0;
  std::uint64_t realtime_now = 0;

  static receive_clock read() noexcept {
    receive_clock c;
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    c.monotonic_now = to_ns(ts);
    clock_gettime(CLOCK_REALTIME, &ts);
    c.realtime_now = to_ns(ts);
    return c;
  }

  // When the datagram of `message` (its control data as recvmsg left it) arrived, on the
  // monotonic clock; monotonic_now when it carries no stamp or one from the future.
  std::uint64_t received(const msghdr& message) const noexcept {
    for (const cmsghdr* c = CMSG_FIRSTHDR(&message); c != nullptr;
         c = CMSG_NXTHDR(const_cast<msghdr*>(&message), const_cast<cmsghdr*>(c))) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_TIMESTAMPNS) continue;
      timespec stamp;
      std::memcpy(&stamp, CMSG_DATA(c), sizeof stamp);
      const std::uint64_t at = to_ns(stamp);
      const std::uint64_t age = realtime_now > at ? realtime_now - at : 0;
      return age < monotonic_now ? monotonic_now - age : monotonic_now;
    }
    return monotonic_now;
  }

 private:
  static std::uint64_t to_ns(const timespec& ts) noexcept {
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u +
           static_cast<std::uint64_t>(ts.tv_nsec);
  }
};

}  // namespace dnstransport::detail
