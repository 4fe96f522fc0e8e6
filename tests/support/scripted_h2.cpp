#include "scripted_h2.hpp"

#include <algorithm>
#include <memory>

namespace dnstransport::scripted {

h2_connection::h2_connection(const h2_script& script, h2_log& log)
    : h2_server(script.h2), log_(log) {
  if (script.handler_for_connection) handler_ = script.handler_for_connection();
  if (!handler_) handler_ = [](h2_connection& c, const hostile::h2_request& r) { c.answer(r); };
  flush();  // the server's SETTINGS, as soon as the connection is up
}

void h2_connection::take(std::span<const std::uint8_t> octets) {
  if (!receive(octets)) ++log_.broken_sessions;
  while (auto request = next_request()) {
    ++log_.requests;
    ++(request->method == "GET" ? log_.gets : log_.posts);
    handler_(*this, *request);
  }
  flush();
  log_.resets_received += resets_received() - resets_counted_;
  resets_counted_ = resets_received();
  log_.most_open_streams = std::max(log_.most_open_streams, most_open_streams());
}

void h2_connection::flush() {
  send_to([this](std::span<const std::uint8_t> data) {
    send(data);
    return true;
  });
}

void h2_connection::send_raw(std::span<const std::uint8_t> octets) {
  flush();
  send(octets);
}

detail::stream_socket_factory make_h2_socket_factory(const h2_script& script, h2_log& log) {
  return make_scripted_sockets(script, log, [&script, &log]() -> std::unique_ptr<peer_end> {
    return std::make_unique<h2_connection>(script, log);
  });
}

}  // namespace dnstransport::scripted
