// A DNS client's TCP connection in user space (xdp_tcp_connection.hpp).
#include "transport/xdp/xdp_tcp_connection.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace dnstransport::detail {

namespace {

// Sequence numbers compare modulo 2^32 (RFC 9293, 3.4).
bool before(std::uint32_t a, std::uint32_t b) noexcept {
  return static_cast<std::int32_t>(a - b) < 0;
}

constexpr std::uint64_t max_rto_ns = 60'000'000'000;  // RFC 6298, 2.5

}  // namespace

void xdp_tcp_connection::open(std::uint32_t iss, std::uint64_t now, segment_sink& sink) {
  // A connection of its own from here, keeping the buffers' memory of the one before on
  // this port (no allocation per connection once they have grown).
  std::vector<std::uint8_t> output = std::move(output_);
  std::vector<std::uint8_t> input = std::move(input_);
  *this = xdp_tcp_connection(mss_);
  output.clear();
  input.clear();
  output_ = std::move(output);
  input_ = std::move(input);
  phase_ = phase::syn_sent;
  iss_ = iss;
  una_ = iss;
  next_ = iss + 1;
  high_ = next_;
  syn_sent_at_ = now;
  sink.send_segment({iss_, 0, tcp_flag::syn, receive_window, mss_}, {});
  arm(now);
}

void xdp_tcp_connection::arm(std::uint64_t now) noexcept {
  retransmit_at_ = now + rto_;
}

void xdp_tcp_connection::fail(int error) noexcept {
  error_ = error;
  phase_ = phase::finished;
  ack_owed_ = false;  // nothing follows a reset or a failure
  retransmit_at_.reset();
  fin_wait_until_.reset();
}

xdp_tcp_connection::events xdp_tcp_connection::receive(const tcp_header& header,
                                                       std::span<const std::uint8_t> payload,
                                                       std::uint64_t now, segment_sink& sink) {
  events ev;
  const bool has_ack = (header.flags & tcp_flag::ack) != 0;
  switch (phase_) {
    case phase::closed:
      return ev;
    case phase::finished:
      // The peer's FIN again (our ACK of it was lost): acknowledged again.
      if ((header.flags & tcp_flag::fin) != 0 && (header.flags & tcp_flag::rst) == 0 &&
          fin_received_) {
        ack_owed_ = true;
      }
      return ev;
    case phase::syn_sent: {
      if (has_ack && header.acknowledgment != iss_ + 1) {
        // Not for this SYN (RFC 9293, 3.10.7.3): a reset tells the peer, unless it is one.
        // The peer still held an earlier connection on this port (one a run left in its FIN
        // exchange): the reset ends it there, and the SYN goes again at once rather than
        // after its timer, once per connection.
        if ((header.flags & tcp_flag::rst) == 0) {
          sink.send_segment({header.acknowledgment, 0, tcp_flag::rst, 0, 0}, {});
          if (!syn_sent_again_) {
            syn_sent_again_ = true;
            syn_sent_at_ = now;
            sink.send_segment({iss_, 0, tcp_flag::syn, receive_window, mss_}, {});
          }
        }
        return ev;
      }
      if ((header.flags & tcp_flag::rst) != 0) {
        if (has_ack) {
          fail(ECONNREFUSED);
          ev.readable = ev.writable = true;
        }
        return ev;
      }
      if ((header.flags & tcp_flag::syn) == 0 || !has_ack) return ev;
      receive_next_ = header.sequence + 1;
      una_ = header.acknowledgment;
      peer_window_ = header.window;
      peer_mss_ = header.mss != 0 ? header.mss : 536;
      phase_ = phase::established;
      // Karn's rule: a handshake whose SYN went again gives no round trip.
      if (retransmissions_ == 0) {
        handshake_rtt_ = now - syn_sent_at_;
        base_rto_ = std::max(min_rto_ns, 3 * handshake_rtt_);  // RFC 6298, 2.2: R + 4 R/2
      }
      rto_ = base_rto_;
      retransmit_at_.reset();
      retries_ = 0;
      // The handshake's ACK goes alone, before any query, as a kernel client sends it: Knot
      // DNS's XDP TCP completes a handshake only on an ACK without data (it keeps half-open
      // connections apart, and drops a query riding on the ACK). Owed until it went.
      ack_owed_ = true;
      send_ack(sink);
      ev.connected = ev.writable = true;
      return ev;
    }
    case phase::established:
    case phase::closing:
      break;
  }

  if ((header.flags & tcp_flag::rst) != 0) {
    // In the window only (RFC 9293, 3.10.7.4; a blind reset would not be).
    if (!before(header.sequence, receive_next_) &&
        before(header.sequence, receive_next_ + receive_window)) {
      fail(ECONNRESET);
      ev.readable = ev.writable = true;
    }
    return ev;
  }
  if ((header.flags & tcp_flag::syn) != 0) {
    ack_owed_ = true;  // the SYN-ACK again: our ACK of it was lost
    return ev;
  }
  const std::uint32_t ack = header.acknowledgment;
  if (has_ack && before(una_, ack) && !before(high_, ack)) {
    const std::size_t data = std::min<std::size_t>(ack - una_, output_.size());
    output_.erase(output_.begin(), output_.begin() + static_cast<std::ptrdiff_t>(data));
    sent_ = sent_ > data ? sent_ - data : 0;
    una_ = ack;
    if (before(next_, ack)) next_ = ack;  // what went before a timeout's resend arrived
    if (fin_sent_ && ack == fin_sequence_ + 1) fin_acked_ = true;
    retries_ = 0;
    rto_ = base_rto_;  // new data acknowledged: the back-off ends (RFC 6298, 5.7)
    if (una_ == high_) {
      retransmit_at_.reset();
    } else {
      arm(now);
    }
    ev.writable = data > 0;
  }
  if (has_ack) peer_window_ = header.window;

  const std::uint32_t sequence = header.sequence;
  const auto length = static_cast<std::uint32_t>(payload.size());
  if (length > 0) {
    if (!fin_received_ && !before(receive_next_, sequence) &&
        before(receive_next_, sequence + length)) {
      // New bytes from receive_next_ on (the start may repeat bytes already taken).
      const std::uint32_t skip = receive_next_ - sequence;
      input_.insert(input_.end(), payload.begin() + skip, payload.end());
      receive_next_ += length - skip;
      ev.readable = true;
    }
    ack_owed_ = true;  // new bytes, a repeat, or a gap: the peer learns where we are
  }
  if ((header.flags & tcp_flag::fin) != 0) {
    // Only once every byte before it came (a FIN past a gap comes again).
    if (!fin_received_ && sequence + length == receive_next_) {
      fin_received_ = true;
      receive_next_ += 1;
      ev.readable = true;
    }
    ack_owed_ = true;
  }
  finish_if_done(now);
  if (phase_ != phase::finished) send_data(now, sink);
  return ev;
}

std::size_t xdp_tcp_connection::write(std::span<const iovec> pieces, std::uint64_t now,
                                      segment_sink& sink) {
  if (phase_ != phase::established || fin_queued_) return 0;
  std::size_t room = max_unacknowledged - output_.size();
  std::size_t taken = 0;
  for (const iovec& piece : pieces) {
    const std::size_t n = std::min(room, piece.iov_len);
    const auto* bytes = static_cast<const std::uint8_t*>(piece.iov_base);
    output_.insert(output_.end(), bytes, bytes + n);
    taken += n;
    room -= n;
    if (room == 0) break;
  }
  send_data(now, sink);
  return taken;
}

void xdp_tcp_connection::send_data(std::uint64_t now, segment_sink& sink) {
  const std::size_t segment = std::min(peer_mss_, mss_);
  while (sent_ < output_.size()) {
    const std::size_t window_room = peer_window_ > sent_ ? peer_window_ - sent_ : 0;
    const std::size_t n = std::min({output_.size() - sent_, segment, window_room});
    if (n == 0) break;  // the timer sends on when the window stays shut
    const iovec piece{output_.data() + sent_, n};
    const tcp_header header{una_ + static_cast<std::uint32_t>(sent_), receive_next_,
                            static_cast<std::uint8_t>(tcp_flag::ack | tcp_flag::psh),
                            receive_window, 0};
    if (!sink.send_segment(header, {&piece, 1})) break;
    sent_ += n;
    next_ = una_ + static_cast<std::uint32_t>(sent_);
    if (before(high_, next_)) high_ = next_;
    ack_owed_ = false;
  }
  if (fin_queued_ && !fin_sent_ && sent_ == output_.size()) send_fin(sink);
  if (!retransmit_at_ && (una_ != high_ || sent_ < output_.size())) arm(now);
}

void xdp_tcp_connection::send_fin(segment_sink& sink) {
  fin_sequence_ = una_ + static_cast<std::uint32_t>(output_.size());
  // Counted as sent even when no frame was free: the timer sends it again.
  sink.send_segment({fin_sequence_, receive_next_,
                     static_cast<std::uint8_t>(tcp_flag::fin | tcp_flag::ack), receive_window, 0},
                    {});
  fin_sent_ = true;
  next_ = fin_sequence_ + 1;
  if (before(high_, next_)) high_ = next_;
  ack_owed_ = false;
}

void xdp_tcp_connection::send_ack(segment_sink& sink) {
  // At the highest sequence sent: after a timeout's resend next_ is lower, and the peer,
  // which may have it all, would take a segment below its next expected one as out of window.
  if (sink.send_segment({high_, receive_next_, tcp_flag::ack, receive_window, 0}, {})) {
    ack_owed_ = false;
  }
}

void xdp_tcp_connection::send_reset(segment_sink& sink) {
  sink.send_segment(
      {high_, receive_next_, static_cast<std::uint8_t>(tcp_flag::rst | tcp_flag::ack), 0, 0}, {});
}

void xdp_tcp_connection::flush(segment_sink& sink) {
  if (ack_owed_ && phase_ != phase::closed && phase_ != phase::syn_sent) send_ack(sink);
}

std::size_t xdp_tcp_connection::read(std::span<std::uint8_t> into) {
  const std::size_t n = std::min(into.size(), input_.size() - read_at_);
  if (n > 0) std::memcpy(into.data(), input_.data() + read_at_, n);
  read_at_ += n;
  if (read_at_ == input_.size()) {
    input_.clear();
    read_at_ = 0;
  }
  return n;
}

void xdp_tcp_connection::close(bool abortive, std::uint64_t now, segment_sink& sink) {
  switch (phase_) {
    case phase::closed:
    case phase::finished:
      phase_ = phase::finished;
      return;
    case phase::syn_sent:
      // No connection yet; a SYN-ACK that still comes finds none and is reset (xdp_tcp).
      fail(0);
      return;
    case phase::established:
    case phase::closing:
      break;
  }
  if (abortive) {
    send_reset(sink);
    fail(0);
    return;
  }
  if (fin_queued_) return;
  fin_queued_ = true;
  phase_ = phase::closing;
  send_data(now, sink);
  finish_if_done(now);
}

void xdp_tcp_connection::finish_if_done(std::uint64_t now) noexcept {
  if (phase_ != phase::closing || !fin_acked_) return;
  if (fin_received_) {
    phase_ = phase::finished;
    retransmit_at_.reset();
    fin_wait_until_.reset();
  } else if (!fin_wait_until_) {
    fin_wait_until_ = now + fin_wait_ns;
  }
}

std::optional<std::uint64_t> xdp_tcp_connection::deadline() const noexcept {
  if (retransmit_at_ && fin_wait_until_) return std::min(*retransmit_at_, *fin_wait_until_);
  return retransmit_at_ ? retransmit_at_ : fin_wait_until_;
}

xdp_tcp_connection::events xdp_tcp_connection::on_timer(std::uint64_t now, segment_sink& sink) {
  events ev;
  if (fin_wait_until_ && now >= *fin_wait_until_) {
    // Our FIN was acknowledged and the peer's never came: a reset ends it on both sides.
    send_reset(sink);
    fail(0);
    return ev;
  }
  if (!retransmit_at_ || now < *retransmit_at_) return ev;
  if (++retries_ > max_retries) {
    fail(ETIMEDOUT);
    ev.readable = ev.writable = true;
    return ev;
  }
  ++retransmissions_;
  rto_ = std::min(rto_ * 2, max_rto_ns);
  resend(sink);
  arm(now);
  return ev;
}

void xdp_tcp_connection::resend(segment_sink& sink) {
  if (phase_ == phase::syn_sent) {
    sink.send_segment({iss_, 0, tcp_flag::syn, receive_window, mss_}, {});
  } else if (!output_.empty()) {
    // The oldest unacknowledged bytes go again, one segment (even into a shut window: a
    // probe); the rest follow as acknowledgments come (go-back-N).
    const std::size_t n = std::min<std::size_t>(output_.size(), std::min(peer_mss_, mss_));
    const iovec piece{output_.data(), n};
    sink.send_segment({una_, receive_next_,
                       static_cast<std::uint8_t>(tcp_flag::ack | tcp_flag::psh), receive_window, 0},
                      {&piece, 1});
    sent_ = n;
    next_ = una_ + static_cast<std::uint32_t>(n);
    if (before(high_, next_)) high_ = next_;  // a probe into a shut window
    ack_owed_ = false;
  } else if (fin_sent_ && !fin_acked_) {
    sink.send_segment({fin_sequence_, receive_next_,
                       static_cast<std::uint8_t>(tcp_flag::fin | tcp_flag::ack), receive_window, 0},
                      {});
    ack_owed_ = false;
  }
}

void xdp_tcp_connection::resend_now(segment_sink& sink) {
  if (phase_ == phase::closed || phase_ == phase::finished) return;
  resend(sink);
  flush(sink);
}

}  // namespace dnstransport::detail
