// The DoH client's HTTP/2 session on the stream client's established stream: ALPN checked,
// the session started (also as 0-RTT early data, and again when the server refused it) and
// ended, the streams of queries that timed out cancelled, HTTP/2 failures counted. The
// requests going out are in doh_client_requests.cpp, the responses coming in in
// doh_client_responses.cpp; the class is in doh_client.hpp.

#include "transport/doh/doh_client.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace dnstransport::detail {

namespace {

// The connection's receive window: answers never wait for a WINDOW_UPDATE.
constexpr std::int32_t doh_connection_window = 1 << 24;

}  // namespace

doh_session::doh_session(stream_client& driver, const doh_transport& transport)
    : driver_(driver),
      doh_(transport),
      requests_(driver.plan().outstanding),
      closed_(std::max<std::size_t>(64, 2 * std::size_t{driver.plan().outstanding})) {
  free_.reserve(requests_.size());
  for (auto it = requests_.rbegin(); it != requests_.rend(); ++it) free_.push_back(&*it);
  const std::string& path = doh_.settings().path;
  for (request& r : requests_) {
    r.answer.reserve(512);
    if (doh_.settings().use_get) r.path.reserve(path.size() + 6 + 4 * 512 / 3 + 4);
  }
}

doh_session::~doh_session() {
  if (session_ != nullptr) nghttp2_session_del(session_);
}

bool doh_session::established(std::uint64_t) {
  const tls_connection* tls = driver_.channel().stream().tls();
  const std::string alpn = tls != nullptr ? tls->alpn() : std::string();
  if (alpn != "h2") {
    driver_.fail_connection("doh", "doh_no_h2",
                            alpn.empty()
                                ? std::string("the server did not select h2 in ALPN (none)")
                                : fmt::format("the server did not select h2 in ALPN ({})", alpn));
    return false;
  }
  // After 0-RTT the session exists already.
  return session_ != nullptr || start_session();
}

bool doh_session::start_session() {
  if (nghttp2_session_client_new2(&session_, doh_.callbacks(), this, doh_.options()) != 0) {
    session_ = nullptr;
    driver_.fail_connection("doh", "http2_error",
                            "cannot create an HTTP/2 session (out of memory)");
    return false;
  }
  // No RFC 7540 priority tree (RFC 9218 §2.1): every stream is alike, and nghttp2 keeps
  // the tree up to date for every stream otherwise.
  const nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
                                             {NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES, 1}};
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, std::size(settings));
  nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0, doh_connection_window);
  return true;
}

bool doh_session::fill_early(std::uint64_t now, std::size_t room) {
  early_room_ = room;
  // The preface, SETTINGS and WINDOW_UPDATE take under 100 octets.
  if (room < 128 + request_bound() || driver_.send_allowance(now) == 0) return true;  // none go
  return start_session() && fill(now);
}

bool doh_session::resend_in_flight(std::uint64_t now) {
  // The server never saw the early HTTP/2 session: a new one, with every query that went
  // early on a stream of its own again (those waiting to go again still wait).
  std::vector<waiting_query> in_flight;
  for (const request& r : requests_) {
    if (r.in_use && !r.finished && driver_.slots().find(r.id) != nullptr) {
      in_flight.push_back({r.id, r.resends});
    }
  }
  ended();
  if (!start_session()) return false;
  out_.clear();
  for (const waiting_query& w : in_flight) {
    slot_table::slot* s = driver_.slots().find(w.id);
    if (submit_slot(*s, w.resends) == nullptr || !take_output()) return false;
    if (s->counted) ++driver_.early_counts().queries_resent;
  }
  now_ = now;
  return write_output();
}

void doh_session::tick(std::uint64_t now) {
  if (session_ == nullptr) return;
  now_ = now;
  bool cancelled = false;
  for (request& r : requests_) {
    if (!r.in_use || r.finished || driver_.slots().find(r.id) != nullptr) continue;
    // The query timed out: the stream is no use any more.
    r.finished = true;
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, r.stream_id, NGHTTP2_CANCEL);
    cancelled = true;
  }
  if (cancelled) send_output();
}

void doh_session::ended() noexcept {
  if (session_ == nullptr) return;
  nghttp2_session_del(session_);  // calls no callback
  session_ = nullptr;
  free_.clear();
  for (auto it = requests_.rbegin(); it != requests_.rend(); ++it) {
    it->in_use = false;
    free_.push_back(&*it);
  }
  last_ = nullptr;
  open_streams_ = 0;
  settings_received_ = goaway_ = false;
  last_error_.clear();
  goaway_last_stream_ = 0;
  ++connection_;  // the closed streams remembered were this connection's
}

std::uint32_t doh_session::waiting() noexcept {
  // Those that timed out meanwhile are gone (lost).
  std::erase_if(waiting_,
                [this](const waiting_query& w) { return driver_.slots().find(w.id) == nullptr; });
  return static_cast<std::uint32_t>(waiting_.size());
}

void doh_session::resend_later(request& r, const char* cause, std::uint64_t now) {
  slot_table::slot* s = driver_.slots().find(r.id);
  if (s == nullptr) return;  // it timed out already
  if (r.resends >= max_resends) {
    driver_.fail_exchange(r.id, now, cause);
    return;
  }
  s->waiting_resend = true;
  waiting_.push_back({r.id, static_cast<std::uint8_t>(r.resends + 1)});
}

void doh_session::session_failed(const char* what, int error) {
  if (driver_.counted()) {
    driver_.connections().record_failure(
        "http2_error", last_error_.empty()
                           ? fmt::format("{}: {} ({})", what, nghttp2_strerror(error), error)
                           : fmt::format("{}: {}", what, last_error_));
  }
  // nghttp2 found the error in what the server sent (or could not go on): we close.
  driver_.close_broken();
}

int doh_session::on_error(nghttp2_session*, int, const char* message, std::size_t size,
                          void* user_data) {
  auto& self = *static_cast<doh_session*>(user_data);
  if (self.last_error_.empty()) self.last_error_.assign(message, size);
  return 0;
}

}  // namespace dnstransport::detail
