#pragma once
// Internal: the responder's session for DNS over HTTPS (RFC 8484), run by
// server_stream_connection over TLS on the same byte_stream as the other listeners: HTTP/2
// through an nghttp2 server session fed from the stream's reads (nghttp2_session_mem_recv)
// and drained into its writes (nghttp2_session_mem_send). Every request is a stream of its
// own; many run at once on one connection. Under a rate limit (server_options::rate_limit,
// or rate_limit_per_client for the connection's client) an answer whose token is not due yet waits
// in a queue, in order, for the driver's timer; the client's streams stay open meanwhile, so
// SETTINGS_MAX_CONCURRENT_STREAMS bounds how many wait. Closing, the connection lingers
// (server_session::lingers).

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "responder/server_thread.hpp"
#include "transport/doh/doh_message.hpp"
#include "transport/stream/byte_stream.hpp"
#include "transport/stream/server_stream_connection.hpp"

struct nghttp2_session;

namespace dnstransport::detail {

class server_doh_session final : public server_session {
 public:
  server_doh_session(server_stream_connection& driver, std::unique_ptr<byte_stream> stream);
  ~server_doh_session() override;
  server_doh_session(const server_doh_session&) = delete;
  server_doh_session& operator=(const server_doh_session&) = delete;

  byte_stream& stream() noexcept override { return *stream_; }
  bool start() override;  // false when nghttp2 could not be set up
  stream_io read() override;
  stream_io flush() override;
  bool paused() const noexcept override { return false; }
  bool holds_answers() const noexcept override { return !delayed_.empty(); }
  // The peer went away, or a GOAWAY was sent and every stream it left open is answered.
  bool finished() const noexcept override;
  // GOAWAY (NO_ERROR).
  bool end_for_idle() override;
  void on_timer() override { send_delayed(); }
  bool lingers() const noexcept override { return true; }
  void ended() noexcept override { stream_.reset(); }

  // One HTTP/2 request stream; reused from a free list once the stream closes.
  struct request;

 private:
  friend struct doh_callbacks;

  request* take_request();
  void release(request* r);
  void answer(std::int32_t stream_id, request& r);
  // Sends a 200 with r.answer (now, or once its rate-limit token is due).
  void deliver(std::int32_t stream_id, request& r);
  void delay(std::int32_t stream_id, request& r, std::uint64_t due);
  void send_delayed();
  void forget_delayed(const request* r);
  void respond(std::int32_t stream_id, request& r, unsigned status);

  server_stream_connection& driver_;
  server_thread& owner_;
  std::unique_ptr<byte_stream> stream_;
  nghttp2_session* session_ = nullptr;
  std::vector<std::uint8_t> in_;
  std::vector<std::uint8_t> out_;  // HTTP/2 output the stream has not taken yet
  std::size_t written_ = 0;        // of out_
  std::vector<std::unique_ptr<request>> requests_;
  std::vector<request*> free_requests_;
  // Answers waiting for their rate-limit tokens, in the order the tokens are due.
  struct delayed_answer {
    std::int32_t stream_id = 0;
    request* r = nullptr;
    std::uint64_t due = 0;  // monotonic_ns()
  };
  std::deque<delayed_answer> delayed_;
  std::uint64_t answered_ = 0;
  std::int32_t goaway_last_stream_ = 0;
  bool goaway_ = false;  // GOAWAY submitted: answer streams up to goaway_last_stream_ only
};

// The session of a DoH connection on `stream`.
std::unique_ptr<server_session> make_server_doh_session(server_stream_connection& driver,
                                                        std::unique_ptr<byte_stream> stream,
                                                        transport_kind transport);

// What one request stream has received and the answer it is given.
struct server_doh_session::request {
  enum class verb { none, get, post, other };
  verb method = verb::none;
  std::string target;  // :path
  bool dns_content_type = false;
  bool too_large = false;
  std::vector<std::uint8_t> body;
  std::vector<std::uint8_t> answer;
  std::size_t sent = 0;  // of answer
  bool delayed = false;  // in delayed_, waiting for the rate limit

  void reset() {
    method = verb::none;
    target.clear();
    dns_content_type = false;
    too_large = false;
    body.clear();
    answer.clear();
    sent = 0;
    delayed = false;
  }
};

}  // namespace dnstransport::detail
