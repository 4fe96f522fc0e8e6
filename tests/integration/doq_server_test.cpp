// The responder's DNS-over-QUIC listener against the tests' own ngtcp2 client
// (support/doq_client) and raw datagrams: many queries per connection beyond the stream
// limit, a query larger than the flow-control windows, streams whose length lies (reset with
// DOQ_PROTOCOL_ERROR), resumption with 0-RTT accepted, replayed or refused, ALPN, Version
// Negotiation, datagrams that are no QUIC packet for any connection (dropped and counted),
// random datagrams, and connections forgotten after they close or idle out. Loopback only; every
// wait is bounded.
#include <dnstransport/server.hpp>

#include <gtest/gtest.h>

#ifdef DNSTRANSPORT_HAVE_DOQ

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <random>
#include <span>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include <dnstransport/message.hpp>

#include "doq_client.hpp"
#include "responder_stats.hpp"
#include "scratch_dir.hpp"

namespace dnstransport {
namespace {

using namespace std::chrono_literals;
using hostile::doq_bytes;
using hostile::doq_client;

constexpr std::uint64_t doq_protocol_error = 0x2;

// A query with its 2-octet length, as a DoQ stream carries it (RFC 9250, section 4.2).
doq_bytes framed(const std::vector<std::uint8_t>& message) {
  doq_bytes out(2 + message.size());
  out[0] = static_cast<std::uint8_t>(message.size() >> 8);
  out[1] = static_cast<std::uint8_t>(message.size());
  std::copy(message.begin(), message.end(), out.begin() + 2);
  return out;
}

// Whether a stream came back as one answer to `query`: length, id 0, NOERROR, FIN.
::testing::AssertionResult answered(const hostile::doq_stream_result& s,
                                    const std::vector<std::uint8_t>& query,
                                    std::uint16_t answers = 1) {
  if (s.reset) return ::testing::AssertionFailure() << "reset with code " << *s.reset;
  if (!s.fin) return ::testing::AssertionFailure() << "no FIN";
  if (s.received.size() < 2) return ::testing::AssertionFailure() << "no length";
  const std::size_t length = (s.received[0] << 8) | s.received[1];
  if (length + 2 != s.received.size()) {
    return ::testing::AssertionFailure()
           << "length " << length << " for " << s.received.size() - 2 << " octets";
  }
  const auto r = check_response(std::span(s.received).subspan(2), query, 0);
  if (r.verdict != response_verdict::ok) {
    return ::testing::AssertionFailure() << "verdict " << verdict_name(r.verdict);
  }
  if (r.rcode != 0 || r.answer_count != answers) {
    return ::testing::AssertionFailure()
           << "rcode " << unsigned(r.rcode) << ", " << r.answer_count << " answers";
  }
  return ::testing::AssertionSuccess();
}

class doq_server_test : public ::testing::Test {
 protected:
  server_options options() const {
    server_options o;
    o.listen[transport_kind::doq] = endpoint{"127.0.0.1", 0};
    o.certificate_directory = directory_.path("certificate");
    return o;
  }

  static doq_client connect(const server& responder, hostile::doq_client_options o = {}) {
    return doq_client(responder.port(transport_kind::doq), responder.certificate().certificate_file,
                      o);
  }

  // A raw UDP socket towards the responder's DoQ port.
  struct raw_socket {
    int fd;
    explicit raw_socket(std::uint16_t port) : fd(::socket(AF_INET, SOCK_DGRAM, 0)) {
      sockaddr_in to{};
      to.sin_family = AF_INET;
      to.sin_port = htons(port);
      to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to), 0);
    }
    ~raw_socket() { ::close(fd); }
    void send(const doq_bytes& datagram) const {
      EXPECT_EQ(::send(fd, datagram.data(), datagram.size(), 0),
                static_cast<ssize_t>(datagram.size()));
    }
    // The next datagram within `timeout`; empty when none comes.
    doq_bytes receive(std::chrono::milliseconds timeout) const {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return {};
      doq_bytes buffer(65536);
      const ssize_t n = ::recv(fd, buffer.data(), buffer.size(), 0);
      buffer.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
      return buffer;
    }
  };

  static bool dropped_reaches(const server& responder, std::uint64_t n) {
    return hostile::responder_stats_reach(
        responder, [n](const server_stats& s) { return s.doq_packets_dropped >= n; });
  }

  // Sends an empty datagram, which the responder drops, and waits until it has counted
  // `dropped` in all: the DoQ port's datagrams are read in order on one thread, so everything
  // `raw` sent before has then been processed, whatever the machine's speed (a sleep would
  // pass as well when it had not been yet).
  static bool processed_up_to_a_marker(const server& responder, const raw_socket& raw,
                                       std::uint64_t dropped) {
    raw.send({});
    return dropped_reaches(responder, dropped);
  }

  // A 1-RTT packet for the connection the responder gave `id` to.
  static doq_bytes short_header_to(const doq_bytes& id) {
    doq_bytes packet(60, 0x5a);
    packet[0] = 0x40;
    std::copy(id.begin(), id.end(), packet.begin() + 1);
    return packet;
  }

  // Waits (at most 30 s) until the responder has forgotten the connection whose ID it gave
  // as `id`: a 1-RTT packet for it, sent every 20 ms, is then answered with a stateless
  // reset (43 octets) ending in `token`. While the connection lives or drains, nothing
  // answers.
  static bool forgotten(const raw_socket& raw, const doq_bytes& id, const doq_bytes& token) {
    for (int i = 0; i < 1500; ++i) {
      raw.send(short_header_to(id));
      const doq_bytes reply = raw.receive(20ms);
      if (!reply.empty()) {
        return reply.size() == 43 && doq_bytes(reply.end() - 16, reply.end()) == token;
      }
    }
    return false;
  }

  // Once a connection is forgotten, a packet for it from a socket of its own comes back as
  // a stateless reset only after every datagram sent to the port before it was processed
  // (one thread reads them in order): no sleep that would also pass when they were not.
  static bool processed_before_a_reset(std::uint16_t port, const doq_bytes& forgotten_id) {
    raw_socket marker(port);
    marker.send(short_header_to(forgotten_id));
    return marker.receive(30s).size() == 43;
  }

 private:
  hostile::scratch directory_{"doq_server_test"};
};

TEST_F(doq_server_test, many_queries_on_one_connection_beyond_the_stream_limit) {
  server_options o = options();
  o.doq_max_streams = 4;
  o.threads = 2;  // DoQ is on the first thread only; the other has nothing to do with it
  server responder(o);
  doq_client client = connect(responder);
  ASSERT_TRUE(client.handshake());
  constexpr int total = 50;
  std::vector<std::vector<std::uint8_t>> queries;
  std::vector<std::int64_t> ids;
  for (int i = 0; i < total; ++i) {
    queries.push_back(encode_query(fmt::format("q{}.example", i), rr_type::a));
  }
  // Only four streams at a time: the next opens once the responder allows it.
  ASSERT_TRUE(client.run_until(
      [&] {
        while (ids.size() < queries.size()) {
          const auto id = client.send(framed(queries[ids.size()]));
          if (!id) break;
          ids.push_back(*id);
        }
        return ids.size() == queries.size() && client.streams_done() == queries.size();
      },
      10s));
  for (int i = 0; i < total; ++i) EXPECT_TRUE(answered(client.stream(ids[i]), queries[i])) << i;
  responder.stop();
  const server_stats stats = responder.stats();
  EXPECT_EQ(stats.queries[transport_kind::doq], static_cast<std::uint64_t>(total));
  EXPECT_EQ(stats.connections_accepted, 1u);
  EXPECT_EQ(stats.malformed_queries, 0u);
}

TEST_F(doq_server_test, a_query_larger_than_the_flow_control_windows_is_answered) {
  server responder(options());
  doq_client client = connect(responder);
  ASSERT_TRUE(client.handshake());
  // 40 kB of EDNS padding (RFC 7830): more than the stream's first window (16 kB), so it
  // only gets through as the responder extends it.
  query_options padded;
  padded.edns.enabled = true;
  padded.edns.options.push_back({12, std::vector<std::uint8_t>(40000, 0)});
  const auto query = encode_query("large.example", rr_type::aaaa, padded);
  const auto id = client.send(framed(query));
  ASSERT_TRUE(id);
  ASSERT_TRUE(client.run_until([&] { return client.streams_done() == 1; }));
  EXPECT_TRUE(answered(client.stream(*id), query));
  responder.stop();
  EXPECT_EQ(responder.stats().queries[transport_kind::doq], 1u);
}

TEST_F(doq_server_test, streams_that_are_not_one_query_are_reset_with_doq_protocol_error) {
  server responder(options());
  doq_client client = connect(responder);
  ASSERT_TRUE(client.handshake());
  const auto query = encode_query("www.example.com", rr_type::a);
  doq_bytes short_of_length = framed(query);
  short_of_length[1] = static_cast<std::uint8_t>(short_of_length[1] + 10);  // 10 octets missing
  doq_bytes past_length = framed(query);
  past_length.push_back(0);  // one octet more than the length says
  auto response = query;
  response[2] |= 0x80;  // QR: a response is not a query
  const std::vector<doq_bytes> bad{short_of_length, past_length, {0x00}, framed(response)};
  std::vector<std::int64_t> ids;
  for (const auto& data : bad) ids.push_back(client.send(data).value());
  const auto good = client.send(framed(query));
  ASSERT_TRUE(good);
  ASSERT_TRUE(client.run_until([&] { return client.streams_done() == bad.size() + 1; }));
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const auto& s = client.stream(ids[i]);
    ASSERT_TRUE(s.reset.has_value()) << i;
    EXPECT_EQ(*s.reset, doq_protocol_error) << i;
    EXPECT_TRUE(s.received.empty()) << i;
  }
  // The connection goes on: the other stream is answered.
  EXPECT_TRUE(answered(client.stream(*good), query));
  EXPECT_FALSE(client.ended());
  responder.stop();
  EXPECT_EQ(responder.stats().malformed_queries, bad.size());
  EXPECT_EQ(responder.stats().queries[transport_kind::doq], 1u);
}

TEST_F(doq_server_test, a_resumed_session_sends_its_query_in_0rtt) {
  server responder(options());
  const auto query = encode_query("www.example.com", rr_type::a);
  std::optional<hostile::doq_resumption> resumption;
  {
    doq_client first = connect(responder);
    ASSERT_TRUE(first.handshake());
    const auto id = first.send(framed(query));
    ASSERT_TRUE(first.run_until([&] { return first.streams_done() == 1 && first.resumption(); }));
    EXPECT_TRUE(answered(first.stream(*id), query));
    resumption = first.resumption();
    first.close();
  }
  hostile::doq_client_options o;
  o.resume = &*resumption;
  o.early_data = true;
  doq_client second = connect(responder, o);
  const auto id = second.send(framed(query));  // before the handshake: 0-RTT
  ASSERT_TRUE(id);
  // The answer may come before the handshake ends (0.5-RTT); the responder counts the
  // resumption once the client's Finished arrives, which the client keeps sending until
  // then (ngtcp2 paces it).
  ASSERT_TRUE(second.run_until([&] {
    return second.streams_done() == 1 && second.handshake_completed() &&
           responder.stats().tls_resumed == 1;
  }));
  EXPECT_TRUE(second.early_data_accepted());
  EXPECT_TRUE(answered(second.stream(*id), query));
  responder.stop();
  const server_stats stats = responder.stats();
  EXPECT_EQ(stats.queries[transport_kind::doq], 2u);
  EXPECT_EQ(stats.tls_resumed, 1u);
  EXPECT_EQ(stats.doq_early_data, 1u);
}

// GnuTLS's anti-replay check (the responder's table of ClientHellos seen): the same first
// flight again, from elsewhere, once the first connection is gone, gets no 0-RTT answer.
TEST_F(doq_server_test, replayed_0rtt_is_not_answered_again) {
  server responder(options());
  const auto query = encode_query("www.example.com", rr_type::a);
  std::optional<hostile::doq_resumption> resumption;
  {
    doq_client first = connect(responder);
    ASSERT_TRUE(first.handshake());
    ASSERT_TRUE(first.run_until([&] { return first.resumption().has_value(); }));
    resumption = first.resumption();
    first.close();
  }
  hostile::doq_client_options o;
  o.resume = &*resumption;
  o.early_data = true;
  std::vector<doq_bytes> flight;
  doq_bytes second_id;
  doq_bytes second_token;
  {
    doq_client second = connect(responder, o);
    second.send(framed(query));
    ASSERT_TRUE(second.run_until(
        [&] { return second.streams_done() == 1 && responder.stats().doq_early_data == 1; }));
    flight = second.first_flight();
    second_id = second.server_id();
    second_token = second.stateless_reset_token();
    second.close();
  }
  ASSERT_FALSE(flight.empty());
  // Past its draining period the connection and its IDs are gone (a stateless reset says
  // so); the replay starts afresh.
  raw_socket probe(responder.port(transport_kind::doq));  // its resets stay off `raw`
  ASSERT_TRUE(forgotten(probe, second_id, second_token));
  raw_socket raw(responder.port(transport_kind::doq));
  for (const auto& datagram : flight) raw.send(datagram);
  EXPECT_FALSE(raw.receive(30s).empty());  // the handshake goes on, without 0-RTT
  // Every datagram of the replayed flight (its 0-RTT packet too) has been processed.
  ASSERT_TRUE(processed_before_a_reset(responder.port(transport_kind::doq), second_id));
  responder.stop();
  const server_stats stats = responder.stats();
  EXPECT_EQ(stats.doq_early_data, 1u);
  EXPECT_EQ(stats.queries[transport_kind::doq], 1u);
  EXPECT_EQ(stats.connections_accepted, 3u);
}

TEST_F(doq_server_test, 0rtt_can_be_refused_while_resumption_still_works) {
  server_options o = options();
  o.doq_early_data = false;
  server responder(o);
  const auto query = encode_query("www.example.com", rr_type::a);
  std::optional<hostile::doq_resumption> resumption;
  {
    doq_client first = connect(responder);
    ASSERT_TRUE(first.handshake());
    ASSERT_TRUE(first.run_until([&] { return first.resumption().has_value(); }));
    resumption = first.resumption();
    first.close();
  }
  hostile::doq_client_options co;
  co.resume = &*resumption;
  co.early_data = true;
  doq_client second = connect(responder, co);
  second.send(framed(query));  // offered in 0-RTT, if the ticket allows it at all
  ASSERT_TRUE(second.handshake());
  EXPECT_FALSE(second.early_data_accepted());
  // After the handshake the query goes again, in 1-RTT.
  const auto id = second.send(framed(query));
  ASSERT_TRUE(id);
  ASSERT_TRUE(second.run_until([&] { return second.stream(*id).fin; }));
  EXPECT_TRUE(answered(second.stream(*id), query));
  responder.stop();
  const server_stats stats = responder.stats();
  EXPECT_EQ(stats.tls_resumed, 1u);
  EXPECT_EQ(stats.doq_early_data, 0u);
}

TEST_F(doq_server_test, a_client_without_alpn_doq_is_refused) {
  server responder(options());
  hostile::doq_client_options o;
  o.alpn = "h3";
  doq_client client = connect(responder, o);
  EXPECT_FALSE(client.handshake(3s));
  // CONNECTION_CLOSE with the TLS alert no_application_protocol (120) as a crypto error.
  EXPECT_EQ(client.close_code(), std::optional<std::uint64_t>(0x100 + 120));
  responder.stop();
  EXPECT_EQ(responder.stats().tls_handshakes_failed, 1u);
  EXPECT_EQ(responder.stats().queries[transport_kind::doq], 0u);
}

TEST_F(doq_server_test, an_unknown_version_gets_version_negotiation) {
  server responder(options());
  raw_socket raw(responder.port(transport_kind::doq));
  // A long-header packet of a version nobody speaks, padded like an Initial.
  doq_bytes packet{0xc0, 0x1a, 0x2a, 0x3a, 0x4a, 8, 1, 2, 3, 4, 5, 6, 7, 8, 5, 9, 8, 7, 6, 5};
  packet.resize(1200, 0);
  raw.send(packet);
  const doq_bytes reply = raw.receive(30s);
  ASSERT_GE(reply.size(), 1u + 4 + 1 + 5 + 1 + 8 + 4);
  EXPECT_NE(reply[0] & 0x80, 0);                                                // long header
  EXPECT_EQ(doq_bytes(reply.begin() + 1, reply.begin() + 5), doq_bytes(4, 0));  // version 0
  // Its destination is our source ID, its source our destination ID (RFC 9000, 17.2.1).
  EXPECT_EQ(doq_bytes(reply.begin() + 5, reply.begin() + 11), (doq_bytes{5, 9, 8, 7, 6, 5}));
  EXPECT_EQ(doq_bytes(reply.begin() + 11, reply.begin() + 20),
            (doq_bytes{8, 1, 2, 3, 4, 5, 6, 7, 8}));
  bool lists_v1 = false;
  for (std::size_t at = 20; at + 4 <= reply.size(); at += 4) {
    lists_v1 = lists_v1 ||
               doq_bytes(reply.begin() + at, reply.begin() + at + 4) == (doq_bytes{0, 0, 0, 1});
  }
  EXPECT_TRUE(lists_v1);
  responder.stop();
  EXPECT_EQ(responder.stats().doq_packets_dropped, 0u);
  EXPECT_EQ(responder.stats().connections_accepted, 0u);
}

// Datagrams that belong to no connection and open none are dropped and counted; a 1-RTT
// packet among them is answered with a stateless reset.
TEST_F(doq_server_test, datagrams_for_no_connection_are_dropped_and_counted) {
  server responder(options());
  raw_socket raw(responder.port(transport_kind::doq));
  doq_bytes short_initial{0xc0, 0, 0, 0, 1, 8, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0x40, 0x10};
  short_initial.resize(100, 0);             // an Initial under 1200 octets opens nothing
  doq_bytes long_id{0xc0, 0, 0, 0, 1, 21};  // a connection ID over 20 octets
  long_id.resize(1200, 0);
  doq_bytes handshake{0xe0, 0, 0, 0, 1, 8, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0x40, 0x10};
  handshake.resize(1200, 0);  // a Handshake packet for no connection
  doq_bytes zero_rtt{0xd0, 0, 0, 0, 1, 8, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0x40, 0x10};
  zero_rtt.resize(1200, 0);  // 0-RTT before any Initial
  doq_bytes short_header{0x40};
  short_header.resize(40, 0x5a);  // a 1-RTT packet for an unknown connection ID
  doq_bytes tiny_short_header{0x40};
  tiny_short_header.resize(21, 0x5b);  // too small for a smaller stateless reset
  const std::vector<doq_bytes> junk{{},        {0x40},   short_initial, long_id,
                                    handshake, zero_rtt, short_header,  tiny_short_header};
  for (const auto& datagram : junk) raw.send(datagram);
  EXPECT_TRUE(dropped_reaches(responder, junk.size())) << responder.stats().doq_packets_dropped;
  // The 1-RTT packet alone gets an answer: a stateless reset (RFC 9000, section 10.3), a
  // short header one octet smaller than the packet, ending in the 16-octet token.
  const doq_bytes reset = raw.receive(30s);
  ASSERT_EQ(reset.size(), short_header.size() - 1);
  EXPECT_EQ(reset[0] & 0xc0, 0x40);
  EXPECT_TRUE(raw.receive(200ms).empty());
  // The listener goes on serving.
  doq_client client = connect(responder);
  ASSERT_TRUE(client.handshake());
  const auto query = encode_query("www.example.com", rr_type::a);
  const auto id = client.send(framed(query));
  ASSERT_TRUE(client.run_until([&] { return client.streams_done() == 1; }));
  EXPECT_TRUE(answered(client.stream(*id), query));
  responder.stop();
  EXPECT_EQ(responder.stats().doq_packets_dropped, junk.size());
  EXPECT_EQ(responder.stats().doq_stateless_resets, 1u);
  EXPECT_EQ(responder.stats().connections_accepted, 1u);
}

// Random datagrams, some shaped like QUIC headers (long and short, version 1 and others,
// Initial-sized): whatever the listener makes of each, it keeps answering.
TEST_F(doq_server_test, random_datagrams_never_stop_the_listener) {
  server responder(options());
  {
    raw_socket raw(responder.port(transport_kind::doq));
    std::mt19937 random(20240914);
    std::uniform_int_distribution<int> octet(0, 255);
    for (int i = 0; i < 2000; ++i) {
      const std::size_t size = i % 3 == 0 ? 1200 + octet(random) : octet(random) % 80;
      doq_bytes datagram(size);
      for (auto& b : datagram) b = static_cast<std::uint8_t>(octet(random));
      if (size >= 6 && i % 2 == 0) {
        datagram[0] |= 0xc0;  // long header
        datagram[1] = datagram[2] = datagram[3] = 0;
        datagram[4] = i % 4 == 0 ? 1 : datagram[4];  // version 1, or whatever came
        datagram[5] %= 21;                           // a plausible ID length
      }
      raw.send(datagram);
      if (i % 100 == 0) std::this_thread::sleep_for(1ms);  // stay within the socket buffer
    }
  }
  doq_client client = connect(responder);
  ASSERT_TRUE(client.handshake());
  const auto query = encode_query("www.example.com", rr_type::a);
  const auto id = client.send(framed(query));
  ASSERT_TRUE(client.run_until([&] { return client.streams_done() == 1; }));
  EXPECT_TRUE(answered(client.stream(*id), query));
  responder.stop();
  EXPECT_GT(responder.stats().doq_packets_dropped, 0u);
  EXPECT_EQ(responder.stats().queries[transport_kind::doq], 1u);
}

// After a connection has ended, a packet to its connection ID belongs to nothing: dropped,
// and answered with a stateless reset that ends in the token the server gave for that ID.
TEST_F(doq_server_test, connections_are_forgotten_after_close_and_after_the_idle_timeout) {
  server_options o = options();
  o.idle_timeout_seconds = 0.3;
  server responder(o);
  raw_socket raw(responder.port(transport_kind::doq));
  const auto to = [](const doq_bytes& id) {
    doq_bytes packet(60, 0x5a);
    packet[0] = 0x40;
    std::copy(id.begin(), id.end(), packet.begin() + 1);
    return packet;
  };

  doq_client closing = connect(responder);
  ASSERT_TRUE(closing.handshake());
  const doq_bytes closed_id = closing.server_id();
  const doq_bytes closed_token = closing.stateless_reset_token();
  closing.close();
  doq_client idle = connect(responder);
  ASSERT_TRUE(idle.handshake());
  const doq_bytes idle_id = idle.server_id();
  const doq_bytes idle_token = idle.stateless_reset_token();
  ASSERT_EQ(idle_token.size(), 16u);
  // While the connections live, such packets reach them (and fail to decrypt there).
  raw.send(to(idle_id));
  ASSERT_TRUE(processed_up_to_a_marker(responder, raw, 1));
  EXPECT_EQ(responder.stats().doq_packets_dropped, 1u);  // the marker alone

  // Draining lasts three PTOs, idleness 0.3 s: waited for as the responder counts them
  // ended, not for a time that a stalled machine may not give it.
  ASSERT_TRUE(hostile::responder_stats_reach(
      responder, [](const server_stats& s) { return s.doq_connections_ended == 2; }));
  raw.send(to(closed_id));
  raw.send(to(idle_id));
  EXPECT_TRUE(dropped_reaches(responder, 3)) << responder.stats().doq_packets_dropped;
  const doq_bytes first = raw.receive(30s);
  const doq_bytes second = raw.receive(30s);
  ASSERT_EQ(first.size(), 43u);
  ASSERT_EQ(second.size(), 43u);
  EXPECT_EQ(doq_bytes(first.end() - 16, first.end()), closed_token);
  EXPECT_EQ(doq_bytes(second.end() - 16, second.end()), idle_token);
  responder.stop();
  EXPECT_EQ(responder.stats().doq_stateless_resets, 2u);
  EXPECT_EQ(responder.stats().connections_accepted, 2u);
}

}  // namespace
}  // namespace dnstransport

#endif
