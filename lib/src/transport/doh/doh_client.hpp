#pragma once
// Internal: the DoH client: a stream client (the driver of its connections, stream_client.hpp)
// whose session (stream_session.hpp) is this nghttp2 client session. Answers are matched by
// stream (RFC 8484 asks for DNS id 0), and the question is still checked. What goes wrong
// above DNS is counted per query in http_failed by cause (status, content type, empty body,
// RST_STREAM). The streams the server provably did not process (REFUSED_STREAM, or above a
// GOAWAY's last stream id: RFC 9113, section 8.7) are sent again on a new stream, of this
// connection while it takes streams or of the next (after GOAWAY the connection is replaced
// once its streams are done), at most max_resends times; a second answer on a stream that
// ended is counted as the slot's history says (duplicate, late).
//
// doh_client.cpp: the session on the connection (start, early data, timeouts, end);
// doh_client_requests.cpp: the requests and nghttp2's output; doh_client_responses.cpp: the
// reads, nghttp2's callbacks and what the responses count.

#include <nghttp2/nghttp2.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "transport/doh/doh_transport.hpp"
#include "transport/stream/stream_client.hpp"
#include "transport/stream/stream_session.hpp"

namespace dnstransport::detail {

class doh_session final : public stream_session {
 public:
  doh_session(stream_client& driver, const doh_transport& transport);
  ~doh_session() override;
  doh_session(const doh_session&) = delete;
  doh_session& operator=(const doh_session&) = delete;

  // ALPN checked (h2), and the HTTP/2 session started unless early data did.
  bool established(std::uint64_t now) override;
  bool fill(std::uint64_t now) override;
  // 0-RTT: the HTTP/2 preface, SETTINGS and the first requests as early data (h2 assumed:
  // the ticket's ALPN was h2, and established() still checks it). A refusal starts the
  // session again and submits the queries in flight anew.
  bool fill_early(std::uint64_t now, std::size_t room) override;
  bool resend_in_flight(std::uint64_t now) override;
  bool read() override;
  bool flush() override { return send_output(); }
  bool refuses_queries() const noexcept override { return goaway_; }
  std::uint32_t waiting() noexcept override;
  // Cancels (RST_STREAM) the streams of queries that timed out, so that a server that never
  // answers does not hold the connection's streams for ever.
  void tick(std::uint64_t now) override;
  void ended() noexcept override;

  // nghttp2's callbacks (doh_transport sets them), on the session in `user_data`.
  static int on_header(nghttp2_session* session, const nghttp2_frame* frame,
                       const std::uint8_t* name, std::size_t name_size, const std::uint8_t* value,
                       std::size_t value_size, std::uint8_t flags, void* user_data);
  static int on_data_chunk(nghttp2_session* session, std::uint8_t flags, std::int32_t stream_id,
                           const std::uint8_t* data, std::size_t size, void* user_data);
  static int on_frame(nghttp2_session* session, const nghttp2_frame* frame, void* user_data);
  static int on_begin_frame(nghttp2_session* session, const nghttp2_frame_hd* header,
                            void* user_data);
  static int on_stream_close(nghttp2_session* session, std::int32_t stream_id,
                             std::uint32_t error_code, void* user_data);
  static int on_error(nghttp2_session* session, int code, const char* message, std::size_t size,
                      void* user_data);

 private:
  // Times a query the server did not process is sent again before it fails (http_failed,
  // refused_stream or goaway_unprocessed): a server that refuses every stream cannot keep a
  // query going round.
  static constexpr std::uint8_t max_resends = 3;

  // One request stream in flight; as many as the client may have queries in flight.
  struct request {
    std::uint16_t id = 0;      // the query's slot id (the wire carries 0)
    std::uint8_t resends = 0;  // times this query was sent again before this stream
    std::int32_t stream_id = 0;
    bool in_use = false;
    bool finished = false;  // the response ended (END_STREAM) and was counted
    bool reset_by_server = false;
    bool too_large = false;
    bool content_type_ok = false;
    unsigned status = 0;               // 0: none, or not three digits
    std::int64_t content_length = -1;  // -1: none, -2: not a number
    std::vector<std::uint8_t> query;   // the query with id 0 (POST body, GET parameter)
    std::size_t query_sent = 0;        // POST body octets nghttp2 has taken
    std::vector<std::uint8_t> answer;
    std::string path;         // GET: path?dns=...
    std::string length_text;  // POST: the query's content-length
  };

  // Hands nghttp2's output to the stream. False when the connection is gone.
  bool send_output();
  // Appends what nghttp2 has to send to out_. False when the session failed.
  bool take_output();
  // Takes nghttp2's output and writes out_ in one go. False when the connection is gone.
  bool write_output();
  // Streams the client may open now: free requests, the server's limit, GOAWAY (new queries
  // also need the send allowance).
  std::uint32_t stream_room() const noexcept;
  // A new nghttp2 session with our SETTINGS queued. False (the connection failed) when
  // nghttp2 cannot make one.
  bool start_session();
  // The most octets one request's frames take (for the early data's limit).
  std::size_t request_bound() const noexcept;
  // A request for the next query (submit) or for query `s` already in flight (submit_slot:
  // the request, or null when nghttp2 took none).
  bool submit(std::uint64_t now);
  request* submit_slot(slot_table::slot& s, std::uint8_t resends = 0);
  // Sends the queries waiting to go again, while streams may open. False when no more may.
  bool submit_waiting(std::uint32_t& room);
  // The stream of `r` closed before its response ended and the server did not process it
  // (`cause`): its query waits to go again, or fails once it went max_resends times.
  void resend_later(request& r, const char* cause, std::uint64_t now);
  void finish(request& r, std::uint64_t now);
  // The request of a stream; the last one found is kept, for the callbacks of one response
  // come one after another.
  request* stream_request(std::int32_t stream_id) noexcept;
  void release_request(request& r) noexcept;
  // The session broke (HTTP/2 protocol error from either side): counted, connection dropped.
  void session_failed(const char* what, int error);

  // A stream of this connection closed (answered, failed or cancelled): remembered for a while
  // so that a response that comes on it later is counted (count_stray).
  void remember_closed(const request& r) noexcept;
  // A response began (HEADERS) on our closed stream `stream_id`: a duplicate, late or unexpected.
  void count_stray(std::int32_t stream_id) noexcept;

  static ssize_t read_body(nghttp2_session* session, std::int32_t stream_id, std::uint8_t* buffer,
                           std::size_t length, std::uint32_t* data_flags,
                           nghttp2_data_source* source, void* user_data);

  stream_client& driver_;
  const doh_transport& doh_;
  nghttp2_session* session_ = nullptr;
  std::vector<request> requests_;
  std::vector<request*> free_;
  request* last_ = nullptr;
  std::uint32_t open_streams_ = 0;
  std::size_t early_room_ = 0;  // octets the early data may carry
  bool settings_received_ = false;
  bool goaway_ = false;
  std::string last_error_;  // nghttp2's words for it
  std::int32_t goaway_last_stream_ = 0;
  std::uint64_t now_ = 0;          // the time of the read being processed, for the callbacks
  std::uint64_t arrived_ = 0;      // its kernel receive stamp (monotonic; 0: none)
  std::vector<std::uint8_t> out_;  // nghttp2's output, gathered into one write

  // A query the server did not process, waiting for a stream (its slot is marked
  // waiting_resend: it is on no connection).
  struct waiting_query {
    std::uint16_t id = 0;
    std::uint8_t resends = 0;  // times it will have been sent again once it goes
  };
  std::deque<waiting_query> waiting_;
  // Recently closed streams, by stream id (ids are used once per connection, in order).
  struct closed_stream {
    std::int32_t stream_id = 0;
    std::uint32_t connection = 0;
    std::uint16_t id = 0;
  };
  std::vector<closed_stream> closed_;
  std::uint32_t connection_ = 0;  // this session's connections so far
};

}  // namespace dnstransport::detail
