// The DoQ client as the engine drives it: its construction, start, the periodic tick
// (timeouts, the handshake's deadline, a connection's end, idleness, a server that grants no
// more streams) and abandon; and ngtcp2's own timer. The class is in doq_client.hpp.

#include <chrono>

#include "transport/doq/doq_client.hpp"
#include "util/clock.hpp"

namespace dnstransport::detail {

doq_client::doq_client(worker& owner, unsigned index, std::uint64_t quota,
                       const doq_transport& transport)
    : client_base(owner, index, quota),
      transport_(transport),
      socket_(transport.make_socket(
          owner.readiness(),
          [this](bool, std::uint64_t generation, bool ok) { read_ready(generation, ok); },
          owner.syscalls())),
      timer_(owner.io()) {}

doq_client::~doq_client() {
  if (conn_ != nullptr) ngtcp2_conn_del(conn_);
  if (session_ != nullptr) gnutls_deinit(session_);
}

void doq_client::start() {
  const output_round round(*this);
  const std::uint64_t now = monotonic_ns();
  if (send_allowance(now) > 0) connect(now);
}

void doq_client::tick(std::uint64_t now) {
  const output_round round(*this);
  if (state_ == conn_state::handshaking) {
    if (!may_send(now) && slots_.empty()) {
      close(true);
      return;
    }
    expire(now);
    cancel_expired();
    if (life_.setup_timed_out(now)) {
      fail_connection("quic_handshake_timeout", "DoQ handshake: no answer within the timeout");
    }
    return;
  }
  if (state_ == conn_state::established) {
    expire(now);
    cancel_expired();
    if (!may_send(now) && slots_.empty()) {
      close(true);
      return;
    }
    if (connection_done()) {
      close(true);
      if (send_allowance(now) > 0) connect(now);
      return;
    }
    if (const std::uint64_t idle = transport_.settings().idle_timeout_ns;
        idle != 0 && close_if_idle(now, idle)) {
      life_.closed_idle(false);
      return;
    }
    // A server that never grants more streams than its first limit (Knot DNS 3.2 allows
    // 100 per connection) would leave the queries waiting for good: once nothing is in
    // flight and no MAX_STREAMS came for 3 PTOs, the connection is replaced. A server that
    // has raised the limit before is only slow to raise it again (its credit for answered
    // streams comes a round trip or an ACK delay after the answers): it is waited for.
    if (!streams_raised_ && ngtcp2_conn_get_streams_bidi_left(conn_) == 0 && slots_.empty() &&
        (send_allowance(now) > 0 || !resend_.empty())) {
      if (starved_since_ == 0) {
        starved_since_ = now;
      } else if (now - starved_since_ >= 3 * ngtcp2_conn_get_pto(conn_)) {
        if (life_.tally.counted) ++quic().streams_exhausted;
        close(true);
        connect(now);
        return;
      }
    } else {
      starved_since_ = 0;
    }
    fill(now);
    write(now);
    return;
  }
  if (send_allowance(now) > 0) connect(now);
}

void doq_client::abandon() {
  fail_in_flight(true);
  if (state_ != conn_state::idle) close(true);
}

bool doq_client::connection_done() const noexcept {
  return life_.spent(transport_.settings().queries_per_connection, !slots_.empty());
}

void doq_client::arm_timer() {
  if (conn_ == nullptr) return;
  const std::uint64_t at = ngtcp2_conn_get_expiry(conn_);
  // ngtcp2's expiry moves with nearly every packet, mostly later. Re-arming each time cost a
  // timerfd_settime system call per packet (a third of the client's CPU on persistent
  // connections), so a timer already due no later stays: when it fires early, on_timer
  // finds nothing expired and arms it for the expiry then.
  if (at == UINT64_MAX || (timer_at_ != 0 && timer_at_ <= at)) return;
  timer_at_ = at;
  const std::uint64_t now = monotonic_ns();
  timer_.expires_after(std::chrono::nanoseconds(at > now ? at - now : 0));
  timer_.async_wait([this, generation = generation_](const boost::system::error_code& ec) {
    if (ec || generation != generation_) return;
    count_wakeup();
    timer_at_ = 0;
    on_timer();
  });
}

void doq_client::on_timer() {
  if (conn_ == nullptr) return;
  const output_round round(*this);
  const std::uint64_t now = monotonic_ns();
  if (ngtcp2_conn_get_expiry(conn_) > now) {
    arm_timer();
    return;
  }
  if (const int result = ngtcp2_conn_handle_expiry(conn_, now); result != 0) {
    connection_broke(result);
    return;
  }
  fill_and_write(now);
}

}  // namespace dnstransport::detail
