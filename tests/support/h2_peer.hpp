#pragma once
/// \file
/// Test support: the server side of HTTP/2 (h2_server.hpp) on one hostile connection, for
/// DNS over HTTPS scripts. Blocking and straight-line like stream_peer: a script takes the
/// requests one by one and answers, refuses, resets or goes away as it likes.

#include <functional>
#include <optional>

#include "h2_server.hpp"
#include "hostile_server.hpp"
#include "stream_peer.hpp"

namespace dnstransport::hostile {

/// An h2_server whose client is at the other end of `peer`.
class h2_session : public h2_server {
 public:
  /// Sends the server's SETTINGS.
  h2_session(stream_peer& peer, h2_options options = {});

  /// The next complete request, waiting at most `wait`; nothing when the client went away
  /// or broke HTTP/2, or the wait ran out.
  std::optional<h2_request> next_request(microseconds wait = forever);

  /// Sends everything queued. False when the connection is gone.
  bool flush();
  /// Sends everything queued, then `octets` as they are (frames nghttp2 would not send), in
  /// one write: the client reads them together.
  bool send_raw(std::span<const std::uint8_t> octets);

 private:
  stream_peer& peer_;
};

/// Runs on every request of a DoH connection.
using doh_script = std::function<void(h2_session& session, const h2_request& request)>;

/// A connection script (hostile_server's) serving HTTP/2 with `script` until the client goes.
connection_script serve_doh(doh_script script, h2_options options = {});

/// Answers every request.
doh_script doh_answer_all();

}  // namespace dnstransport::hostile
