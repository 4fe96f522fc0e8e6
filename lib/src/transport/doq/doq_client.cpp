// The DoQ client's queries: readiness, reading datagrams into ngtcp2, opening a stream per
// query and handing ngtcp2 the query's octets, sending the packets it makes in batches, and
// an answer's octets read on its stream. The class is in doq_client.hpp, its connection life
// cycle in doq_client_connection.cpp, ngtcp2's callbacks in doq_client_callbacks.cpp.

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <array>
#include <cerrno>

#include "message/framing.hpp"
#include "transport/doq/doq_client.hpp"
#include "transport/doq/doq_codes.hpp"
#include "util/clock.hpp"
#include "util/receive_time.hpp"
#include "util/udp_gso.hpp"

namespace dnstransport::detail {

namespace {

// The outbox's packets are written one after another into one scratch buffer.
constexpr std::size_t packet_room = 1452;

}  // namespace

void doq_client::wait_readable() {
  if (waiting_read_ || state_ == conn_state::idle) return;
  waiting_read_ = true;
  socket_->async_wait(true, generation_);
}

void doq_client::read_ready(std::uint64_t generation, bool ok) {
  if (!ok || generation != generation_) return;
  count_wakeup();
  waiting_read_ = false;
  on_readable();
}

void doq_client::read_delayed() {
  delay_pending_ = false;
  if (state_ != conn_state::idle) on_readable();  // else no connection is left to read for
}

void doq_client::on_readable() {
  static_assert(receive_batch < worker::scratch_count);  // the last one is the outbox's
  const output_round round(*this);
  std::array<mmsghdr, receive_batch> msgs{};
  std::array<iovec, receive_batch> iov{};
  std::array<receive_stamp_space, receive_batch> stamps;
  for (unsigned i = 0; i < receive_batch; ++i) {
    const auto buffer = owner_.scratch(i);
    iov[i] = {buffer.data(), buffer.size()};
    msgs[i].msg_hdr.msg_iov = &iov[i];
    msgs[i].msg_hdr.msg_iovlen = 1;
  }
  const std::uint64_t generation = generation_;
  for (;;) {
    // recvmmsg leaves each length at what it wrote.
    for (unsigned i = 0; i < receive_batch; ++i) {
      msgs[i].msg_hdr.msg_control = stamps[i].data;
      msgs[i].msg_hdr.msg_controllen = sizeof stamps[i].data;
    }
    const int n = socket_->receive(msgs);
    if (n < 0) {
      const int error = -n;
      if (error == EINTR) continue;
      if (error == EAGAIN || error == EWOULDBLOCK) break;
      // A pending ICMP error (ECONNREFUSED: nothing listens on the port) is reported once.
      if (life_.tally.counted) connections().record_socket_error("udp receive", error);
      if (error == ECONNREFUSED) continue;
      break;
    }
    const receive_clock clock = receive_clock::read();
    now_ = clock.monotonic_now;
    life_.last_activity_ns = now_;
    for (int i = 0; i < n; ++i) {
      if (life_.tally.counted) ++quic().packets_received;
      // ngtcp2 keeps its own clock (now_, never going back); answers the packet completes
      // are timed by its stamp.
      arrived_ = clock.received(msgs[i].msg_hdr);
      ngtcp2_pkt_info info{};
      const int result = ngtcp2_conn_read_pkt(conn_, &path_, &info,
                                              static_cast<const std::uint8_t*>(iov[i].iov_base),
                                              msgs[i].msg_len, now_);
      if (result == 0) continue;
      if (result == NGTCP2_ERR_DISCARD_PKT) {
        if (life_.tally.counted) ++quic().stray_packets;
        continue;
      }
      arrived_ = 0;
      connection_broke(result);
      return;
    }
    arrived_ = 0;
    if (generation != generation_) return;  // a callback ended the connection
    if (n < static_cast<int>(receive_batch)) break;
  }
  const std::uint64_t now = monotonic_ns();
  if (state_ == conn_state::established && connection_done()) {
    // The connection ends with these packets. Of what ngtcp2 would send now, only our
    // Finished matters (the server completes its handshake): it is in the first datagram
    // ngtcp2 writes, with the Initial ACK; what would follow (an ACK of the answer, new
    // connection IDs) is of no use to a connection that closes at once, and left unsent
    // it saves a datagram per 0-RTT connection.
    if (finished_unsent_ && !write(now, true)) return;
    after_io(now);
    return;
  }
  fill_and_write(now);
}

void doq_client::fill_and_write(std::uint64_t now) {
  // Queries due now go in the packets ngtcp2 writes anyway (ACKs, the Finished's 1-RTT
  // companion, retransmissions), not in packets of their own.
  if (state_ == conn_state::established) fill(now);
  if (!write(now)) return;
  after_io(now);
}

void doq_client::after_io(std::uint64_t now) {
  if (state_ == conn_state::established && connection_done()) {
    close(true);
    if (send_allowance(now) > 0) connect(monotonic_ns());
    return;
  }
  // Coalescing (engine/read_coalescing.hpp): each datagram keeps its own kernel stamp, so a
  // delayed read times its answers as an immediate one would. A connection opened while a
  // delay runs is read when it ends.
  if (delay_pending_) return;
  if (!waiting_read_ && state_ == conn_state::established && delay_next_read()) {
    delay_pending_ = true;
    return;
  }
  wait_readable();
}

doq_client::request& doq_client::new_request() {
  request* r = nullptr;
  if (!free_.empty()) {
    r = free_.back();
    free_.pop_back();
  } else {
    r = &requests_.emplace_back();
  }
  r->in_use = true;
  r->done = false;
  r->early = false;
  r->stream = -1;
  r->handed = 0;
  r->answer.reset();
  return *r;
}

void doq_client::free_request(request& r) noexcept {
  if (!r.in_use) return;
  r.in_use = false;
  try {
    free_.push_back(&r);
  } catch (...) {  // out of memory: the request is only not reused
  }
}

void doq_client::fill(std::uint64_t now) {
  if (conn_ == nullptr) return;
  if (state_ != conn_state::established && !life_.early()) return;
  std::uint64_t room = ngtcp2_conn_get_streams_bidi_left(conn_);
  // Queries whose 0-RTT was refused go first, on new streams.
  while (room > 0 && !resend_.empty()) {
    request& r = *resend_.back();
    resend_.pop_back();
    if (ngtcp2_conn_open_bidi_stream(conn_, &r.stream, &r) != 0) {
      resend_.push_back(&r);
      return;
    }
    --room;
    if (const slot_table::slot* s = slots_.find(r.id); s != nullptr && s->counted) {
      ++early_counts().queries_resent;
    }
    send_queue_.push_back(&r);
  }
  std::uint64_t allowance = std::min<std::uint64_t>(send_allowance(now), room);
  allowance = std::min(allowance, life_.budget_left(transport_.settings().queries_per_connection));
  if (!plan().gather_writes) allowance = std::min<std::uint64_t>(allowance, 1);
  for (; allowance > 0; --allowance) {
    request& r = new_request();
    if (ngtcp2_conn_open_bidi_stream(conn_, &r.stream, &r) != 0) {
      free_request(r);
      return;
    }
    slot_table::slot& s = take_slot(now);
    life_.sent(s, now);
    r.id = s.id;
    r.query_index = s.query_index;
    r.own.clear();
    if (plan().client_subnet.on() || plan().feed != nullptr) {
      // A fed query's cell is taken again once the query ends, while ngtcp2 may still
      // resend what it has not seen acknowledged: the stream keeps a copy.
      const auto shared = plan().query(s.query_index);
      r.own.assign(shared.begin(), shared.end());
      if (plan().client_subnet.on()) write_client_subnet(s, r.own);
    }
    const auto query = query_of(r);
    put_frame_prefix(r.head.data(), query.size());
    r.head[2] = r.head[3] = 0;  // RFC 9250, section 4.2.1: the DNS id is 0
    r.early = state_ != conn_state::established;
    if (r.early && early_keys_ && s.counted) ++early_counts().queries_in_early_data;
    send_queue_.push_back(&r);
  }
}

std::span<std::uint8_t> doq_client::outbox_room() {
  static_assert(send_batch * packet_room <= worker::scratch_size);
  if (outbox_count_ == send_batch) {
    send_packets({outbox_.data(), outbox_count_});
    outbox_count_ = 0;
    outbox_used_ = 0;
  }
  return owner_.scratch(worker::scratch_count - 1).subspan(outbox_used_, packet_room);
}

void doq_client::add_to_outbox(std::size_t size) {
  // Back to back, so that runs of full packets can leave as one GSO send.
  outbox_[outbox_count_++] = {owner_.scratch(worker::scratch_count - 1).data() + outbox_used_,
                              size};
  outbox_used_ += size;
}

void doq_client::flush() {
  if (rounds_ > 0 || outbox_count_ == 0) return;
  send_packets({outbox_.data(), outbox_count_});
  outbox_count_ = 0;
  outbox_used_ = 0;
}

bool doq_client::write(std::uint64_t now, bool last) {
  if (conn_ == nullptr) return false;
  finished_unsent_ = false;
  for (request* r : blocked_) send_queue_.push_back(r);
  blocked_.clear();
  // Bounded: each round either takes query octets, writes a packet, or moves a stream aside.
  for (unsigned round = 0; round < 16 * send_batch + 2 * send_queue_.size(); ++round) {
    const auto room = outbox_room();
    request* r = send_queue_.empty() ? nullptr : send_queue_.front();
    std::array<ngtcp2_vec, 2> data{};
    std::size_t pieces = 0;
    // MORE only with stream data: without any, ngtcp2 would keep the packet open for more.
    std::uint32_t flags = NGTCP2_WRITE_STREAM_FLAG_NONE;
    if (r != nullptr) {
      flags = NGTCP2_WRITE_STREAM_FLAG_MORE | NGTCP2_WRITE_STREAM_FLAG_FIN;
      const auto query = query_of(*r);
      const std::size_t rest = query.size() - 2;
      if (r->handed < r->head.size()) {
        data[pieces++] = {r->head.data() + r->handed, r->head.size() - r->handed};
        data[pieces++] = {const_cast<std::uint8_t*>(query.data() + 2), rest};
      } else {
        const std::size_t skip = r->handed - r->head.size();
        data[pieces++] = {const_cast<std::uint8_t*>(query.data() + 2 + skip), rest - skip};
      }
    }
    ngtcp2_ssize accepted = -1;
    ngtcp2_pkt_info info{};
    const ngtcp2_ssize n = ngtcp2_conn_writev_stream(
        conn_, nullptr, &info, room.data(), room.size(), &accepted, flags,
        r != nullptr ? r->stream : -1, r != nullptr ? data.data() : nullptr, pieces, now);
    // A callback may have closed the stream meanwhile (and freed its request).
    if (r != nullptr && (!r->in_use || send_queue_.empty() || send_queue_.front() != r)) {
      r = nullptr;
    }
    if (r != nullptr) {
      if (accepted >= 0) r->handed += static_cast<std::size_t>(accepted);
      const auto query = query_of(*r);
      if (n == NGTCP2_ERR_STREAM_DATA_BLOCKED) {
        blocked_.push_back(r);  // until the server's window grows
        send_queue_.pop_front();
        continue;
      }
      if (n == NGTCP2_ERR_STREAM_SHUT_WR || n == NGTCP2_ERR_STREAM_NOT_FOUND ||
          r->handed == query.size() + 2) {
        send_queue_.pop_front();
      }
    }
    if (n == NGTCP2_ERR_WRITE_MORE || n == NGTCP2_ERR_STREAM_DATA_BLOCKED ||
        n == NGTCP2_ERR_STREAM_SHUT_WR || n == NGTCP2_ERR_STREAM_NOT_FOUND) {
      continue;
    }
    if (n < 0) {
      flush();
      connection_broke(static_cast<int>(n));
      return false;
    }
    if (n == 0) break;  // nothing more, or the congestion window is full
    add_to_outbox(static_cast<std::size_t>(n));
    if (last) break;
  }
  flush();
  if (last) return true;  // no timer: the connection closes now
  // No pacing (ngtcp2_conn_update_pkt_tx_time is never called): a client's packets are
  // small queries, bursts are bounded by the congestion window, and pacing timers of tens of
  // microseconds cost a timer reprogram per packet (a quarter of the client's CPU on
  // persistent connections, where a VM traps every one).
  arm_timer();
  return true;
}

void doq_client::send_packets(std::span<const iovec> packets) {
  if (packets.empty()) return;
  // One message per packet, or with GSO one per run of equal packets (udp_gso.hpp).
  std::array<mmsghdr, send_batch> msgs{};
  std::array<iovec, send_batch> runs{};
  std::array<std::size_t, send_batch> packets_in{};
  alignas(cmsghdr) std::array<std::array<std::uint8_t, gso_control_size>, send_batch> control{};
  const bool gso = udp_gso_available();
  std::size_t messages = 0;
  for (std::size_t i = 0; i < packets.size();) {
    const std::size_t n = gso ? gso_run(packets, i) : 1;
    std::size_t bytes = 0;
    for (std::size_t k = i; k < i + n; ++k) bytes += packets[k].iov_len;
    runs[messages] = {packets[i].iov_base, bytes};
    msghdr& m = msgs[messages].msg_hdr;
    m.msg_iov = &runs[messages];
    m.msg_iovlen = 1;
    if (n > 1) {
      m.msg_control = control[messages].data();
      m.msg_controllen =
          put_gso_control(control[messages].data(), static_cast<std::uint16_t>(packets[i].iov_len));
    }
    packets_in[messages++] = n;
    i += n;
  }
  std::size_t done = 0;
  std::size_t sent_packets = 0;
  while (done < messages) {
    const int n = socket_->send({msgs.data() + done, messages - done});
    if (n < 0) {
      const int error = -n;
      if (error == EINTR) continue;
      // A full socket buffer or an ICMP error loses these packets as the network would;
      // QUIC's loss recovery sends them again.
      if (error != EAGAIN && error != EWOULDBLOCK && life_.tally.counted) {
        connections().record_socket_error("udp send", error);
      }
      break;
    }
    for (int k = 0; k < n; ++k) sent_packets += packets_in[done + static_cast<std::size_t>(k)];
    done += static_cast<std::size_t>(n);
  }
  if (life_.tally.counted) quic().packets_sent += sent_packets;
}

void doq_client::cancel_expired() {
  if (conn_ == nullptr) return;
  for (request& r : requests_) {
    if (!r.in_use || r.done || slots_.find(r.id) != nullptr) continue;
    // The query timed out (counted lost): its stream is given up.
    r.done = true;
    if (r.stream < 0) {
      std::erase(resend_, &r);
      free_request(r);
      continue;
    }
    ngtcp2_conn_shutdown_stream(conn_, r.stream, doq_request_cancelled);
  }
}

void doq_client::receive(request& r, bool fin, std::span<const std::uint8_t> data) {
  if (r.done) return;
  // RFC 9250, section 4.2: one message with its 2-octet length, then FIN.
  const auto got = r.answer.add(data, fin);
  if (got == doq_stream_reader::outcome::more) return;
  r.done = true;  // what else comes on the stream is dropped
  if (got != doq_stream_reader::outcome::message) {
    fail_exchange(r.id, now_, doq_stream_failure_name(got), exchange_layer::quic);
    return;
  }
  count_on_connection(life_.tally, on_answer(r.id, r.answer.message(), now_, 0, arrived_), now_);
}

}  // namespace dnstransport::detail
