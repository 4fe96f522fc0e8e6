#pragma once
// Internal: when an answer arrived, from the kernel's stamp (SO_TIMESTAMPNS) rather than
// from when the generator read it. The kernel stamps each packet with CLOCK_REALTIME as it
// is received; a datagram's recvmsg returns its own stamp, a TCP recvmsg the stamp of the
// newest segment it took data from (so every byte it returned arrived at or before it). The
// engine's clock is CLOCK_MONOTONIC (util/clock.hpp). Both clocks are read once per batch of
// reads, and each stamp is moved onto the monotonic clock by their difference then: it
// changes only with a clock step or NTP slewing, which over the microseconds between a
// packet's arrival and its read is nothing.

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <ctime>

namespace dnstransport::detail {

// Room for one datagram's stamp in msg_control.
struct receive_stamp_space {
  alignas(cmsghdr) unsigned char data[CMSG_SPACE(sizeof(timespec))];
};

// Asks the kernel to stamp every packet `fd` receives; false when it refuses (answers then
// take the time they were read).
inline bool enable_receive_stamps(int fd) noexcept {
  const int on = 1;
  return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on) == 0;
}

// The two clocks read together after a batch of datagrams was read.
struct receive_clock {
  std::uint64_t monotonic_now = 0;
  std::uint64_t realtime_ahead = 0;  // CLOCK_REALTIME - CLOCK_MONOTONIC

  // The realtime reading between two monotonic ones: an interrupt or a preemption between
  // the readings (tens of microseconds now and then on a VM) would otherwise be taken for
  // an offset between the clocks and move every stamp of the batch by as much.
  static receive_clock read() noexcept {
    std::uint64_t before = 0;
    std::uint64_t real = 0;
    std::uint64_t after = 0;
    for (int attempt = 0; attempt < 4; ++attempt) {
      before = clock_ns(CLOCK_MONOTONIC);
      real = clock_ns(CLOCK_REALTIME);
      after = clock_ns(CLOCK_MONOTONIC);
      if (after - before <= max_reading_gap_ns) break;
    }
    receive_clock c;
    c.monotonic_now = after;
    c.realtime_ahead = real - before / 2 - after / 2;
    return c;
  }

  // When the datagram of `message` (its control data as recvmsg left it) arrived, on the
  // monotonic clock; monotonic_now when it carries no stamp, or one that would put it in
  // the future.
  std::uint64_t received(const msghdr& message) const noexcept {
    return received(receive_stamp(message));
  }

  // A stamp (receive_stamp) on the monotonic clock; monotonic_now for 0 (none) or a stamp
  // that would put the arrival in the future.
  std::uint64_t received(std::uint64_t stamp) const noexcept {
    if (stamp < realtime_ahead || stamp - realtime_ahead > monotonic_now) return monotonic_now;
    return stamp - realtime_ahead;
  }

  // The stamp in `message`'s control data as recvmsg left it (CLOCK_REALTIME, ns); 0 when
  // it carries none.
  static std::uint64_t receive_stamp(const msghdr& message) noexcept {
    for (const cmsghdr* c = CMSG_FIRSTHDR(&message); c != nullptr;
         c = CMSG_NXTHDR(const_cast<msghdr*>(&message), const_cast<cmsghdr*>(c))) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_TIMESTAMPNS) continue;
      timespec stamp;
      std::memcpy(&stamp, CMSG_DATA(c), sizeof stamp);
      return to_ns(stamp);
    }
    return 0;
  }

 private:
  static constexpr std::uint64_t max_reading_gap_ns = 1000;

  static std::uint64_t clock_ns(clockid_t clock) noexcept {
    timespec ts;
    clock_gettime(clock, &ts);
    return to_ns(ts);
  }
  static std::uint64_t to_ns(const timespec& ts) noexcept {
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u +
           static_cast<std::uint64_t>(ts.tv_nsec);
  }
};

// One recvmsg of at most `size` octets into `data` that also takes the read's receive stamp:
// on success `newest` rises to it (a TCP read's is its newest segment's). Returns what
// recvmsg returned, with errno as it left it.
inline ssize_t receive_stamped(int fd, void* data, std::size_t size,
                               std::uint64_t& newest) noexcept {
  iovec space{data, size};
  receive_stamp_space control;
  msghdr message{};
  message.msg_iov = &space;
  message.msg_iovlen = 1;
  message.msg_control = control.data;
  message.msg_controllen = sizeof control.data;
  const ssize_t n = ::recvmsg(fd, &message, 0);
  if (n > 0) newest = std::max(newest, receive_clock::receive_stamp(message));
  return n;
}

}  // namespace dnstransport::detail
