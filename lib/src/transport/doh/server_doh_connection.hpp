#pragma once
// Internal: one DNS-over-HTTPS connection (RFC 8484) accepted by the built-in responder: TLS
// on the same byte_stream as the other listeners, then HTTP/2 through an nghttp2 server
// session fed from the stream's reads (nghttp2_session_mem_recv) and drained into its
// writes (nghttp2_session_mem_send). Every request is a stream of its own; many run at once
// on one connection. Its life (waits, handshake, idle timeout) is accepted_stream's. Under a
// rate limit (server_options::rate_limit) an answer whose token is not due yet waits in a
// queue, in order, for a timer; the client's streams stay open meanwhile, so
// SETTINGS_MAX_CONCURRENT_STREAMS bounds how many wait.

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "responder/server_thread.hpp"
#include "transport/doh/doh_message.hpp"
#include "transport/stream/accepted_stream.hpp"
#include "transport/stream/byte_stream.hpp"

struct nghttp2_session;

namespace dnstransport::detail {

class server_doh_connection : public accepted_stream<server_doh_connection> {
 public:
  server_doh_connection(server_thread& owner, boost::asio::ip::tcp::socket socket,
                        stream_acceptor& streams);
  ~server_doh_connection() override;
  server_doh_connection(const server_doh_connection&) = delete;
  server_doh_connection& operator=(const server_doh_connection&) = delete;

  void check_idle(std::uint64_t now) override;

  // One HTTP/2 request stream; reused from a free list once the stream closes.
  struct request;

 private:
  friend struct doh_callbacks;

  void step() override;
  bool start_session();  // false when nghttp2 could not be set up
  bool read_requests();  // false when the connection closed
  bool flush();          // false when the connection closed
  void finish_close();
  void linger();
  void close() override;

  request* take_request();
  void release(request* r);
  void answer(std::int32_t stream_id, request& r);
  // Sends a 200 with r.answer (now, or once its rate-limit token is due).
  void deliver(std::int32_t stream_id, request& r);
  void delay(std::int32_t stream_id, request& r, std::uint64_t due);
  void arm_rate_timer();
  void send_delayed();
  void forget_delayed(const request* r);
  void respond(std::int32_t stream_id, request& r, unsigned status);

  boost::asio::steady_timer linger_timer_;
  boost::asio::steady_timer rate_timer_;  // for the first of delayed_
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
  bool goaway_ = false;     // GOAWAY submitted: answer streams up to goaway_last_stream_ only
  bool lingering_ = false;  // FIN sent: discard input until the peer's FIN, then close
};

// What one request stream has received and the answer it is given.
struct server_doh_connection::request {
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
