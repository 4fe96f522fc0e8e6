#pragma once
/// \file
/// Test support: the server side of one HTTP/2 connection (nghttp2) in memory, for DNS over
/// HTTPS scripts: what the client sent goes in with receive(), complete requests come out one
/// by one, and the script answers, refuses, resets or goes away as it likes; what the server
/// sends is handed to a sink. h2_peer.hpp runs it on a hostile responder's connection,
/// scripted_h2.hpp on an in-memory one.

#include <nghttp2/nghttp2.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dnstransport::hostile {

using bytes = std::vector<std::uint8_t>;

/// One complete request.
struct h2_request {
  std::int32_t stream_id = 0;
  std::string method;
  std::string path;  ///< with the query string
  std::string content_type;
  bytes query;               ///< the DNS query: the POST body, or the GET dns= parameter decoded
  std::uint64_t number = 0;  ///< 0-based, over this connection
};

struct h2_options {
  std::uint32_t max_concurrent_streams = 100;  ///< announced in SETTINGS, and enforced
};

class h2_server {
 public:
  /// Queues the server's SETTINGS.
  explicit h2_server(h2_options options = {});
  ~h2_server();
  h2_server(const h2_server&) = delete;
  h2_server& operator=(const h2_server&) = delete;

  /// Takes octets the client sent. False when they broke HTTP/2 (nghttp2 then queues its
  /// GOAWAY); the session is broken from then on.
  bool receive(std::span<const std::uint8_t> data);
  /// The next complete request the client sent, if there is one.
  std::optional<h2_request> next_request();

  /// A response: `status`, a content-type unless empty, `body`; content-length is the
  /// body's size unless `content_length` says otherwise (to lie about it).
  void respond(std::int32_t stream_id, unsigned status, std::string_view content_type, bytes body,
               std::optional<std::size_t> content_length = std::nullopt);
  /// A response with exactly these header fields (none added), to break the rules.
  void respond_with(std::int32_t stream_id,
                    const std::vector<std::pair<std::string, std::string>>& headers, bytes body);
  /// 200, application/dns-message, the usual answer to `r`'s query (id 0, as sent).
  void answer(const h2_request& r);
  void reset(std::int32_t stream_id, std::uint32_t error_code = NGHTTP2_INTERNAL_ERROR);
  /// GOAWAY: streams above `last_stream_id` are not processed.
  void goaway(std::int32_t last_stream_id, std::uint32_t error_code = NGHTTP2_NO_ERROR);

  /// The frames of a 200 answer to `r` (HEADERS, then DATA with END_STREAM) made by hand with
  /// literal header fields (the connection's HPACK state stays as it was), to send where
  /// nghttp2 would not: on a stream that already ended, a second answer.
  static bytes raw_answer_frames(const h2_request& r);
  /// A frame that breaks HTTP/2: DATA on stream 0 (a connection error, PROTOCOL_ERROR).
  static bytes raw_broken_frame();

  /// Where what the server sends goes; false when it cannot take it (the connection is gone).
  using sink = std::function<bool(std::span<const std::uint8_t>)>;
  /// Hands everything queued to `to`, in nghttp2's pieces. False when the session failed or
  /// `to` did.
  bool send_to(const sink& to);

  /// Whether the client broke HTTP/2.
  bool broken() const noexcept;
  /// Most streams the client had open at once.
  std::size_t most_open_streams() const noexcept;
  /// RST_STREAM frames the client sent (it cancelled a request).
  std::uint64_t resets_received() const noexcept;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace dnstransport::hostile
