// The stream client's connection life cycle: connect (with the set-up budget and source
// addresses), the handshake, failed set-ups, the server closing, our close, and the session
// ticket kept for the next connection. The class is in stream_client.hpp.

#include <algorithm>
#include <cerrno>
#include <string>

#include <fmt/format.h>
#include <boost/asio/socket_base.hpp>

#include "transport/stream/stream_client.hpp"
#include "util/clock.hpp"

namespace dnstransport::detail {

// Connects when the first query may go out at once (see tick): a paced client whose first
// query is due later connects then, not at the start with an idle connection.
void stream_client::start() {
  const std::uint64_t now = monotonic_ns();
  if (send_allowance(now) > 0) connect(now);
}

void stream_client::tick(std::uint64_t now) {
  tick_connection(now);
  if (state_ == conn_state::established) session_->tick(now);
}

void stream_client::tick_connection(std::uint64_t now) {
  if (state_ != conn_state::established) expire_waiting_retries(now);
  if (state_ == conn_state::connecting || state_ == conn_state::handshaking) {
    // Nothing left to send: a set-up still going would end neither opened nor failed.
    if (!may_send(now) && slots_.empty()) {
      close(true);
      return;
    }
    if (life_.setup_timed_out(now)) {
      fail_connection(state_ == conn_state::connecting || syn_pending_ ? std::string("tcp connect")
                                                                       : handshake_name(),
                      ETIMEDOUT);
    }
    return;
  }
  if (syn_pending_ && life_.setup_timed_out(now)) {
    // The SYN that carried the first query was never answered.
    syn_pending_ = false;
    fail_connection("tcp connect", ETIMEDOUT);
    return;
  }
  if (state_ == conn_state::established) {
    expire(now);
    if (!may_send(now) && slots_.empty()) {
      close(true);
      return;
    }
    // --honour-keepalive: idle for the timeout the server last advertised (RFC 7828 counts
    // in units of 100 ms).
    if (settings().honour_keepalive && keepalive_timeout_ >= 0 &&
        close_if_idle(now, static_cast<std::uint64_t>(keepalive_timeout_) * 100'000'000)) {
      life_.closed_idle(true);
      return;
    }
    if (connection_done()) {
      close(true);
      if (has_work(now)) connect(now);
      return;
    }
    if (const std::uint64_t idle = settings().idle_timeout_ns;
        idle != 0 && close_if_idle(now, idle)) {
      life_.closed_idle(false);
      return;
    }
    session_->fill(now);
    return;
  }
  // Queries waiting to go again (on no connection) time out here.
  expire(now);
  // Connect only when a query may go out at once: a paced client would otherwise hold an
  // idle connection (that servers close) and count the wait as set-up time.
  if (has_work(now)) connect(now);
}

void stream_client::abandon() {
  fail_in_flight(true);
  if (state_ != conn_state::idle) close(true);
}

std::string stream_client::handshake_name() {
  return fmt::format("{} handshake", channel_.is_open() ? channel_.stream().name() : "stream");
}

void stream_client::connect(std::uint64_t now) {
  // Too many set-ups in flight on this thread: wait for the next tick.
  if (!life_.begin(now)) return;
  ++generation_;
  state_ = conn_state::connecting;
  keepalive_timeout_ = -1;
  waiting_read_ = waiting_write_ = false;

  const run_plan& p = plan();
  tcp_dial_options options;
  options.nodelay = settings().tcp_nodelay;
  options.fastopen = settings().tcp_fastopen;
  // Each client its own address, or successive connections of all clients spread over them.
  if (!p.sources.empty()) {
    const std::size_t turn = p.sources_per_client ? 0 : connections_made_ * p.clients;
    options.source = &p.sources[(index_ + turn) % p.sources.size()];
  }
  ++connections_made_;
  const tcp_dial dial = socket_->connect({p.server_address, p.server_port}, options);
  switch (dial.result) {
    case tcp_dial::outcome::connected:
      on_connected(now);
      return;
    case tcp_dial::outcome::deferred:
      // Fast Open with a cookie: nothing was sent yet. The first query (or ClientHello)
      // goes out in the SYN; the connection counts as opened once the SYN-ACK came.
      syn_pending_ = true;
      on_connected(now);
      if (syn_pending_) wait(boost::asio::socket_base::wait_write);
      return;
    case tcp_dial::outcome::in_progress:
      wait(boost::asio::socket_base::wait_write);
      return;
    case tcp_dial::outcome::failed:
      fail_connection(dial.what, dial.error);
      return;
  }
}

bool stream_client::confirm_syn(std::uint64_t now) {
  if (const auto round_trip = socket_->established()) {
    syn_pending_ = false;
    // The kernel's round trip of the SYN, which left with the first write: this wake-up may
    // come later, after the first answer too (timed by its kernel receive stamp, so never
    // before the SYN-ACK's arrival, which is at least this round trip after the connect
    // began).
    const std::uint64_t waited = life_.setup_time(now);
    life_.opened(*round_trip != 0 ? std::min(waited, *round_trip) : waited);
    return true;
  }
  if (const int error = socket_->connect_error(); error != 0) {
    fail_connection("tcp connect", error);
    return false;
  }
  wait(boost::asio::socket_base::wait_write);  // still waiting for the SYN-ACK
  return true;
}

void stream_client::on_connected(std::uint64_t now) {
  if (!syn_pending_) life_.opened(life_.setup_time(now));
  // PROXY protocol: the client's header first, before the TLS handshake (or, inside TLS,
  // once the handshake is done: on_established).
  if (const auto* header = plan().proxy_header(index_, connections_made_ - 1);
      header && !plan().proxy_inside_tls) {
    if (const int error = socket_->send_prefix(*header); error != 0) {
      fail_connection("proxy header", error);
      return;
    }
  }
  channel_.open(socket_->open_stream(transport_.connector(),
                                     settings().resume ? ticket_.get() : nullptr,
                                     std::move(spare_stream_)));
  state_ = conn_state::handshaking;
  handshake_started_ns_ = now;
  if (send_early(now)) handshake(now);
}

bool stream_client::send_early(std::uint64_t now) {
  // A Fast Open SYN carries the ClientHello; early data would wait for the SYN-ACK anyway.
  if (syn_pending_) return true;
  const std::size_t room = channel_.stream().begin_early_data();
  if (room == 0) return true;
  life_.early_allowed();
  if (!session_->fill_early(now, room)) return false;
  life_.early_sent();
  return true;
}

bool stream_client::finish_handshake(std::uint64_t now, const handshake_step& step) {
  if (channel_.stream().has_handshake()) {
    life_.handshake_done(handshake_started_ns_, now, step.resumed);
  }
  state_ = conn_state::established;
  if (life_.established(now, life_.early() && step.early_data_accepted)) return true;
  // The server skipped the early data: every query in flight (all of them went early) goes
  // again, the same query with the same id, its latency still from the first send.
  channel_.drop_output();
  return session_->resend_in_flight(now);
}

void stream_client::handshake(std::uint64_t now) {
  byte_stream& stream = channel_.stream();
  const handshake_step step = advance_handshake(stream);
  switch (step.result) {
    case handshake_step::outcome::done:
      // The last handshake step does the expensive crypto: read the clock after it, so
      // neither the handshake nor the first query's send time is back-dated.
      if (stream.has_handshake()) now = monotonic_ns();
      if (!finish_handshake(now, step)) return;
      on_established(now);
      // What came right after the handshake's last record may be off the socket already
      // (TLS clients read ahead): the readiness wait just armed would not see it.
      if (state_ == conn_state::established && channel_.is_open() &&
          channel_.stream().has_buffered_input()) {
        on_ready();
      }
      return;
    case handshake_step::outcome::want_read:
      wait(boost::asio::socket_base::wait_read);
      return;
    case handshake_step::outcome::want_write:
      wait(boost::asio::socket_base::wait_write);
      return;
    case handshake_step::outcome::failed:
      fail_connection(handshake_name(), stream.failure_cause(), stream.error_message());
      return;
  }
}

void stream_client::on_established(std::uint64_t now) {
  // PROXY protocol inside TLS (dnsdist's default): the header is the session's first octets.
  if (const auto* header = plan().proxy_header(index_, connections_made_ - 1);
      header && plan().proxy_inside_tls) {
    const iovec piece{const_cast<std::uint8_t*>(header->data()), header->size()};
    if (!after_write(channel_.send({&piece, 1}))) return;
  }
  if (!session_->established(now)) return;
  life_.usable();
  session_->fill(now);
  if (state_ == conn_state::established) arm_read();
}

void stream_client::fail_connection(const std::string& what, int error) {
  life_.failed(what.c_str(), error);
  connection_failed();
}

void stream_client::fail_connection(const std::string& what, const std::string& cause,
                                    const std::string& message) {
  life_.failed(cause, fmt::format("{}: {}", what, message));
  connection_failed();
}

void stream_client::connection_failed() {
  // In-flight queries exist only with TCP fast open; they die with the attempt.
  fail_in_flight(false);
  drop_socket();
  // Retry on the next tick rather than at once, so a refusing server is not hammered.
  state_ = conn_state::idle;
}

void stream_client::server_closed(bool reset) {
  if (syn_pending_) {
    // A Fast Open connection refused or reset before its SYN-ACK never opened.
    const int error = socket_->connect_error();
    syn_pending_ = false;
    fail_connection("tcp connect", error != 0 ? error : ECONNREFUSED);
    return;
  }
  life_.closed_by_server(reset);
  fail_in_flight(false);
  drop_socket();
  state_ = conn_state::idle;
  const std::uint64_t now = monotonic_ns();
  if (has_work(now)) connect(now);
}

void stream_client::close_broken() {
  life_.closed_protocol_error();
  fail_in_flight(false);
  drop_socket();
  state_ = conn_state::idle;
  const std::uint64_t now = monotonic_ns();
  if (has_work(now)) connect(now);
}

void stream_client::close(bool count) {
  life_.closed_by_us(state_ != conn_state::idle && state_ != conn_state::connecting, count);
  if (state_ == conn_state::established && !settings().close_with_rst) {
    channel_.stream().shutdown();
  }
  drop_socket(settings().close_with_rst);  // keeps the connection's newest ticket
  state_ = conn_state::idle;
}

bool stream_client::close_if_idle(std::uint64_t now, std::uint64_t idle_ns) {
  if (state_ != conn_state::established || syn_pending_ || !slots_.empty() ||
      channel_.output_pending() || !life_.idle_for(now, idle_ns)) {
    return false;
  }
  // A query due now is sent on this connection, not on a new one.
  if (send_allowance(now) > 0) return false;
  close(false);
  return true;
}

void stream_client::drop_socket(bool abortive) {
  life_.ended();
  session_->ended();
  if (channel_.is_open() && settings().resume) {
    tls_connection* tls = channel_.stream().tls();
    if (auto ticket = tls != nullptr ? tls->ticket() : nullptr) ticket_ = std::move(ticket);
  }
  // Kept for the next connection, whose connector may reuse it (plain TCP does).
  if (auto closed = channel_.close()) spare_stream_ = std::move(closed);
  // Whether the SYN carried the first query is known once the SYN-ACK came back.
  if (life_.tally.sent > 0 && life_.tally.counted && socket_->syn_data_accepted()) {
    ++connections().fastopen_data_in_syn;
  }
  syn_pending_ = false;
  ++generation_;
  socket_->close(abortive);
  waiting_read_ = waiting_write_ = false;
}

}  // namespace dnstransport::detail
