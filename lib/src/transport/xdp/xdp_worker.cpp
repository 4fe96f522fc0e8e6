// One worker thread's side of a run over AF_XDP (xdp_worker.hpp).
#include "transport/xdp/xdp_worker.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>

#include <boost/asio/post.hpp>

#include "engine/readiness.hpp"
#include "transport/xdp/xdp_client_socket.hpp"
#include "transport/xdp/xdp_run.hpp"
#include "transport/xdp/xdp_tcp_connections.hpp"
#include "util/syscall_counter.hpp"

namespace dnstransport::detail {

xdp_worker::xdp_worker(xdp_run& run, unsigned index, readiness_set& set, syscall_counter& syscalls)
    : run_(run),
      index_(index),
      set_(set),
      syscalls_(syscalls),
      sender_(run.port(index)),
      clients_(65536, nullptr),
      finished_(65536, false),
      reading_(run.queues()) {
  each_ = [this](const received_datagram& datagram, std::uint64_t received_ns) {
    const std::uint16_t port = datagram.destination_port;
    xdp_worker* owner = run_.owner(port);
    // To the client of that port, at its own address.
    if (owner == nullptr || !run_.addressed_to(port, datagram.destination)) return;
    if (datagram.tcp) {
      // One worker thread over TCP (xdp_run refuses more): its own connection's.
      if (owner == this) tcp().receive(port, *datagram.tcp, datagram.payload, received_ns);
      return;
    }
    if (owner == this) {
      deliver(port, datagram.payload, received_ns);
      return;
    }
    // Copied for its worker, handed over after the read (xdp_port::receive must not throw:
    // out of memory, the answer is lost, as a full socket buffer loses one).
    try {
      const unsigned i = owner->index();
      if (i >= outboxes_.size()) {
        outboxes_.resize(i + 1);
        outbox_owners_.resize(i + 1, nullptr);
      }
      outbox_owners_[i] = owner;
      outboxes_[i].add(port, datagram.payload, received_ns);
    } catch (...) {
    }
  };
}

void xdp_worker::answer_batch::add(std::uint16_t port, std::span<const std::uint8_t> payload,
                                   std::uint64_t received_ns) {
  answers.push_back({port, received_ns, bytes.size(), payload.size()});
  bytes.insert(bytes.end(), payload.begin(), payload.end());
}

xdp_worker::~xdp_worker() = default;

void xdp_worker::join(xdp_client_socket& client, std::uint16_t port) {
  if (clients_[port] == nullptr) ++joined_;
  clients_[port] = &client;
}

void xdp_worker::leave(std::uint16_t port) noexcept {
  if (clients_[port] == nullptr) return;
  clients_[port] = nullptr;
  if (finished_[port]) {
    finished_[port] = false;
    --finished_count_;
  }
  --joined_;
  std::erase_if(writers_, [port](xdp_client_socket* c) { return c->port() == port; });
  std::erase_if(waiting_clients_, [port](xdp_client_socket* c) { return c->port() == port; });
  retire_if_done();
}

void xdp_worker::client_finished(std::uint16_t port) noexcept {
  if (clients_[port] == nullptr || finished_[port]) return;
  finished_[port] = true;
  ++finished_count_;
  retire_if_done();
}

void xdp_worker::retire_if_done() noexcept {
  if (retired_ || finished_count_ < joined_) return;
  retired_ = true;
  {
    const std::lock_guard lock(handed_mutex_);
    accepting_ = false;
    handed_.clear();
  }
  run_.retire(*this);
  // This thread reads nothing more: the queues went to a worker still running.
  for (auto& w : reading_) w.reset();
  writing_.reset();
  writers_.clear();
  waiting_clients_.clear();
}

int xdp_worker::send(const frame_addresses& to, std::span<mmsghdr> messages) {
  return sender_.send(to, messages, syscalls_);
}

void xdp_worker::wait_writable(xdp_client_socket& client) noexcept {
  try {
    writers_.push_back(&client);
    if (!writing_) {
      writing_ = std::make_unique<watched_socket>(set_, [this](bool, std::uint64_t, bool ok) {
        if (ok) on_writable();
      });
      // The descriptor stays libxdp's: the set watches (and closes) a duplicate of it.
      const int fd = dup(sender_.descriptor());
      if (fd < 0 || writing_->assign(fd, true) != 0) {
        writing_.reset();
        return;
      }
    }
  } catch (...) {
    return;
  }
  sender_.kick_send(syscalls_);
  writing_->async_wait(false);
}

void xdp_worker::on_writable() {
  if (!sender_.reclaim()) {
    sender_.kick_send(syscalls_);
    if (writing_) writing_->async_wait(false);
    return;
  }
  std::vector<xdp_client_socket*> writers;
  writers.swap(writers_);
  for (xdp_client_socket* c : writers) c->wake_writable();
}

void xdp_worker::start_reading(unsigned queue) {
  if (retired_ || reading_[queue] || !run_.reads(*this, queue)) return;
  auto watch = std::make_unique<watched_socket>(set_, [this, queue](bool, std::uint64_t, bool ok) {
    if (ok) on_readable(queue);
  });
  const int fd = dup(run_.port(queue).descriptor());
  if (fd < 0 || watch->assign(fd, true) != 0) return;
  reading_[queue] = std::move(watch);
  // Frames that came before: the set reports a socket readable already when armed.
  reading_[queue]->async_wait(true);
}

void xdp_worker::stop_reading(unsigned queue) noexcept {
  if (reading_[queue] && !run_.reads(*this, queue)) reading_[queue].reset();
}

xdp_tcp_connections& xdp_worker::tcp() {
  if (!tcp_)
    tcp_ = std::make_unique<xdp_tcp_connections>(run_, *this, sender_, set_.io(), syscalls_);
  return *tcp_;
}

void xdp_worker::leave_tcp() noexcept {
  if (tcp_sockets_ == 0 || --tcp_sockets_ > 0) return;
  tcp_.reset();
  retire_if_done();
}

void xdp_worker::on_readable(unsigned queue) {
  run_.port(queue).receive(run_.addresses(), each_, syscalls_);
  hand_over_read();
  wake_waiting();
  if (tcp_) tcp_->after_read();
  if (reading_[queue]) reading_[queue]->async_wait(true);
}

void xdp_worker::deliver(std::uint16_t port, std::span<const std::uint8_t> payload,
                         std::uint64_t received_ns) {
  if (xdp_client_socket* c = clients_[port]; c != nullptr && c->deliver(payload, received_ns)) {
    waiting_clients_.push_back(c);
  }
}

void xdp_worker::wake_waiting() {
  // The clients that have answers and wait for them, called back after the whole read.
  woken_.clear();
  woken_.swap(waiting_clients_);
  for (xdp_client_socket* c : woken_) c->wake_readable();
}

void xdp_worker::hand_over_read() {
  for (std::size_t i = 0; i < outboxes_.size(); ++i) {
    if (!outboxes_[i].answers.empty()) outbox_owners_[i]->hand_over(outboxes_[i]);
  }
}

void xdp_worker::hand_over(answer_batch& batch) {
  const std::lock_guard lock(handed_mutex_);
  if (accepting_) {
    try {
      const std::size_t base = handed_.bytes.size();
      handed_.bytes.insert(handed_.bytes.end(), batch.bytes.begin(), batch.bytes.end());
      for (answer_batch::entry e : batch.answers) {
        e.offset += base;
        handed_.answers.push_back(e);
      }
    } catch (...) {  // out of memory: the answers are lost, as a full socket buffer loses them
    }
  }
  batch.clear();
  if (!accepting_ || handed_posted_ || handed_.answers.empty()) return;
  handed_posted_ = true;
  // While accepting, the worker runs: its io_context is there. The run may be gone when the
  // post is taken (a load that ended with it queued): then it does nothing.
  boost::asio::post(set_.io(), [run = run_.weak_from_this(), this] {
    if (const auto alive = run.lock()) take_handed();
  });
}

void xdp_worker::take_handed() {
  {
    const std::lock_guard lock(handed_mutex_);
    handed_posted_ = false;
    taken_.clear();
    std::swap(taken_, handed_);
  }
  for (const answer_batch::entry& a : taken_.answers) {
    deliver(a.port, {taken_.bytes.data() + a.offset, a.size}, a.received_ns);
  }
  wake_waiting();
}

}  // namespace dnstransport::detail
