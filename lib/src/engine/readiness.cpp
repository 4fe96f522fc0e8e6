// The worker's epoll set of client sockets, watched by Asio as one descriptor.

#include "engine/readiness.hpp"

#include <sys/timerfd.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <system_error>

#include <boost/asio/post.hpp>

namespace dnstransport::detail {

namespace {

// The timer's events carry this key; a socket's never does (its registration number, in the
// upper half, starts at 1).
constexpr std::uint64_t timer_key = 0;

int new_epoll_set() {
  const int fd = epoll_create1(EPOLL_CLOEXEC);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "epoll_create1");
  return fd;
}

}  // namespace

readiness_set::readiness_set(boost::asio::io_context& io, syscall_counter& syscalls)
    : io_(io), syscalls_(syscalls), epoll_(io, new_epoll_set()) {}

readiness_set::~readiness_set() {
  if (timer_fd_ >= 0) ::close(timer_fd_);
}

void readiness_set::arm_timer(std::uint64_t at_ns) {
  if (timer_fd_ < 0) {
    const int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (fd < 0) throw std::system_error(errno, std::generic_category(), "timerfd_create");
    epoll_event event{};
    event.events = EPOLLIN | EPOLLET;  // one event per expiry, the count never read
    event.data.u64 = timer_key;
    if (epoll_ctl(epoll_.native_handle(), EPOLL_CTL_ADD, fd, &event) != 0) {
      const int error = errno;
      ::close(fd);
      throw std::system_error(error, std::generic_category(), "epoll_ctl (timerfd)");
    }
    timer_fd_ = fd;
  }
  // 0 would disarm it: 1 ns is as due.
  const std::uint64_t at = at_ns == 0 ? 1 : at_ns;
  itimerspec spec{};
  spec.it_value.tv_sec = static_cast<time_t>(at / 1'000'000'000u);
  spec.it_value.tv_nsec = static_cast<long>(at % 1'000'000'000u);
  timerfd_settime(timer_fd_, TFD_TIMER_ABSTIME, &spec, nullptr);
  ++timer_arms_;
}

void readiness_set::start() {
  // What became ready before (the clients' start arms waits) raised no edge Asio saw.
  dispatch();
  wait();
}

void readiness_set::wait() {
  epoll_.async_wait(boost::asio::posix::descriptor_base::wait_read,
                    [this](const boost::system::error_code& ec) {
                      if (ec) return;
                      dispatch();
                      wait();
                    });
}

void readiness_set::dispatch() {
  std::array<epoll_event, 64> events;
  for (;;) {
    const int n =
        epoll_wait(epoll_.native_handle(), events.data(), static_cast<int>(events.size()), 0);
    if (n <= 0) return;
    for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) {
      const std::uint64_t key = events[i].data.u64;
      if (key == timer_key) {
        if (on_timer_) on_timer_();
        continue;
      }
      const auto slot = static_cast<std::uint32_t>(key);
      // A socket closed by an earlier callback of this batch (its slot free or taken again).
      if (slot >= sockets_.size() || sockets_[slot] == nullptr || sockets_[slot]->key_ != key) {
        continue;
      }
      sockets_[slot]->on_events(events[i].events);
    }
    // Fewer than asked: the set is drained.
    if (static_cast<std::size_t>(n) < events.size()) return;
  }
}

int readiness_set::add(watched_socket& s, int fd) {
  std::uint32_t slot = 0;
  if (free_slots_.empty()) {
    slot = static_cast<std::uint32_t>(sockets_.size());
    sockets_.push_back(nullptr);
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
  }
  const std::uint64_t key = (std::uint64_t{++registrations_} << 32) | slot;
  epoll_event event{};
  event.events = EPOLLONESHOT;  // unarmed until a wait
  event.data.u64 = key;
  if (epoll_ctl(epoll_.native_handle(), EPOLL_CTL_ADD, fd, &event) != 0) {
    const int error = errno;
    free_slots_.push_back(slot);
    return error;
  }
  sockets_[slot] = &s;
  s.slot_ = slot;
  s.key_ = key;
  return 0;
}

void readiness_set::arm(watched_socket& s, std::uint32_t events) {
  epoll_event event{};
  event.events = events | EPOLLONESHOT;
  event.data.u64 = s.key_;
  // Reports at once what is ready now, as a wait that starts on a ready socket must end.
  epoll_ctl(epoll_.native_handle(), EPOLL_CTL_MOD, s.fd_, &event);
}

void readiness_set::remove(watched_socket& s) noexcept {
  // Closing the descriptor takes it out of the epoll set when nothing else holds its file
  // open; a duplicate's file stays open through the original, so it is taken out here (else
  // the set would go on watching the file, and refuse it again under the same number).
  if (s.duplicate_) epoll_ctl(epoll_.native_handle(), EPOLL_CTL_DEL, s.fd_, nullptr);
  sockets_[s.slot_] = nullptr;
  free_slots_.push_back(s.slot_);
  s.key_ = 0;
}

watched_socket::watched_socket(readiness_set& set, ready_callback on_ready)
    : set_(set), on_ready_(std::move(on_ready)) {}

watched_socket::~watched_socket() {
  if (fd_ < 0) return;
  set_.remove(*this);
  ::close(fd_);
}

int watched_socket::assign(int fd, bool duplicate) {
  armed_ = false;
  duplicate_ = duplicate;
  if (const int error = set_.add(*this, fd); error != 0) {
    ::close(fd);
    set_.syscalls().count_calls(1);
    return error;
  }
  fd_ = fd;
  return 0;
}

void watched_socket::arm() {
  armed_ = true;
  set_.arm(*this, (want_read_ ? EPOLLIN : 0u) | (want_write_ ? EPOLLOUT : 0u));
}

void watched_socket::async_wait(bool readable, std::uint64_t token) {
  if (fd_ < 0) {
    // As Asio does for a closed socket: the wait ends at once, cancelled.
    boost::asio::post(set_.io(), [this, readable, token] { on_ready_(readable, token, false); });
    return;
  }
  if (readable) {
    want_read_ = true;
    read_token_ = token;
  } else {
    want_write_ = true;
    write_token_ = token;
  }
  arm();
}

void watched_socket::on_events(std::uint32_t events) {
  armed_ = false;  // one shot
  const bool failed = (events & (EPOLLERR | EPOLLHUP)) != 0;
  const bool writable = failed || (events & EPOLLOUT) != 0;
  const std::uint64_t key = key_;
  if (want_read_ && (failed || (events & (EPOLLIN | EPOLLRDHUP)) != 0)) {
    want_read_ = false;
    on_ready_(true, read_token_, true);
    // The callback closed the socket (which ended the write wait too), and may have opened
    // another: the event is not that one's.
    if (key_ != key) return;
  }
  if (want_write_ && writable) {
    want_write_ = false;
    on_ready_(false, write_token_, true);
    if (key_ != key) return;
  }
  // A wait the event did not end (or that a callback began without arming) goes on.
  if (!armed_ && (want_read_ || want_write_)) arm();
}

void watched_socket::end_waits_later() {
  if (want_read_) {
    boost::asio::post(set_.io(), [this, token = read_token_] { on_ready_(true, token, false); });
  }
  if (want_write_) {
    boost::asio::post(set_.io(), [this, token = write_token_] { on_ready_(false, token, false); });
  }
  want_read_ = false;
  want_write_ = false;
}

void watched_socket::cancel() {
  // The socket stays armed until its next event, which then finds no wait and is dropped.
  end_waits_later();
}

void watched_socket::close() {
  if (fd_ < 0) return;
  end_waits_later();
  set_.remove(*this);
  ::close(fd_);
  set_.syscalls().count_calls(1);
  fd_ = -1;
  armed_ = false;
}

}  // namespace dnstransport::detail
