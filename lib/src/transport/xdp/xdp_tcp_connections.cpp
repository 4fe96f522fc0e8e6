// One worker's TCP connections over AF_XDP (xdp_tcp_connections.hpp).
#include "transport/xdp/xdp_tcp_connections.hpp"

#include <algorithm>
#include <random>

#include "transport/xdp/xdp_port.hpp"
#include "transport/xdp/xdp_run.hpp"
#include "transport/xdp/xdp_tcp_socket.hpp"
#include "util/clock.hpp"

namespace dnstransport::detail {

namespace {

constexpr std::uint64_t stall_retry_ns = 1'000'000;  // 1 ms

}  // namespace

bool xdp_tcp_connections::slot::send_segment(const tcp_header& header,
                                             std::span<const iovec> payload) {
  if (table.send(to, header, payload)) return true;
  table.stall(to.source_port);
  return false;
}

void xdp_tcp_connections::stall(std::uint16_t port) {
  slot& s = *slots_[port];
  if (!s.stalled) {
    s.stalled = true;
    stalled_.push_back(port);
  }
  arm_timer(monotonic_ns() + stall_retry_ns);
}

xdp_tcp_connections::xdp_tcp_connections(xdp_run& run, xdp_worker& worker, xdp_port& sender,
                                         boost::asio::io_context& io, syscall_counter& syscalls)
    : run_(run),
      worker_(worker),
      sender_(sender),
      syscalls_(syscalls),
      timer_(io),
      mss_(run.tcp_mss()),
      slots_(65536),
      random_(std::random_device{}()) {}

xdp_tcp_connections::~xdp_tcp_connections() {
  // The run is over: connections still in their FIN exchange (or anything else) are reset,
  // so that the server forgets them before a later run uses their ports again.
  dispatching_ = true;
  for (const std::uint16_t port : active_) {
    slot& s = *slots_[port];
    if (s.connection.state() != xdp_tcp_connection::phase::finished) {
      s.connection.close(true, monotonic_ns(), s);
    }
  }
  dispatching_ = false;
  kick();
}

bool xdp_tcp_connections::send(const frame_addresses& to, const tcp_header& header,
                               std::span<const iovec> payload) {
  const bool sent = sender_.send_segment(to, header, payload);
  if (sent) {
    sent_ = true;
    if (!dispatching_) kick();
  }
  return sent;
}

void xdp_tcp_connections::kick() {
  if (!sent_) return;
  sent_ = false;
  sender_.kick_send_all(syscalls_);
}

std::optional<std::uint16_t> xdp_tcp_connections::open(
    xdp_tcp_socket& socket, const std::optional<boost::asio::ip::address>& source) {
  const boost::asio::ip::address& from = source ? *source : run_.addresses().source;
  if (from.is_v4() != run_.addresses().destination.is_v4()) return std::nullopt;
  std::uint16_t port = 0;
  if (!free_ports_.empty()) {
    port = free_ports_.back();
    free_ports_.pop_back();
    run_.set_source(port, from);
  } else if (const auto fresh = run_.new_port(worker_, from)) {
    port = *fresh;
    slots_[port] = std::make_unique<slot>(*this, mss_);
    // Each port's first sequence number is random (RFC 9293, 3.4.1); later connections on
    // the port start past the last one's, so that a server still holding the old one
    // (TIME-WAIT) takes the new SYN.
    slots_[port]->next_iss = static_cast<std::uint32_t>(random_());
  } else {
    return std::nullopt;
  }
  slot& s = *slots_[port];
  s.to = run_.addresses();
  s.to.source = from;
  s.to.source_port = port;
  s.socket = &socket;
  s.pending = {};
  s.newest_arrival = 0;
  const std::uint32_t iss = s.next_iss;
  s.connection.open(iss, monotonic_ns(), s);
  if (s.active_at == not_active) {
    s.active_at = active_.size();
    active_.push_back(port);
  }
  if (const auto at = s.connection.deadline()) arm_timer(*at);
  return port;
}

void xdp_tcp_connections::release(std::uint16_t port, bool abortive) {
  slot& s = *slots_[port];
  s.socket = nullptr;
  s.connection.close(abortive, monotonic_ns(), s);
  settle(port);
}

std::size_t xdp_tcp_connections::write(std::uint16_t port, std::span<const iovec> pieces) {
  slot& s = *slots_[port];
  const std::size_t taken = s.connection.write(pieces, monotonic_ns(), s);
  if (const auto at = s.connection.deadline()) arm_timer(*at);
  return taken;
}

void xdp_tcp_connections::receive(std::uint16_t port, const tcp_header& header,
                                  std::span<const std::uint8_t> payload,
                                  std::uint64_t received_ns) {
  dispatching_ = true;
  slot* s = slots_[port].get();
  if (s == nullptr || s->connection.state() == xdp_tcp_connection::phase::closed ||
      (s->socket == nullptr && s->connection.state() == xdp_tcp_connection::phase::finished &&
       (header.flags & tcp_flag::fin) == 0)) {
    reset_stray(port, header, payload.size());
    return;
  }
  const auto ev = s->connection.receive(header, payload, received_ns, *s);
  if (!payload.empty()) s->newest_arrival = std::max(s->newest_arrival, received_ns);
  s->pending.connected |= ev.connected;
  s->pending.readable |= ev.readable;
  s->pending.writable |= ev.writable;
  touch(port);
}

void xdp_tcp_connections::reset_stray(std::uint16_t port, const tcp_header& header,
                                      std::size_t payload_size) {
  if ((header.flags & tcp_flag::rst) != 0) return;
  // RFC 9293, 3.10.7.1: with an ACK, a reset at that sequence; else at 0, acknowledging it.
  frame_addresses to = run_.addresses();
  if (slots_[port] != nullptr) to = slots_[port]->to;
  to.source_port = port;
  tcp_header reset{};
  if ((header.flags & tcp_flag::ack) != 0) {
    reset.sequence = header.acknowledgment;
    reset.flags = tcp_flag::rst;
  } else {
    std::uint32_t length = static_cast<std::uint32_t>(payload_size);
    if ((header.flags & tcp_flag::syn) != 0) ++length;
    if ((header.flags & tcp_flag::fin) != 0) ++length;
    reset.acknowledgment = header.sequence + length;
    reset.flags = tcp_flag::rst | tcp_flag::ack;
  }
  send(to, reset, {});
}

void xdp_tcp_connections::touch(std::uint16_t port) {
  slot& s = *slots_[port];
  if (s.touched) return;
  s.touched = true;
  touched_.push_back(port);
}

void xdp_tcp_connections::after_read() {
  dispatching_ = true;
  // A socket called back may open a connection or close one: touched_ is read by index.
  for (std::size_t i = 0; i < touched_.size(); ++i) {
    const std::uint16_t port = touched_[i];
    slot& s = *slots_[port];
    s.touched = false;
    const xdp_tcp_connection::events ev = std::exchange(s.pending, {});
    if (s.socket != nullptr && (ev.connected || ev.readable || ev.writable))
      s.socket->on_events(ev);
  }
  for (const std::uint16_t port : touched_) {
    slot& s = *slots_[port];
    s.connection.flush(s);
    settle(port);
  }
  touched_.clear();
  dispatching_ = false;
  kick();
}

void xdp_tcp_connections::settle(std::uint16_t port) {
  slot& s = *slots_[port];
  if (s.socket == nullptr && s.connection.state() == xdp_tcp_connection::phase::finished &&
      !s.touched) {
    if (s.active_at != not_active) {
      const std::uint16_t last = active_.back();
      active_[s.active_at] = last;
      slots_[last]->active_at = s.active_at;
      active_.pop_back();
      s.active_at = not_active;
      // The next connection on this port starts past this one's sequence space.
      s.next_iss += 1u << 24;
      free_ports_.push_back(port);
    }
    return;
  }
  if (const auto at = s.connection.deadline()) arm_timer(*at);
}

void xdp_tcp_connections::arm_timer(std::uint64_t at) {
  if (timer_at_ && *timer_at_ <= at) return;
  timer_at_ = at;
  const std::uint64_t now = monotonic_ns();
  timer_.expires_after(std::chrono::nanoseconds(at > now ? at - now : 0));
  timer_.async_wait(
      [this, alive = std::weak_ptr<bool>(alive_)](const boost::system::error_code& ec) {
        if (!ec && !alive.expired()) on_timer();
      });
}

void xdp_tcp_connections::on_timer() {
  timer_at_.reset();
  const std::uint64_t now = monotonic_ns();
  std::optional<std::uint64_t> next;
  dispatching_ = true;
  // Segments that found no free frame go again first (frames came free since).
  std::vector<std::uint16_t> stalled;
  stalled.swap(stalled_);
  for (const std::uint16_t port : stalled) {
    slot& s = *slots_[port];
    s.stalled = false;
    s.connection.resend_now(s);
    touch(port);
  }
  for (std::size_t i = 0; i < active_.size(); ++i) {
    const std::uint16_t port = active_[i];
    slot& s = *slots_[port];
    const auto due = s.connection.deadline();
    if (!due) continue;
    if (*due <= now) {
      const auto ev = s.connection.on_timer(now, s);
      s.pending.readable |= ev.readable;
      s.pending.writable |= ev.writable;
      touch(port);
    } else if (!next || *due < *next) {
      next = due;
    }
  }
  after_read();
  // after_read re-armed for the connections it settled; the others' earliest is here.
  if (next) arm_timer(*next);
}

}  // namespace dnstransport::detail
