// The responder's DNS-over-HTTPS listener, in process, against a minimal HTTP/2 client
// written here (nghttp2 client session over the project's TLS client, ALPN "h2"): answers to
// POST and GET, the error statuses, many streams in flight on one connection, GOAWAY after
// close_after_queries and on idleness, both TLS backends.
#include <dnstransport/server.hpp>

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include <dnstransport/message.hpp>
#include <dnstransport/tls.hpp>

#include "hostile_checks.hpp"
#include "scratch_dir.hpp"
#include "transport/doh/doh_message.hpp"
#include "transport/tls/tls_backend.hpp"

namespace dnstransport {
namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

// Every exchange ends within this, so a responder bug fails a test instead of hanging it.
constexpr auto time_limit = 10s;

struct h2_response {
  int status = 0;
  std::string content_type;
  std::string content_length;
  std::vector<std::uint8_t> body;
  bool closed = false;
  std::uint32_t error_code = 0;  // of the stream's close (RST_STREAM, refused by GOAWAY)
};

// A blocking-style HTTP/2 client: requests are submitted, then run() moves bytes until every
// stream closed (or the connection ended, or the time limit passed).
class h2_client {
 public:
  h2_client(tls_backend backend, std::uint16_t port) {
    std::signal(SIGPIPE, SIG_IGN);
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(port);
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ < 0 || ::connect(fd_, reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0) {
      error_ = fmt::format("connect: {}", std::strerror(errno));
      return;
    }
    if (::fcntl(fd_, F_SETFL, O_NONBLOCK) != 0) {
      error_ = "fcntl";
      return;
    }
    tls_client_options options;
    options.backend = backend;
    options.alpn = {"h2"};
    context_ = detail::make_tls_client_context(options);
    tls_ = context_->connect(fd_, nullptr);
    const auto deadline = clock_type::now() + time_limit;
    for (;;) {
      const auto r = tls_->handshake();
      if (r == detail::tls_io::done) break;
      if ((r != detail::tls_io::want_read && r != detail::tls_io::want_write) ||
          !wait_for(r == detail::tls_io::want_read ? POLLIN : POLLOUT, deadline)) {
        error_ = "tls handshake: " + tls_->error_message();
        return;
      }
    }
    nghttp2_session_callbacks* callbacks = nullptr;
    nghttp2_session_callbacks_new(&callbacks);
    nghttp2_session_callbacks_set_on_header_callback(callbacks, &h2_client::on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, &h2_client::on_data);
    nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, &h2_client::on_close);
    nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, &h2_client::on_frame);
    nghttp2_session_client_new(&session_, callbacks, this);
    nghttp2_session_callbacks_del(callbacks);
    nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, nullptr, 0);
  }

  ~h2_client() {
    if (session_ != nullptr) nghttp2_session_del(session_);
    tls_.reset();
    if (fd_ >= 0) ::close(fd_);
  }
  h2_client(const h2_client&) = delete;
  h2_client& operator=(const h2_client&) = delete;

  const std::string& error() const { return error_; }
  std::string alpn() const { return tls_ ? tls_->alpn() : std::string(); }
  bool goaway_received() const { return goaway_; }
  bool connection_ended() const { return ended_; }
  // Writes `text` over TLS before anything HTTP/2 (a peer that does not speak it).
  bool send_raw(const std::string& text) {
    std::size_t n = 0;
    return tls_->write(reinterpret_cast<const std::uint8_t*>(text.data()), text.size(), n) ==
               detail::tls_io::done &&
           n == text.size();
  }
  // SETTINGS_MAX_CONCURRENT_STREAMS the responder announced.
  std::uint32_t remote_max_streams() const {
    return nghttp2_session_get_remote_settings(session_, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);
  }

  // Submits a request; `body` is sent (with `content_type`, when not empty) unless the
  // method is GET.
  std::int32_t submit(const std::string& method, const std::string& path,
                      const std::string& content_type = {},
                      const std::vector<std::uint8_t>& body = {}) {
    std::vector<nghttp2_nv> headers{nv(":method", method), nv(":scheme", "https"),
                                    nv(":authority", "localhost"), nv(":path", path)};
    if (!content_type.empty()) headers.push_back(nv("content-type", content_type));
    auto source = std::make_unique<upload>();
    source->data = body;
    nghttp2_data_provider provider{};
    provider.source.ptr = source.get();
    provider.read_callback = &h2_client::read_body;
    const bool has_body = method != "GET";
    const std::int32_t id = nghttp2_submit_request(
        session_, nullptr, headers.data(), headers.size(), has_body ? &provider : nullptr, nullptr);
    if (id > 0) {
      uploads_[id] = std::move(source);
      responses_[id];
    }
    return id;
  }

  // POST of a DNS message to /dns-query.
  std::int32_t post(const std::vector<std::uint8_t>& query,
                    const std::string& path = std::string(detail::doh_default_path)) {
    return submit("POST", path, std::string(detail::doh_media_type), query);
  }
  std::int32_t get(const std::vector<std::uint8_t>& query) {
    return submit(
        "GET", fmt::format("{}?dns={}", detail::doh_default_path, detail::base64url_encode(query)));
  }

  // Moves bytes until every submitted stream closed (and, with `until_end`, until the
  // responder closed the connection). False on a time-out or an I/O error.
  bool run(bool until_end = false) {
    const auto deadline = clock_type::now() + time_limit;
    std::vector<std::uint8_t> in(16384);
    for (;;) {
      if (!until_end && all_closed()) return true;
      if (ended_) return until_end || all_closed();
      if (clock_type::now() > deadline) return false;
      short events = POLLIN;
      if (!flush(events)) return false;
      std::size_t n = 0;
      switch (tls_->read(in.data(), in.size(), n)) {
        case detail::tls_io::done:
          if (nghttp2_session_mem_recv(session_, in.data(), n) < 0) return false;
          continue;
        case detail::tls_io::want_read:
          break;
        case detail::tls_io::want_write:
          events |= POLLOUT;
          break;
        case detail::tls_io::closed:
        case detail::tls_io::error:
          ended_ = true;
          continue;
      }
      pollfd p{fd_, events, 0};
      ::poll(&p, 1, 20);
    }
  }

  const h2_response& response(std::int32_t id) { return responses_[id]; }

 private:
  struct upload {
    std::vector<std::uint8_t> data;
    std::size_t offset = 0;
  };

  // Views, not strings: a literal must not become a temporary that dies before the submit.
  static nghttp2_nv nv(std::string_view name, std::string_view value) {
    return {reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data())),
            reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data())), name.size(),
            value.size(), NGHTTP2_NV_FLAG_NONE};
  }

  bool all_closed() const {
    for (const auto& [id, r] : responses_) {
      if (!r.closed) return false;
    }
    return true;
  }

  bool wait_for(short events, clock_type::time_point deadline) {
    while (clock_type::now() < deadline) {
      pollfd p{fd_, events, 0};
      if (::poll(&p, 1, 20) > 0) return true;
    }
    return false;
  }

  // Writes what nghttp2 has; adds POLLOUT to `events` when the socket is full.
  bool flush(short& events) {
    for (;;) {
      if (written_ == out_.size()) {
        out_.clear();
        written_ = 0;
        const std::uint8_t* data = nullptr;
        const ssize_t n = nghttp2_session_mem_send(session_, &data);
        if (n < 0) return false;
        if (n == 0) return true;
        out_.assign(data, data + n);
      }
      std::size_t n = 0;
      switch (tls_->write(out_.data() + written_, out_.size() - written_, n)) {
        case detail::tls_io::done:
          written_ += n;
          break;
        case detail::tls_io::want_read:
          return true;
        case detail::tls_io::want_write:
          events |= POLLOUT;
          return true;
        case detail::tls_io::closed:
        case detail::tls_io::error:
          ended_ = true;
          return true;
      }
    }
  }

  static h2_client& self(void* user_data) { return *static_cast<h2_client*>(user_data); }

  static int on_header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                       std::size_t name_size, const std::uint8_t* value, std::size_t value_size,
                       std::uint8_t, void* user_data) {
    if (frame->hd.type != NGHTTP2_HEADERS) return 0;
    h2_response& r = self(user_data).responses_[frame->hd.stream_id];
    const std::string n(reinterpret_cast<const char*>(name), name_size);
    const std::string v(reinterpret_cast<const char*>(value), value_size);
    if (n == ":status") r.status = std::stoi(v);
    if (n == "content-type") r.content_type = v;
    if (n == "content-length") r.content_length = v;
    return 0;
  }

  static int on_data(nghttp2_session*, std::uint8_t, std::int32_t stream_id,
                     const std::uint8_t* data, std::size_t size, void* user_data) {
    auto& body = self(user_data).responses_[stream_id].body;
    body.insert(body.end(), data, data + size);
    return 0;
  }

  static int on_close(nghttp2_session*, std::int32_t stream_id, std::uint32_t error_code,
                      void* user_data) {
    h2_response& r = self(user_data).responses_[stream_id];
    r.closed = true;
    r.error_code = error_code;
    return 0;
  }

  static int on_frame(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    if (frame->hd.type == NGHTTP2_GOAWAY) self(user_data).goaway_ = true;
    return 0;
  }

  static ssize_t read_body(nghttp2_session*, std::int32_t, std::uint8_t* buffer, std::size_t length,
                           std::uint32_t* flags, nghttp2_data_source* source, void*) {
    upload& u = *static_cast<upload*>(source->ptr);
    const std::size_t n = std::min(length, u.data.size() - u.offset);
    std::memcpy(buffer, u.data.data() + u.offset, n);
    u.offset += n;
    if (u.offset == u.data.size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
    return static_cast<ssize_t>(n);
  }

  int fd_ = -1;
  std::string error_;
  std::unique_ptr<detail::tls_client_context> context_;
  std::unique_ptr<detail::tls_connection> tls_;
  nghttp2_session* session_ = nullptr;
  std::vector<std::uint8_t> out_;
  std::size_t written_ = 0;
  bool goaway_ = false;
  bool ended_ = false;
  std::map<std::int32_t, std::unique_ptr<upload>> uploads_;
  std::map<std::int32_t, h2_response> responses_;
};

class doh_server_test : public ::testing::TestWithParam<tls_backend> {
 protected:
  server_options options() const {
    server_options o;
    o.listen[transport_kind::doh] = endpoint{"127.0.0.1", 0};
    o.tls_options.backend = GetParam();
    o.certificate_directory = directory_.path("certificate");
    return o;
  }

 private:
  hostile::scratch directory_{"doh_server_test"};
};

std::vector<std::uint8_t> query_for(const std::string& name, std::uint16_t type) {
  return encode_query(name, type);  // id 0, as RFC 8484 §4.1 recommends
}

// A 200 carrying an answer to `query` (NOERROR, one record).
void expect_answer(const h2_response& r, const std::vector<std::uint8_t>& query) {
  EXPECT_TRUE(r.closed);
  EXPECT_EQ(r.error_code, 0u);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, detail::doh_media_type);
  EXPECT_EQ(r.content_length, std::to_string(r.body.size()));
  const auto summary = check_response(r.body, query, 0);
  EXPECT_EQ(summary.verdict, response_verdict::ok);
  EXPECT_EQ(summary.rcode, 0);
  EXPECT_EQ(summary.answer_count, 1);
}

TEST_P(doh_server_test, post_and_get_are_answered_over_h2) {
  server responder(options());
  ASSERT_NE(responder.port(transport_kind::doh), 0);
  h2_client client(GetParam(), responder.port(transport_kind::doh));
  ASSERT_EQ(client.error(), "");
  EXPECT_EQ(client.alpn(), "h2");
  const auto a = query_for("www.example.com", rr_type::a);
  const auto aaaa = query_for("example.org", rr_type::aaaa);
  const auto post = client.post(a);
  const auto get = client.get(aaaa);
  ASSERT_TRUE(client.run());
  EXPECT_EQ(client.remote_max_streams(), 100u);
  expect_answer(client.response(post), a);
  expect_answer(client.response(get), aaaa);
  const auto& body = client.response(post).body;
  ASSERT_GE(body.size(), 4u);
  EXPECT_EQ(std::vector<std::uint8_t>(body.end() - 4, body.end()),
            (std::vector<std::uint8_t>{192, 0, 2, 1}));
  responder.stop();
  EXPECT_EQ(responder.stats().queries[transport_kind::doh], 2u);
  EXPECT_EQ(responder.stats().malformed_queries, 0u);
  EXPECT_EQ(responder.stats().connections_accepted, 1u);
}

TEST_P(doh_server_test, wrong_requests_get_their_status) {
  server responder(options());
  h2_client client(GetParam(), responder.port(transport_kind::doh));
  ASSERT_EQ(client.error(), "");
  const auto query = query_for("www.example.com", rr_type::a);
  const std::string media(detail::doh_media_type);
  const auto wrong_path = client.post(query, "/other");
  const auto wrong_get_path = client.submit("GET", "/dns-query/x?dns=AAAB");
  const auto put = client.submit("PUT", "/dns-query", media, query);
  const auto text = client.submit("POST", "/dns-query", "text/plain", query);
  const auto no_parameter = client.submit("GET", "/dns-query?ct=x");
  const auto bad_parameter = client.submit("GET", "/dns-query?dns=!!!!");
  const auto short_body = client.post({1, 2, 3});
  const auto huge_body = client.post(std::vector<std::uint8_t>(65536, 0));
  const auto fine = client.submit("POST", "/dns-query", "Application/DNS-Message; x=y", query);
  ASSERT_TRUE(client.run());
  EXPECT_EQ(client.response(wrong_path).status, 404);
  EXPECT_EQ(client.response(wrong_get_path).status, 404);
  EXPECT_EQ(client.response(put).status, 405);
  EXPECT_EQ(client.response(text).status, 415);
  EXPECT_EQ(client.response(no_parameter).status, 400);
  EXPECT_EQ(client.response(bad_parameter).status, 400);
  EXPECT_EQ(client.response(short_body).status, 400);
  EXPECT_EQ(client.response(huge_body).status, 413);
  expect_answer(client.response(fine), query);
  responder.stop();
  EXPECT_EQ(responder.stats().queries[transport_kind::doh], 1u);
  EXPECT_EQ(responder.stats().malformed_queries, 3u);
}

TEST_P(doh_server_test, fifty_streams_in_flight_on_one_connection) {
  server responder(options());
  h2_client client(GetParam(), responder.port(transport_kind::doh));
  ASSERT_EQ(client.error(), "");
  std::vector<std::vector<std::uint8_t>> queries;
  std::vector<std::int32_t> streams;
  for (int i = 0; i < 50; ++i) {
    queries.push_back(query_for(fmt::format("q{}.example.com", i), rr_type::a));
    // Every request is submitted before any byte moves: all 50 go out in one burst.
    streams.push_back(i % 2 == 0 ? client.post(queries.back()) : client.get(queries.back()));
  }
  ASSERT_TRUE(client.run());
  for (std::size_t i = 0; i < streams.size(); ++i) {
    SCOPED_TRACE(i);
    expect_answer(client.response(streams[i]), queries[i]);
  }
  responder.stop();
  EXPECT_EQ(responder.stats().queries[transport_kind::doh], 50u);
  EXPECT_EQ(responder.stats().connections_accepted, 1u);
}

TEST_P(doh_server_test, max_streams_is_announced_and_more_requests_wait_their_turn) {
  server_options o = options();
  o.doh_max_streams = 5;
  server responder(o);
  h2_client client(GetParam(), responder.port(transport_kind::doh));
  ASSERT_EQ(client.error(), "");
  // The first request learns the limit; the next 20 are then queued by the client's session.
  const auto first_query = query_for("first.example.com", rr_type::a);
  const auto first = client.post(first_query);
  ASSERT_TRUE(client.run());
  expect_answer(client.response(first), first_query);
  EXPECT_EQ(client.remote_max_streams(), 5u);
  std::vector<std::vector<std::uint8_t>> queries;
  std::vector<std::int32_t> streams;
  for (int i = 0; i < 20; ++i) {
    queries.push_back(query_for(fmt::format("q{}.example.com", i), rr_type::a));
    streams.push_back(client.post(queries.back()));
  }
  ASSERT_TRUE(client.run());
  for (std::size_t i = 0; i < streams.size(); ++i) {
    SCOPED_TRACE(i);
    expect_answer(client.response(streams[i]), queries[i]);
  }
  responder.stop();
  EXPECT_EQ(responder.stats().queries[transport_kind::doh], 21u);
}

TEST_P(doh_server_test, close_after_queries_sends_goaway_then_closes) {
  server_options o = options();
  o.close_after_queries = 3;
  server responder(o);
  h2_client client(GetParam(), responder.port(transport_kind::doh));
  ASSERT_EQ(client.error(), "");
  std::vector<std::int32_t> streams;
  const auto query = query_for("www.example.com", rr_type::a);
  for (int i = 0; i < 10; ++i) streams.push_back(client.get(query));
  ASSERT_TRUE(client.run(true));
  EXPECT_TRUE(client.goaway_received());
  EXPECT_TRUE(client.connection_ended());
  for (std::size_t i = 0; i < streams.size(); ++i) {
    SCOPED_TRACE(i);
    const h2_response& r = client.response(streams[i]);
    EXPECT_TRUE(r.closed);
    if (i < 3) {
      expect_answer(r, query);
    } else {
      EXPECT_EQ(r.status, 0);
      EXPECT_EQ(r.error_code, static_cast<std::uint32_t>(NGHTTP2_REFUSED_STREAM));
    }
  }
  responder.stop();
  EXPECT_EQ(responder.stats().queries[transport_kind::doh], 3u);
}

TEST_P(doh_server_test, idle_connection_gets_goaway_and_is_closed) {
  server_options o = options();
  o.idle_timeout_seconds = 0.2;
  server responder(o);
  h2_client client(GetParam(), responder.port(transport_kind::doh));
  ASSERT_EQ(client.error(), "");
  const auto query = query_for("www.example.com", rr_type::a);
  const auto id = client.post(query);
  ASSERT_TRUE(client.run(true));
  expect_answer(client.response(id), query);
  EXPECT_TRUE(client.goaway_received());
  EXPECT_TRUE(client.connection_ended());
}

TEST_P(doh_server_test, a_peer_that_does_not_speak_h2_is_closed_and_others_go_on) {
  server responder(options());
  {
    h2_client http1(GetParam(), responder.port(transport_kind::doh));
    ASSERT_EQ(http1.error(), "");
    ASSERT_TRUE(http1.send_raw("GET /dns-query HTTP/1.1\r\nHost: localhost\r\n\r\n"));
    ASSERT_TRUE(http1.run(true));
    EXPECT_TRUE(http1.connection_ended());
  }
  h2_client client(GetParam(), responder.port(transport_kind::doh));
  ASSERT_EQ(client.error(), "");
  const auto query = query_for("www.example.com", rr_type::a);
  const auto id = client.get(query);
  ASSERT_TRUE(client.run());
  expect_answer(client.response(id), query);
}

INSTANTIATE_TEST_SUITE_P(backends, doh_server_test, ::testing::ValuesIn(available_tls_backends()),
                         hostile::backend_name);

}  // namespace
}  // namespace dnstransport
