#pragma once
// Internal: readiness of a worker's client sockets (UDP, DoQ and the stream transports' TCP).
//
// Asio's reactor keeps every socket it opens registered for edge-triggered input, so each
// datagram or segment that arrives wakes the worker's epoll_wait, whether or not a client
// waits for it. With coalesced reads (run_plan::coalesce_ns) the clients deliberately read
// later, and those wake-ups found nothing to do: against a server that answers one message
// per packet they were most of the generator's sleeps (0.24 sleeps per answer for 0.08
// useful wake-ups against dnsdist over TCP), and a sleep and wake-up costs several
// microseconds of CPU (over 10 in a VM). So the clients' sockets live in the worker's own
// epoll set instead, which Asio watches as one descriptor, each armed only while its client
// waits (EPOLLONESHOT, re-armed by each wait with the directions waited for): a socket whose
// client reads after a delay wakes no one until then.
//
// Waits keep Asio's async_wait contract: one call per wait, and it ends when the socket is
// ready, already when it starts or later; a wait cancelled by cancel() or close() is called
// back later with ok = false. Arming a wait costs one epoll_ctl, as Asio's did, and a wake-up
// one epoll_wait on the set besides Asio's. Those readiness calls are not counted in the
// worker's system calls (generator_stats::syscalls), as Asio's were not.
//
// The set also holds the worker's one timer (arrivals, read delays: timer_deadlines.hpp), a
// timerfd in the set, edge-triggered and never read (an arm resets its count): an expiry is
// one more event of the set's wake-up, with no call of its own, and an arm one
// timerfd_settime, where an Asio timer costs two per expiry.

#include <sys/epoll.h>

#include <cstdint>
#include <functional>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include "util/syscall_counter.hpp"

namespace dnstransport::detail {

class watched_socket;

class readiness_set {
 public:
  // `syscalls`: the worker's, where the sockets' close is counted.
  readiness_set(boost::asio::io_context& io, syscall_counter& syscalls);
  readiness_set(const readiness_set&) = delete;
  readiness_set& operator=(const readiness_set&) = delete;

  boost::asio::io_context& io() noexcept { return io_; }
  syscall_counter& syscalls() noexcept { return syscalls_; }
  // Waits for the sockets' events until the io_context stops.
  void start();
  // The epoll set (readable when a socket it reports is ready: what wakes the worker).
  int native_handle() noexcept { return epoll_.native_handle(); }

  // The set's timer: `on_timer` is called (on the io_context's thread) when it expires.
  void on_timer(std::function<void()> callback) { on_timer_ = std::move(callback); }
  // Expires at `at_ns` (CLOCK_MONOTONIC, monotonic_ns()), replacing the time of an earlier
  // arm: one timerfd_settime (the first also creates the timerfd and adds it to the set).
  void arm_timer(std::uint64_t at_ns);
  // Arms so far: the timerfd_settime calls.
  std::uint64_t timer_arms() const noexcept { return timer_arms_; }
  ~readiness_set();

 private:
  friend class watched_socket;
  // 0 or an errno.
  int add(watched_socket& s, int fd);
  void arm(watched_socket& s, std::uint32_t events);
  void remove(watched_socket& s) noexcept;
  void wait();
  void dispatch();

  boost::asio::io_context& io_;
  syscall_counter& syscalls_;
  boost::asio::posix::stream_descriptor epoll_;
  // Registered sockets by slot (null: free). An event carries its socket's slot and the
  // registration's number, so an event of a socket closed since it was collected is dropped.
  std::vector<watched_socket*> sockets_;
  std::vector<std::uint32_t> free_slots_;
  std::uint32_t registrations_ = 0;
  int timer_fd_ = -1;
  std::function<void()> on_timer_;
  std::uint64_t timer_arms_ = 0;
};

// A client's socket descriptor, owned (closed with the object) and watched by a worker's
// readiness_set. It must outlive the io_context's run (its cancelled waits are posted).
class watched_socket {
 public:
  // Called when a wait ends: `readable` says which, `token` is the wait's (as given to
  // async_wait), `ok` is false when it was cancelled.
  using ready_callback = std::function<void(bool readable, std::uint64_t token, bool ok)>;

  watched_socket(readiness_set& set, ready_callback on_ready);
  ~watched_socket();
  watched_socket(const watched_socket&) = delete;
  watched_socket& operator=(const watched_socket&) = delete;

  // Takes `fd` (open, non-blocking) and adds it to the set, unarmed; returns 0, or the errno
  // of epoll_ctl (the descriptor is then closed). `duplicate`: `fd` is a dup() of a
  // descriptor that stays open elsewhere (an AF_XDP socket's, libxdp's): its close also
  // removes it from the set explicitly (one epoll_ctl).
  int assign(int fd, bool duplicate = false);
  int native_handle() const noexcept { return fd_; }
  bool is_open() const noexcept { return fd_ >= 0; }

  void async_wait(bool readable, std::uint64_t token = 0);
  // Ends the waits (called back with ok = false).
  void cancel();
  // Cancels the waits and closes the descriptor (one close, counted).
  void close();

 private:
  friend class readiness_set;
  void on_events(std::uint32_t events);
  void end_waits_later();
  void arm();

  readiness_set& set_;
  ready_callback on_ready_;
  int fd_ = -1;
  std::uint32_t slot_ = 0;
  std::uint64_t key_ = 0;   // slot and registration number, as events carry them
  bool armed_ = false;      // the set reports the directions waited for (until an event)
  bool duplicate_ = false;  // assign()'s
  bool want_read_ = false;
  bool want_write_ = false;
  std::uint64_t read_token_ = 0;
  std::uint64_t write_token_ = 0;
};

}  // namespace dnstransport::detail
