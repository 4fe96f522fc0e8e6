#pragma once
/// \file
/// Test support: the server side of HTTP/2 (nghttp2) on one hostile connection, for DNS over
/// HTTPS scripts. Blocking and straight-line like stream_peer: a script takes the requests
/// one by one and answers, refuses, resets or goes away as it likes.

#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hostile_server.hpp"
#include "stream_peer.hpp"

namespace dnstransport::hostile {

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

class h2_session {
 public:
  h2_session(stream_peer& peer, h2_options options = {});
  ~h2_session();
  h2_session(const h2_session&) = delete;
  h2_session& operator=(const h2_session&) = delete;

  /// The next complete request, waiting at most `wait`; nothing when the client went away
  /// or broke HTTP/2, or the wait ran out.
  std::optional<h2_request> next_request(microseconds wait = forever);

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
  /// Sends everything queued. False when the connection is gone.
  bool flush();

  /// Most streams the client had open at once.
  std::size_t most_open_streams() const noexcept { return most_open_; }

 private:
  struct impl;
  stream_peer& peer_;
  impl* impl_;
  std::size_t most_open_ = 0;
};

/// Runs on every request of a DoH connection.
using doh_script = std::function<void(h2_session& session, const h2_request& request)>;

/// A connection script (hostile_server's) serving HTTP/2 with `script` until the client goes.
connection_script serve_doh(doh_script script, h2_options options = {});

/// Answers every request.
doh_script doh_answer_all();

}  // namespace dnstransport::hostile
