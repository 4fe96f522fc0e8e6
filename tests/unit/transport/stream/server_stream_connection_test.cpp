// The responder's connection driver with no socket: one skeleton (handshake and what it
// counts, the read / write loop, a peer that half-closes, the idle timeout, the close) running
// the DNS session of TCP and TLS and the HTTP/2 session of DoH, its client a scripted end.
#include "transport/stream/server_stream_connection.hpp"

#include <gtest/gtest.h>
#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <dnstransport/server.hpp>

#include "message/framing.hpp"
#include "responder/server_thread.hpp"
#include "scripted_accepted.hpp"
#include "transport/doh/server_doh_session.hpp"
#include "transport/stream/server_dns_session.hpp"
#include "util/clock.hpp"
#include "wire_bytes.hpp"

namespace dnstransport::detail {
namespace {

using scripted::accepted_client;
using scripted::handshake_script;
using wire_bytes::operator+;
using served_octets = wire_bytes::bytes;

served_octets served_query(std::uint16_t id) {
  return wire_bytes::header(id, 0x0100, 1, 0, 0, 0) + wire_bytes::question("example.com");
}

served_octets served_framed(const served_octets& message) {
  return wire_bytes::u16(static_cast<std::uint16_t>(message.size())) + message;
}

// The ids of the framed answers in `octets`, in order; fails on a partial frame.
std::vector<std::uint16_t> served_answer_ids(const served_octets& octets) {
  std::vector<std::uint16_t> ids;
  std::size_t at = 0;
  while (at < octets.size()) {
    const std::size_t size = (std::size_t{octets[at]} << 8) | octets[at + 1];
    EXPECT_LE(at + 2 + size, octets.size());
    EXPECT_NE(octets[at + 4] & 0x80, 0) << "QR set";
    ids.push_back(static_cast<std::uint16_t>((octets[at + 2] << 8) | octets[at + 3]));
    at += 2 + size;
  }
  return ids;
}

// One responder thread (not started: the test runs its io_context) and one accepted
// connection of `transport` to a scripted client.
class served_connection {
 public:
  served_connection(transport_kind transport, server_options options,
                    handshake_script handshake = {})
      : options_(std::move(options)),
        thread_(options_, nullptr, nullptr),
        client_(thread_.io(), handshake),
        transport_(transport) {
    auto connection = server_stream_connection::make(
        thread_, client_.socket(), client_.streams(),
        transport == transport_kind::doh ? make_server_doh_session : make_server_dns_session,
        transport);
    connection_ = connection;
    thread_.adopt(std::move(connection));
    run();
  }

  // Runs every handler that is ready (no timer is waited for).
  void run() {
    thread_.io().restart();
    thread_.io().poll();
  }
  accepted_client& client() noexcept { return client_; }
  server_counters& counters() noexcept { return thread_.counters; }
  std::uint64_t answered() const { return thread_.counters.queries[transport_].load(); }
  // The thread let the connection go (it held the last reference).
  bool released() const noexcept { return connection_.expired(); }
  void check_idle(std::uint64_t now) {
    if (auto c = connection_.lock()) c->check_idle(now);
  }

 private:
  server_options options_;
  server_thread thread_;
  accepted_client client_;
  transport_kind transport_;
  std::weak_ptr<server_stream_connection> connection_;
};

server_options served_idle_options(double seconds) {
  server_options options;
  options.idle_timeout_seconds = seconds;
  return options;
}

TEST(server_stream_connection_test, a_tcp_session_answers_every_query_of_a_read_in_order) {
  served_connection tcp(transport_kind::tcp, {});
  tcp.client().send(served_framed(served_query(1)) + served_framed(served_query(2)));
  tcp.run();
  tcp.client().send(served_framed(served_query(3)));
  tcp.run();
  EXPECT_EQ(served_answer_ids(tcp.client().take_received()), (std::vector<std::uint16_t>{1, 2, 3}));
  EXPECT_EQ(tcp.answered(), 3u);
  EXPECT_FALSE(tcp.client().closed());
  EXPECT_FALSE(tcp.released());
}

TEST(server_stream_connection_test, a_peer_that_half_closes_gets_its_answers_then_the_close) {
  served_connection tcp(transport_kind::tcp, {});
  tcp.client().send(served_framed(served_query(7)));
  tcp.client().half_close();
  tcp.run();
  EXPECT_EQ(served_answer_ids(tcp.client().take_received()), (std::vector<std::uint16_t>{7}));
  EXPECT_TRUE(tcp.client().stream_shut_down());
  EXPECT_FALSE(tcp.client().fin_sent()) << "DNS over TCP closes at once, without lingering";
  EXPECT_TRUE(tcp.client().closed());
  EXPECT_TRUE(tcp.released());
}

TEST(server_stream_connection_test, an_idle_tcp_connection_is_closed_once_past_the_timeout) {
  served_connection tcp(transport_kind::tcp, served_idle_options(1));
  tcp.client().send(served_framed(served_query(1)));
  tcp.run();
  const std::uint64_t now = monotonic_ns();
  tcp.check_idle(now);
  EXPECT_FALSE(tcp.client().closed()) << "just used";
  tcp.check_idle(now + seconds_to_ns(2));
  tcp.run();
  EXPECT_EQ(served_answer_ids(tcp.client().take_received()), (std::vector<std::uint16_t>{1}));
  EXPECT_TRUE(tcp.client().closed());
  EXPECT_TRUE(tcp.released());
}

TEST(server_stream_connection_test, a_failed_handshake_is_counted_once_and_closes) {
  served_connection tls(
      transport_kind::tls, {},
      handshake_script{.waits = 1, .fails = true, .resumed_with_early_data = false});
  EXPECT_FALSE(tls.client().closed()) << "the handshake waits for the client";
  tls.client().send(served_framed(served_query(1)));  // the step after the wait fails
  tls.run();
  EXPECT_EQ(tls.counters().tls_handshakes_failed.load(), 1u);
  EXPECT_EQ(tls.counters().tls_resumed.load(), 0u);
  EXPECT_TRUE(tls.client().take_received().empty());
  EXPECT_FALSE(tls.client().stream_shut_down()) << "no session to shut down";
  EXPECT_TRUE(tls.client().closed());
  EXPECT_TRUE(tls.released());
  EXPECT_EQ(tls.answered(), 0u);
}

TEST(server_stream_connection_test, a_resumed_handshake_and_its_early_data_are_counted) {
  served_connection tls(
      transport_kind::tls, {},
      handshake_script{.waits = 0, .fails = false, .resumed_with_early_data = true});
  tls.client().send(served_framed(served_query(4)));
  tls.run();
  EXPECT_EQ(tls.counters().tls_resumed.load(), 1u);
  EXPECT_EQ(tls.counters().tls_early_data.load(), 1u);
  EXPECT_EQ(tls.counters().tls_handshakes_failed.load(), 0u);
  EXPECT_EQ(served_answer_ids(tls.client().take_received()), (std::vector<std::uint16_t>{4}));
  EXPECT_EQ(tls.answered(), 1u);
}

// An HTTP/2 client of its own, in memory: requests POSTed, responses and GOAWAY collected.
class served_h2_client {
 public:
  served_h2_client() {
    nghttp2_session_callbacks* callbacks = nullptr;
    nghttp2_session_callbacks_new(&callbacks);
    nghttp2_session_callbacks_set_on_header_callback(callbacks, &served_h2_client::on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks,
                                                              &served_h2_client::on_data);
    nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, &served_h2_client::on_frame);
    nghttp2_session_client_new(&session_, callbacks, this);
    nghttp2_session_callbacks_del(callbacks);
    nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, nullptr, 0);
  }
  ~served_h2_client() { nghttp2_session_del(session_); }
  served_h2_client(const served_h2_client&) = delete;
  served_h2_client& operator=(const served_h2_client&) = delete;

  std::int32_t post(const served_octets& message) {
    outgoing_.push_back({message, 0});
    const auto nv = [](std::string_view name, std::string_view value) {
      return nghttp2_nv{reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data())),
                        reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data())),
                        name.size(), value.size(), NGHTTP2_NV_FLAG_NONE};
    };
    const std::vector<nghttp2_nv> headers{nv(":method", "POST"), nv(":scheme", "https"),
                                          nv(":path", "/dns-query"), nv(":authority", "test"),
                                          nv("content-type", "application/dns-message")};
    nghttp2_data_provider provider{};
    provider.source.ptr = &outgoing_.back();
    provider.read_callback = &served_h2_client::read_body;
    return nghttp2_submit_request(session_, nullptr, headers.data(), headers.size(), &provider,
                                  nullptr);
  }
  // What nghttp2 has to send.
  served_octets output() {
    served_octets out;
    const std::uint8_t* data = nullptr;
    for (ssize_t n; (n = nghttp2_session_mem_send(session_, &data)) > 0;) {
      out.insert(out.end(), data, data + n);
    }
    return out;
  }
  void input(const served_octets& octets) {
    EXPECT_EQ(nghttp2_session_mem_recv(session_, octets.data(), octets.size()),
              static_cast<ssize_t>(octets.size()));
  }

  std::map<std::int32_t, std::string> status;
  std::map<std::int32_t, served_octets> bodies;
  bool goaway = false;

 private:
  static int on_header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                       std::size_t name_size, const std::uint8_t* value, std::size_t value_size,
                       std::uint8_t, void* user_data) {
    if (std::string_view(reinterpret_cast<const char*>(name), name_size) == ":status") {
      static_cast<served_h2_client*>(user_data)->status[frame->hd.stream_id].assign(
          reinterpret_cast<const char*>(value), value_size);
    }
    return 0;
  }
  static int on_data(nghttp2_session*, std::uint8_t, std::int32_t stream_id,
                     const std::uint8_t* data, std::size_t size, void* user_data) {
    served_octets& body = static_cast<served_h2_client*>(user_data)->bodies[stream_id];
    body.insert(body.end(), data, data + size);
    return 0;
  }
  static int on_frame(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    if (frame->hd.type == NGHTTP2_GOAWAY) static_cast<served_h2_client*>(user_data)->goaway = true;
    return 0;
  }
  static ssize_t read_body(nghttp2_session*, std::int32_t, std::uint8_t* buffer, std::size_t length,
                           std::uint32_t* flags, nghttp2_data_source* source, void*) {
    request_body& b = *static_cast<request_body*>(source->ptr);
    const std::size_t n = std::min(length, b.octets.size() - b.sent);
    std::copy_n(b.octets.begin() + static_cast<std::ptrdiff_t>(b.sent), n, buffer);
    b.sent += n;
    if (b.sent == b.octets.size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
    return static_cast<ssize_t>(n);
  }

  // A request's body and how much of it went; a deque keeps each where nghttp2 holds it.
  struct request_body {
    served_octets octets;
    std::size_t sent = 0;
  };

  nghttp2_session* session_ = nullptr;
  std::deque<request_body> outgoing_;
};

// The client's output to the responder, the responder's answer back, until neither has more.
void served_exchange(served_connection& doh, served_h2_client& client) {
  for (int round = 0; round < 8; ++round) {
    const served_octets out = client.output();
    if (!out.empty()) doh.client().send(out);
    doh.run();
    const served_octets in = doh.client().take_received();
    if (!in.empty()) client.input(in);
    if (out.empty() && in.empty()) return;
  }
  ADD_FAILURE() << "the exchange did not settle";
}

TEST(server_stream_connection_test, a_doh_session_answers_through_the_same_driver) {
  served_connection doh(transport_kind::doh, {});
  served_h2_client client;
  const std::int32_t first = client.post(served_query(0));
  const std::int32_t second = client.post(served_query(0));
  served_exchange(doh, client);
  for (const std::int32_t stream : {first, second}) {
    EXPECT_EQ(client.status[stream], "200");
    ASSERT_GE(client.bodies[stream].size(), 12u);
    EXPECT_NE(client.bodies[stream][2] & 0x80, 0) << "QR set";
  }
  EXPECT_EQ(doh.answered(), 2u);
  EXPECT_FALSE(client.goaway);
  EXPECT_FALSE(doh.client().closed());
}

TEST(server_stream_connection_test, a_doh_peer_that_half_closes_is_let_go_after_its_fin) {
  served_connection doh(transport_kind::doh, {});
  served_h2_client client;
  client.post(served_query(0));
  served_exchange(doh, client);
  doh.client().half_close();
  doh.run();
  EXPECT_TRUE(doh.client().stream_shut_down());
  EXPECT_TRUE(doh.client().fin_sent());
  EXPECT_TRUE(doh.client().closed()) << "the peer's FIN came: no linger left";
  EXPECT_TRUE(doh.released());
  EXPECT_EQ(doh.answered(), 1u);
}

TEST(server_stream_connection_test, an_idle_doh_connection_goes_away_then_lingers_for_the_fin) {
  served_connection doh(transport_kind::doh, served_idle_options(1));
  served_h2_client client;
  client.post(served_query(0));
  served_exchange(doh, client);
  doh.check_idle(monotonic_ns() + seconds_to_ns(2));
  doh.run();
  client.input(doh.client().take_received());
  EXPECT_TRUE(client.goaway);
  EXPECT_TRUE(doh.client().fin_sent());
  EXPECT_FALSE(doh.client().closed()) << "lingering until the peer's FIN";
  doh.client().half_close();
  doh.run();
  EXPECT_TRUE(doh.client().closed());
  EXPECT_TRUE(doh.released());
  EXPECT_EQ(doh.counters().tls_handshakes_failed.load(), 0u);
}

TEST(server_stream_connection_test, a_doh_handshake_that_fails_is_counted_once) {
  served_connection doh(
      transport_kind::doh, {},
      handshake_script{.waits = 2, .fails = true, .resumed_with_early_data = false});
  served_h2_client client;
  client.post(served_query(0));
  doh.client().send(client.output());  // the two steps after the first wait, then the failure
  doh.run();
  EXPECT_EQ(doh.counters().tls_handshakes_failed.load(), 1u);
  EXPECT_TRUE(doh.client().take_received().empty());
  EXPECT_TRUE(doh.client().closed());
  EXPECT_FALSE(doh.client().fin_sent());
  EXPECT_TRUE(doh.released());
  EXPECT_EQ(doh.answered(), 0u);
}

}  // namespace
}  // namespace dnstransport::detail
