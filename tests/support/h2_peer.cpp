#include "h2_peer.hpp"

#include <chrono>
#include <utility>

namespace dnstransport::hostile {

h2_session::h2_session(stream_peer& peer, h2_options options) : h2_server(options), peer_(peer) {
  flush();
}

std::optional<h2_request> h2_session::next_request(microseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    if (auto r = h2_server::next_request()) return r;
    if (broken() || !flush()) return std::nullopt;
    microseconds left = forever;
    if (wait != forever) {
      left = std::chrono::duration_cast<microseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
    }
    const bytes data = peer_.read_some(65536, left);
    if (data.empty()) {
      if (peer_.gone()) return std::nullopt;
      continue;
    }
    if (!receive(data)) {
      flush();  // nghttp2's GOAWAY
      return std::nullopt;
    }
  }
}

bool h2_session::flush() {
  return send_to([this](std::span<const std::uint8_t> data) { return peer_.write(data); }) &&
         !peer_.gone();
}

bool h2_session::send_raw(std::span<const std::uint8_t> octets) {
  // In one write (one TLS record) with what is queued: a client reads them together, as it
  // would read them from a server that sent them at once.
  bytes all;
  if (!send_to([&all](std::span<const std::uint8_t> data) {
        all.insert(all.end(), data.begin(), data.end());
        return true;
      })) {
    return false;
  }
  all.insert(all.end(), octets.begin(), octets.end());
  return peer_.write(all) && !peer_.gone();
}

connection_script serve_doh(doh_script script, h2_options options) {
  return [script = std::move(script), options](stream_peer& peer) {
    h2_session session(peer, options);
    while (auto request = session.next_request()) {
      script(session, *request);
      if (!session.flush()) break;
    }
    peer.discard_until_gone();
  };
}

doh_script doh_answer_all() {
  return [](h2_session& session, const h2_request& r) { session.answer(r); };
}

}  // namespace dnstransport::hostile
