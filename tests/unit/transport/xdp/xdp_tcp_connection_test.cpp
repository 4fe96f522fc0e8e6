#include "transport/xdp/xdp_tcp_connection.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <string>
#include <vector>

namespace dnstransport::detail {
namespace {

// What the connection sent, segment by segment.
struct recorded_segment {
  tcp_header header;
  std::string payload;
};

class recording_sink final : public segment_sink {
 public:
  bool send_segment(const tcp_header& header, std::span<const iovec> payload) override {
    recorded_segment s{header, {}};
    for (const iovec& piece : payload) {
      s.payload.append(static_cast<const char*>(piece.iov_base), piece.iov_len);
    }
    sent.push_back(std::move(s));
    return accept;
  }
  std::vector<recorded_segment> take() { return std::exchange(sent, {}); }
  std::vector<recorded_segment> sent;
  bool accept = true;
};

constexpr std::uint32_t iss = 0xfffffff0;  // wraps around 2^32 within the test's bytes
constexpr std::uint32_t irs = 5000;
constexpr std::uint64_t ms = 1'000'000;

std::span<const std::uint8_t> bytes(const std::string& s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

std::size_t write(xdp_tcp_connection& c, const std::string& s, std::uint64_t now,
                  segment_sink& sink) {
  const iovec piece{const_cast<char*>(s.data()), s.size()};
  return c.write({&piece, 1}, now, sink);
}

std::string read_all(xdp_tcp_connection& c) {
  std::string out(1000, '\0');
  out.resize(c.read({reinterpret_cast<std::uint8_t*>(out.data()), out.size()}));
  return out;
}

// A connection past its handshake at time 10 ms, the SYN-ACK 2 ms after the SYN.
xdp_tcp_connection established(recording_sink& sink) {
  xdp_tcp_connection c(1460);
  c.open(iss, 10 * ms, sink);
  c.receive({irs, iss + 1, tcp_flag::syn | tcp_flag::ack, 65535, 1400}, {}, 12 * ms, sink);
  sink.take();
  return c;
}

const std::uint8_t ack_psh = tcp_flag::ack | tcp_flag::psh;
const std::uint8_t fin_ack = tcp_flag::fin | tcp_flag::ack;

// The one-query connection: SYN with the MSS; the handshake's ACK alone, then the query
// (Knot DNS's XDP TCP takes no data on that ACK); the answer read once; the FIN carrying the
// answer's ACK; the server's FIN acknowledged; finished.
TEST(xdp_tcp_connection_test, one_query_takes_the_segments_of_a_kernel_client_and_no_more) {
  recording_sink sink;
  xdp_tcp_connection c(1460);
  c.open(iss, 10 * ms, sink);
  auto sent = sink.take();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].header, (tcp_header{iss, 0, tcp_flag::syn, 65535, 1460}));
  EXPECT_EQ(c.state(), xdp_tcp_connection::phase::syn_sent);
  EXPECT_EQ(c.deadline(), 10 * ms + xdp_tcp_connection::initial_rto_ns);

  auto ev =
      c.receive({irs, iss + 1, tcp_flag::syn | tcp_flag::ack, 65535, 1400}, {}, 12 * ms, sink);
  EXPECT_TRUE(ev.connected && ev.writable);
  EXPECT_EQ(c.state(), xdp_tcp_connection::phase::established);
  EXPECT_EQ(c.handshake_rtt(), 2 * ms);
  EXPECT_FALSE(c.deadline());
  sent = sink.take();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].header, (tcp_header{iss + 1, irs + 1, tcp_flag::ack, 65535, 0}));
  EXPECT_TRUE(sent[0].payload.empty());

  const std::string query(std::string("\x00\x05", 2) + "query");
  EXPECT_EQ(write(c, query, 12 * ms, sink), query.size());
  c.flush(sink);  // owed nothing more
  sent = sink.take();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].header, (tcp_header{iss + 1, irs + 1, ack_psh, 65535, 0}));
  EXPECT_EQ(sent[0].payload, query);
  EXPECT_EQ(c.deadline(), 12 * ms + xdp_tcp_connection::min_rto_ns);  // 3 x 2 ms is less

  const std::string answer(std::string("\x00\x06", 2) + "answer");
  const std::uint32_t after_query = iss + 1 + static_cast<std::uint32_t>(query.size());
  ev = c.receive({irs + 1, after_query, ack_psh, 65535, 0}, bytes(answer), 13 * ms, sink);
  EXPECT_TRUE(ev.readable);
  EXPECT_FALSE(c.deadline());  // all acknowledged
  EXPECT_EQ(read_all(c), answer);
  EXPECT_FALSE(c.has_input());
  const std::uint32_t after_answer = irs + 1 + static_cast<std::uint32_t>(answer.size());

  c.close(false, 13 * ms, sink);
  c.flush(sink);
  sent = sink.take();
  ASSERT_EQ(sent.size(), 1u);  // the FIN carries the answer's ACK
  EXPECT_EQ(sent[0].header, (tcp_header{after_query, after_answer, fin_ack, 65535, 0}));
  EXPECT_EQ(c.state(), xdp_tcp_connection::phase::closing);

  ev = c.receive({after_answer, after_query + 1, fin_ack, 65535, 0}, {}, 14 * ms, sink);
  EXPECT_TRUE(ev.readable);
  EXPECT_EQ(c.state(), xdp_tcp_connection::phase::finished);
  EXPECT_EQ(c.error(), 0);
  EXPECT_FALSE(c.deadline());
  c.flush(sink);
  sent = sink.take();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].header,
            (tcp_header{after_query + 1, after_answer + 1, tcp_flag::ack, 65535, 0}));

  // The server's FIN again (that ACK was lost): acknowledged again, nothing else.
  c.receive({after_answer, after_query + 1, fin_ack, 65535, 0}, {}, 300 * ms, sink);
  c.flush(sink);
  sent = sink.take();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].header.flags, tcp_flag::ack);
  EXPECT_EQ(c.retransmissions(), 0u);
}

TEST(xdp_tcp_connection_test, a_lost_syn_goes_again_with_a_doubled_timer_then_times_out) {
  recording_sink sink;
  xdp_tcp_connection c(1460);
  c.open(iss, 0, sink);
  sink.take();
  std::uint64_t rto = xdp_tcp_connection::initial_rto_ns;
  std::uint64_t now = 0;
  for (unsigned i = 0; i < xdp_tcp_connection::max_retries; ++i) {
    ASSERT_TRUE(c.deadline());
    EXPECT_EQ(*c.deadline(), now + rto) << i;
    // Early: nothing.
    c.on_timer(*c.deadline() - 1, sink);
    EXPECT_TRUE(sink.sent.empty()) << i;
    now = *c.deadline();
    c.on_timer(now, sink);
    const auto sent = sink.take();
    ASSERT_EQ(sent.size(), 1u) << i;
    EXPECT_EQ(sent[0].header, (tcp_header{iss, 0, tcp_flag::syn, 65535, 1460})) << i;
    rto *= 2;
  }
  const auto ev = c.on_timer(*c.deadline(), sink);
  EXPECT_TRUE(ev.readable && ev.writable);
  EXPECT_EQ(c.state(), xdp_tcp_connection::phase::finished);
  EXPECT_EQ(c.error(), ETIMEDOUT);
  EXPECT_FALSE(c.deadline());
}

// Karn's rule: the SYN-ACK after a SYN sent again gives no round trip.
TEST(xdp_tcp_connection_test, a_handshake_after_a_second_syn_has_no_round_trip) {
  recording_sink sink;
  xdp_tcp_connection c(1460);
  c.open(iss, 0, sink);
  c.on_timer(*c.deadline(), sink);
  c.receive({irs, iss + 1, tcp_flag::syn | tcp_flag::ack, 65535, 0}, {}, 1100 * ms, sink);
  EXPECT_EQ(c.state(), xdp_tcp_connection::phase::established);
  EXPECT_EQ(c.handshake_rtt(), 0u);
}

TEST(xdp_tcp_connection_test, a_reset_for_the_syn_is_refused_and_a_stale_ack_is_reset) {
  recording_sink sink;
  xdp_tcp_connection c(1460);
  c.open(iss, 0, sink);
  sink.take();
  // An ACK for another SYN: answered with a reset at its acknowledgment, and ignored.
  c.receive({irs, iss + 7, tcp_flag::syn | tcp_flag::ack, 65535, 0}, {}, ms, sink);
  // The peer held an older connection on the port: once reset, the SYN goes again at once.
  auto sent = sink.take();
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0].header, (tcp_header{iss + 7, 0, tcp_flag::rst, 0, 0}));
  EXPECT_EQ(sent[1].header, (tcp_header{iss, 0, tcp_flag::syn, 65535, 1460}));
  EXPECT_EQ(c.state(), xdp_tcp_connection::phase::syn_sent);
  // Only once: a second stray ACK gets its reset and no SYN.
  c.receive({irs, iss + 9, tcp_flag::ack, 65535, 0}, {}, ms, sink);
  sent = sink.take();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].header.flags, tcp_flag::rst);
  // A reset without an acceptable ACK: ignored.
  c.receive({0, 0, tcp_flag::rst, 0, 0}, {}, ms, sink);
  EXPECT_EQ(c.state(), xdp_tcp_connection::phase::syn_sent);
  const auto ev = c.receive({0, iss + 1, tcp_flag::rst | tcp_flag::ack, 0, 0}, {}, ms, sink);
  EXPECT_TRUE(ev.readable);
  EXPECT_EQ(c.error(), ECONNREFUSED);
  EXPECT_TRUE(sink.sent.empty());
}

TEST(xdp_tcp_connection_test, a_reset_counts_only_in_the_window) {
  recording_sink sink;
  auto c = established(sink);
  c.receive({irs + 1 + 70000, iss + 1, tcp_flag::rst, 0, 0}, {}, 20 * ms, sink);
  c.receive({irs, iss + 1, tcp_flag::rst, 0, 0}, {}, 20 * ms, sink);
  EXPECT_EQ(c.state(), xdp_tcp_connection::phase::established);
  const auto ev = c.receive({irs + 1, iss + 1, tcp_flag::rst, 0, 0}, {}, 20 * ms, sink);
  EXPECT_TRUE(ev.readable && ev.writable);
  EXPECT_EQ(c.error(), ECONNRESET);
  EXPECT_EQ(c.state(), xdp_tcp_connection::phase::finished);
}

// The server's SYN-ACK again (our ACK lost, no query yet): acknowledged again.
TEST(xdp_tcp_connection_test, a_repeated_syn_ack_is_acknowledged_again) {
  recording_sink sink;
  auto c = established(sink);
  c.receive({irs, iss + 1, tcp_flag::syn | tcp_flag::ack, 65535, 0}, {}, 20 * ms, sink);
  c.flush(sink);
  const auto sent = sink.take();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].header, (tcp_header{iss + 1, irs + 1, tcp_flag::ack, 65535, 0}));
}

// A lost query goes again after the timer (200 ms at least), once; the answer then stops
// the timer. An acknowledgment of bytes sent before the timeout is taken whole (the resend
// was shorter), so the connection does not stall.
TEST(xdp_tcp_connection_test, lost_data_goes_again_and_a_late_acknowledgment_is_taken) {
  recording_sink sink;
  auto c = established(sink);  // peer MSS 1400
  const std::string big(2000, 'q');
  EXPECT_EQ(write(c, big, 20 * ms, sink), big.size());
  auto sent = sink.take();
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0].payload.size(), 1400u);
  EXPECT_EQ(sent[1].header.sequence, iss + 1 + 1400);
  EXPECT_EQ(sent[1].payload.size(), 600u);
  const std::uint64_t due = *c.deadline();
  EXPECT_EQ(due, 20 * ms + xdp_tcp_connection::min_rto_ns);
  c.on_timer(due, sink);
  sent = sink.take();
  ASSERT_EQ(sent.size(), 1u);  // the oldest segment only
  EXPECT_EQ(sent[0].header.sequence, iss + 1);
  EXPECT_EQ(sent[0].payload, big.substr(0, 1400));
  EXPECT_EQ(c.retransmissions(), 1u);
  // The server had it all: its ACK covers both first segments.
  c.receive({irs + 1, iss + 1 + 2000, tcp_flag::ack, 65535, 0}, {}, due + ms, sink);
  EXPECT_FALSE(c.deadline());
  EXPECT_TRUE(sink.take().empty());
  // The connection goes on from there.
  EXPECT_EQ(write(c, "more", due + ms, sink), 4u);
  sent = sink.take();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].header.sequence, iss + 1 + 2000);
}

// Bytes come in order only: a segment past a gap is dropped (with an ACK saying where the
// connection is), a repeat is not read twice, an overlap gives only its new bytes.
TEST(xdp_tcp_connection_test, received_bytes_are_read_once_and_in_order) {
  recording_sink sink;
  auto c = established(sink);
  auto ev = c.receive({irs + 1 + 5, iss + 1, ack_psh, 65535, 0}, bytes("world"), 20 * ms, sink);
  EXPECT_FALSE(ev.readable);
  c.flush(sink);
  auto sent = sink.take();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].header.acknowledgment, irs + 1);
  ev = c.receive({irs + 1, iss + 1, ack_psh, 65535, 0}, bytes("hello"), 21 * ms, sink);
  EXPECT_TRUE(ev.readable);
  c.receive({irs + 1, iss + 1, ack_psh, 65535, 0}, bytes("hello"), 22 * ms, sink);
  c.receive({irs + 1 + 3, iss + 1, ack_psh, 65535, 0}, bytes("lo wor"), 23 * ms, sink);
  EXPECT_EQ(read_all(c), "hello wor");
  // A FIN past a gap is not taken; in order it is, once.
  c.receive({irs + 1 + 10, iss + 1, fin_ack, 65535, 0}, bytes("d"), 24 * ms, sink);
  EXPECT_FALSE(c.at_end());
  ev = c.receive({irs + 1 + 9, iss + 1, fin_ack, 65535, 0}, bytes("ld"), 25 * ms, sink);
  EXPECT_TRUE(ev.readable);
  EXPECT_EQ(read_all(c), "ld");
  EXPECT_TRUE(c.at_end());
  c.flush(sink);
  sent = sink.take();
  ASSERT_FALSE(sent.empty());
  EXPECT_EQ(sent.back().header.acknowledgment, irs + 1 + 11 + 1);
}

TEST(xdp_tcp_connection_test, an_abortive_close_resets_and_ends_at_once) {
  recording_sink sink;
  auto c = established(sink);
  c.close(true, 20 * ms, sink);
  const auto sent = sink.take();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].header.flags, tcp_flag::rst | tcp_flag::ack);
  EXPECT_EQ(sent[0].header.sequence, iss + 1);
  EXPECT_EQ(c.state(), xdp_tcp_connection::phase::finished);
  EXPECT_EQ(c.error(), 0);
  EXPECT_FALSE(c.deadline());
}

// Our FIN acknowledged, the server's never comes: after the wait, a reset ends it.
TEST(xdp_tcp_connection_test, a_peer_that_never_sends_its_fin_is_reset_after_the_wait) {
  recording_sink sink;
  auto c = established(sink);
  c.close(false, 20 * ms, sink);
  sink.take();
  c.receive({irs + 1, iss + 2, tcp_flag::ack, 65535, 0}, {}, 21 * ms, sink);
  EXPECT_EQ(c.state(), xdp_tcp_connection::phase::closing);
  ASSERT_TRUE(c.deadline());
  EXPECT_EQ(*c.deadline(), 21 * ms + xdp_tcp_connection::fin_wait_ns);
  c.on_timer(*c.deadline(), sink);
  const auto sent = sink.take();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].header.flags, tcp_flag::rst | tcp_flag::ack);
  EXPECT_EQ(c.state(), xdp_tcp_connection::phase::finished);
}

// A lost FIN goes again.
TEST(xdp_tcp_connection_test, a_lost_fin_goes_again) {
  recording_sink sink;
  auto c = established(sink);
  c.close(false, 20 * ms, sink);
  sink.take();
  c.on_timer(*c.deadline(), sink);
  const auto sent = sink.take();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].header, (tcp_header{iss + 1, irs + 1, fin_ack, 65535, 0}));
}

// A shut window holds data back; the timer then probes with the oldest bytes.
TEST(xdp_tcp_connection_test, a_shut_window_holds_data_until_it_opens_or_the_timer_probes) {
  recording_sink sink;
  xdp_tcp_connection c(1460);
  c.open(iss, 0, sink);
  c.receive({irs, iss + 1, tcp_flag::syn | tcp_flag::ack, 4, 0}, {}, ms, sink);
  sink.take();
  EXPECT_EQ(write(c, "abcdefgh", ms, sink), 8u);
  auto sent = sink.take();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].payload, "abcd");
  c.receive({irs + 1, iss + 5, tcp_flag::ack, 0, 0}, {}, 2 * ms, sink);
  EXPECT_TRUE(sink.take().empty());
  ASSERT_TRUE(c.deadline());
  c.on_timer(*c.deadline(), sink);
  sent = sink.take();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].payload, "efgh");
  c.receive({irs + 1, iss + 9, tcp_flag::ack, 100, 0}, {}, 500 * ms, sink);
  EXPECT_FALSE(c.deadline());
}

// A segment that found no free frame is sent by the timer.
TEST(xdp_tcp_connection_test, a_segment_without_a_frame_goes_with_the_timer) {
  recording_sink sink;
  auto c = established(sink);
  sink.accept = false;
  EXPECT_EQ(write(c, "query", 20 * ms, sink), 5u);
  sink.take();
  sink.accept = true;
  ASSERT_TRUE(c.deadline());
  c.on_timer(*c.deadline(), sink);
  const auto sent = sink.take();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].payload, "query");
}

// The timer's back-off ends when new data is acknowledged: the next loss waits the base
// timeout again, not the doubled one.
TEST(xdp_tcp_connection_test, the_back_off_ends_when_new_data_is_acknowledged) {
  recording_sink sink;
  auto c = established(sink);
  write(c, "first", 20 * ms, sink);
  c.on_timer(*c.deadline(), sink);  // lost once: 400 ms from here
  const std::uint64_t after = 20 * ms + xdp_tcp_connection::min_rto_ns;
  EXPECT_EQ(*c.deadline(), after + 2 * xdp_tcp_connection::min_rto_ns);
  c.receive({irs + 1, iss + 6, tcp_flag::ack, 65535, 0}, {}, after + ms, sink);
  write(c, "second", after + 2 * ms, sink);
  EXPECT_EQ(*c.deadline(), after + 2 * ms + xdp_tcp_connection::min_rto_ns);
}

// After a timeout's resend the reset goes at the highest sequence sent (the server may have
// had it all, and takes only a reset in its window); a reset owes no ACK after it.
TEST(xdp_tcp_connection_test, a_reset_after_a_resend_goes_at_the_highest_sequence) {
  recording_sink sink;
  auto c = established(sink);
  const std::string big(2000, 'q');
  write(c, big, 20 * ms, sink);
  c.on_timer(*c.deadline(), sink);  // sends the first 1,400 again
  sink.take();
  c.close(true, 300 * ms, sink);
  auto sent = sink.take();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].header.flags, tcp_flag::rst | tcp_flag::ack);
  EXPECT_EQ(sent[0].header.sequence, iss + 1 + 2000);

  auto d = established(sink);
  d.receive({irs + 1, iss + 1, ack_psh, 65535, 0}, bytes("hi"), 20 * ms, sink);
  d.close(true, 21 * ms, sink);
  d.flush(sink);
  sent = sink.take();
  ASSERT_EQ(sent.size(), 1u);  // the reset, and no ACK after it
  EXPECT_EQ(sent[0].header.flags, tcp_flag::rst | tcp_flag::ack);
}

// Writable as a kernel socket's send buffer: not once 64 KiB wait for their ACK.
TEST(xdp_tcp_connection_test, a_full_send_buffer_is_not_writable) {
  recording_sink sink;
  xdp_tcp_connection c(1460);
  c.open(iss, 0, sink);
  EXPECT_FALSE(c.can_write());
  c.receive({irs, iss + 1, tcp_flag::syn | tcp_flag::ack, 0, 0}, {}, ms, sink);  // window shut
  EXPECT_TRUE(c.can_write());
  const std::string full(xdp_tcp_connection::max_unacknowledged, 'q');
  EXPECT_EQ(write(c, full, ms, sink), full.size());
  EXPECT_FALSE(c.can_write());
  EXPECT_EQ(write(c, "x", ms, sink), 0u);
  c.close(false, ms, sink);
  EXPECT_FALSE(c.can_write());
}

// A segment that found no free frame goes again at once when asked, without back-off.
TEST(xdp_tcp_connection_test, resend_now_sends_what_is_outstanding_without_back_off) {
  recording_sink sink;
  xdp_tcp_connection c(1460);
  sink.accept = false;
  c.open(iss, 0, sink);
  sink.take();
  sink.accept = true;
  c.resend_now(sink);
  const auto sent = sink.take();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].header.flags, tcp_flag::syn);
  EXPECT_EQ(*c.deadline(), xdp_tcp_connection::initial_rto_ns);  // unchanged
  EXPECT_EQ(c.retransmissions(), 0u);
}

// A port's next connection starts from nothing the last one left (its unread bytes, its
// FIN, its timer's back-off).
TEST(xdp_tcp_connection_test, opening_again_forgets_the_connection_before) {
  recording_sink sink;
  auto c = established(sink);
  write(c, "query", 20 * ms, sink);
  c.on_timer(*c.deadline(), sink);  // back-off doubled
  c.receive({irs + 1, iss + 6, fin_ack, 65535, 0}, bytes("answer"), 300 * ms, sink);
  EXPECT_TRUE(c.has_input());
  sink.take();
  c.open(iss + 100, 400 * ms, sink);
  EXPECT_EQ(c.state(), xdp_tcp_connection::phase::syn_sent);
  EXPECT_FALSE(c.has_input());
  EXPECT_FALSE(c.at_end());
  EXPECT_EQ(c.retransmissions(), 0u);
  EXPECT_EQ(c.deadline(), 400 * ms + xdp_tcp_connection::initial_rto_ns);
  const auto sent = sink.take();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].header, (tcp_header{iss + 100, 0, tcp_flag::syn, 65535, 1460}));
}

}  // namespace
}  // namespace dnstransport::detail
