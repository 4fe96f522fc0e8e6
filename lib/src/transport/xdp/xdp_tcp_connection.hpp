#pragma once
// Internal: a DNS client's TCP connection run in user space over AF_XDP (RFC 9293), as much
// of TCP as a client of DNS over TCP needs (RFC 7766): the three-way handshake (its ACK
// alone, as a kernel client sends it: Knot DNS's XDP TCP takes no query on it); bytes sent in order
// and sent again from the oldest unacknowledged one when the retransmission timer runs out (RFC
// 6298: 1 s until the handshake's round trip is known, doubled on each timeout); bytes received in
// order only (a segment ahead of the next expected byte is dropped and the sender, the server's
// kernel, sends it again), acknowledged at once; FIN both ways, or RST; a reset ends it. No window
// scaling, no selective acknowledgment: a DNS connection carries little.
//
// Nothing here sends or waits itself: segments go out through the segment_sink the owner
// gives (xdp_tcp_socket.hpp writes them into frames), received ones come in through
// receive(), and the owner calls on_timer() at deadline(). Every time is CLOCK_MONOTONIC, ns.

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "transport/xdp/xdp_frames.hpp"

namespace dnstransport::detail {

class segment_sink {
 public:
  virtual ~segment_sink() = default;
  // Sends one segment: `header`, then `payload`. Returns false when it could not go now (no
  // free frame); the retransmission timer then sends it again.
  virtual bool send_segment(const tcp_header& header, std::span<const iovec> payload) = 0;
};

class xdp_tcp_connection {
 public:
  enum class phase {
    closed,       // not opened
    syn_sent,     // the SYN went, no SYN-ACK yet
    established,  // data both ways
    closing,      // our FIN went (after all our data); the peer's may still come
    finished,     // both FINs acknowledged, a reset, or failed: nothing more is sent
  };

  // What a call changed, for the owner to pass on to its client.
  struct events {
    bool connected = false;  // the handshake completed
    bool readable = false;   // bytes to read, or the peer's FIN, or a failure
    bool writable = false;   // room to write again (or the handshake completed)
  };

  // The largest segment the client sends (and announces): what a frame holds.
  explicit xdp_tcp_connection(std::uint16_t mss) : mss_(mss) {}

  // Starts a new connection (anything of an earlier one is forgotten) and sends its SYN,
  // with initial sequence number `iss`.
  void open(std::uint32_t iss, std::uint64_t now, segment_sink& sink);

  // A segment from the peer.
  events receive(const tcp_header& header, std::span<const std::uint8_t> payload, std::uint64_t now,
                 segment_sink& sink);

  // Takes as much of `pieces` as fits (the unacknowledged bytes are kept until acknowledged,
  // up to 64 KiB) and sends what the peer's window allows. Returns the bytes taken: 0 when
  // none fit now (writable comes), or when not established.
  std::size_t write(std::span<const iovec> pieces, std::uint64_t now, segment_sink& sink);

  // Copies received bytes into `into`; returns how many (0: none now, or the end).
  std::size_t read(std::span<std::uint8_t> into);
  bool has_input() const noexcept { return read_at_ < input_.size(); }
  // The peer sent FIN and every byte before it has been read.
  bool at_end() const noexcept { return fin_received_ && !has_input(); }

  // Sends the acknowledgment still owed for what was received, unless a segment with data or
  // a FIN carried it since. The owner calls it once the client has reacted to receive()'s
  // events, so that the client's query or FIN carries it.
  void flush(segment_sink& sink);

  // Ends the connection: FIN after the data sent (the peer's FIN is still acknowledged), or
  // with `abortive` a RST, finished at once. Before the handshake completed: finished.
  void close(bool abortive, std::uint64_t now, segment_sink& sink);

  // When on_timer() is due (nothing: nothing waits). Retransmission, or the end of the wait
  // for the peer's FIN after ours was acknowledged (then a RST ends it).
  std::optional<std::uint64_t> deadline() const noexcept;
  events on_timer(std::uint64_t now, segment_sink& sink);
  // A segment found no free frame: what is outstanding (the SYN, the oldest bytes, the FIN)
  // and the ACK owed go again now, without the timer's back-off.
  void resend_now(segment_sink& sink);

  // Whether write() would take bytes now.
  bool can_write() const noexcept {
    return phase_ == phase::established && !fin_queued_ && output_.size() < max_unacknowledged;
  }

  phase state() const noexcept { return phase_; }
  // 0, or why it failed: ECONNREFUSED (a RST for the SYN), ECONNRESET, ETIMEDOUT.
  int error() const noexcept { return error_; }
  // The handshake's round trip (SYN to SYN-ACK, ns), once established; 0 before, or when the
  // SYN was sent again.
  std::uint64_t handshake_rtt() const noexcept { return handshake_rtt_; }
  // Segments sent again after a timeout, since open().
  std::uint64_t retransmissions() const noexcept { return retransmissions_; }

  static constexpr std::uint64_t initial_rto_ns = 1'000'000'000;  // RFC 6298, 2.1
  static constexpr std::uint64_t min_rto_ns = 200'000'000;        // Linux's TCP_RTO_MIN
  static constexpr unsigned max_retries = 6;  // then ETIMEDOUT (about a minute from 1 s)
  static constexpr std::uint64_t fin_wait_ns = 3'000'000'000;  // for the peer's FIN
  static constexpr std::size_t max_unacknowledged = 65535;
  static constexpr std::uint16_t receive_window = 65535;

 private:
  void send_data(std::uint64_t now, segment_sink& sink);
  void resend(segment_sink& sink);
  void send_fin(segment_sink& sink);
  void send_ack(segment_sink& sink);
  void send_reset(segment_sink& sink);
  void fail(int error) noexcept;
  void arm(std::uint64_t now) noexcept;
  void finish_if_done(std::uint64_t now) noexcept;

  std::uint16_t mss_;
  std::uint16_t peer_mss_ = 536;  // RFC 9293, 3.7.1, until the SYN-ACK says
  phase phase_ = phase::closed;
  int error_ = 0;
  // Send side: iss_, what the peer acknowledged (una_), the next to send (next_; back to
  // una_'s next segment after a timeout), the highest sent (high_), the bytes from una_ on
  // not yet acknowledged (output_), the peer's window.
  std::uint32_t iss_ = 0;
  std::uint32_t una_ = 0;
  std::uint32_t next_ = 0;
  std::uint32_t high_ = 0;
  std::uint32_t fin_sequence_ = 0;
  std::vector<std::uint8_t> output_;
  std::size_t sent_ = 0;  // of output_, sent at least once
  std::uint32_t peer_window_ = 0;
  bool fin_queued_ = false;
  bool fin_sent_ = false;
  bool fin_acked_ = false;
  // Receive side: the next byte expected, what came and was not read yet.
  std::uint32_t receive_next_ = 0;
  std::vector<std::uint8_t> input_;
  std::size_t read_at_ = 0;
  bool fin_received_ = false;
  bool ack_owed_ = false;
  // Timers.
  std::uint64_t syn_sent_at_ = 0;
  bool syn_sent_again_ = false;  // after a reset of the peer's stale connection
  std::uint64_t handshake_rtt_ = 0;
  std::uint64_t base_rto_ = initial_rto_ns;  // from the handshake's round trip
  std::uint64_t rto_ = initial_rto_ns;       // with the back-off of timeouts
  std::optional<std::uint64_t> retransmit_at_;
  std::optional<std::uint64_t> fin_wait_until_;
  unsigned retries_ = 0;
  std::uint64_t retransmissions_ = 0;
};

}  // namespace dnstransport::detail
