// The HTTP/2 side of a DoH connection of the responder: nghttp2's server session and its
// callbacks, the request streams (a pool reused as streams close), and their answers (a 200
// with the DNS answer, now or when the rate limit's token is due, or a 4xx).
#include "transport/doh/server_doh_session.hpp"

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>

#include "responder/client_rate_limits.hpp"
#include "responder/responder.hpp"
#include "transport/doh/doh_message.hpp"
#include "util/clock.hpp"

namespace dnstransport::detail {

namespace {

std::string_view as_view(const std::uint8_t* data, std::size_t size) noexcept {
  return {reinterpret_cast<const char*>(data), size};
}

// nghttp2 copies names and values when the response is submitted.
nghttp2_nv response_header(std::string_view name, std::string_view value) noexcept {
  return header_field(name, value, NGHTTP2_NV_FLAG_NONE);
}

std::string_view status_text(unsigned status) noexcept {
  switch (status) {
    case 200:
      return "200";
    case 400:
      return "400";
    case 404:
      return "404";
    case 405:
      return "405";
    case 413:
      return "413";
    case 415:
      return "415";
  }
  return "500";
}

}  // namespace

// nghttp2's callbacks, with the connection as user data.
struct doh_callbacks {
  using request = server_doh_session::request;

  static server_doh_session& self(void* user_data) {
    return *static_cast<server_doh_session*>(user_data);
  }
  static request* of(nghttp2_session* session, std::int32_t stream_id) {
    return static_cast<request*>(nghttp2_session_get_stream_user_data(session, stream_id));
  }

  static int on_begin_headers(nghttp2_session* session, const nghttp2_frame* frame,
                              void* user_data) {
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    request* r = self(user_data).take_request();
    nghttp2_session_set_stream_user_data(session, frame->hd.stream_id, r);
    return 0;
  }

  static int on_header(nghttp2_session* session, const nghttp2_frame* frame,
                       const std::uint8_t* name, std::size_t name_size, const std::uint8_t* value,
                       std::size_t value_size, std::uint8_t /*flags*/, void* /*user_data*/) {
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    request* r = of(session, frame->hd.stream_id);
    if (r == nullptr) return 0;
    const std::string_view n = as_view(name, name_size);
    const std::string_view v = as_view(value, value_size);
    if (n == ":method") {
      r->method = v == "GET"    ? request::verb::get
                  : v == "POST" ? request::verb::post
                                : request::verb::other;
    } else if (n == ":path") {
      r->target.assign(v);
    } else if (n == "content-type") {
      r->dns_content_type = is_doh_media_type(v);
    }
    return 0;
  }

  static int on_data_chunk(nghttp2_session* session, std::uint8_t /*flags*/, std::int32_t stream_id,
                           const std::uint8_t* data, std::size_t size, void* /*user_data*/) {
    request* r = of(session, stream_id);
    if (r == nullptr || r->too_large) return 0;
    if (r->body.size() + size > doh_max_message) {
      r->too_large = true;
      r->body.clear();
      return 0;
    }
    r->body.insert(r->body.end(), data, data + size);
    return 0;
  }

  static int on_frame(nghttp2_session* session, const nghttp2_frame* frame, void* user_data) {
    if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) return 0;
    if ((frame->hd.flags & NGHTTP2_FLAG_END_STREAM) == 0) return 0;
    request* r = of(session, frame->hd.stream_id);
    if (r != nullptr) self(user_data).answer(frame->hd.stream_id, *r);
    return 0;
  }

  static int on_stream_close(nghttp2_session* session, std::int32_t stream_id,
                             std::uint32_t /*error_code*/, void* user_data) {
    request* r = of(session, stream_id);
    if (r != nullptr) {
      nghttp2_session_set_stream_user_data(session, stream_id, nullptr);
      if (r->delayed) self(user_data).forget_delayed(r);
      self(user_data).release(r);
    }
    return 0;
  }

  static ssize_t read_answer(nghttp2_session* /*session*/, std::int32_t /*stream_id*/,
                             std::uint8_t* buffer, std::size_t length, std::uint32_t* flags,
                             nghttp2_data_source* source, void* /*user_data*/) {
    request& r = *static_cast<request*>(source->ptr);
    const std::size_t n = std::min(length, r.answer.size() - r.sent);
    std::memcpy(buffer, r.answer.data() + r.sent, n);
    r.sent += n;
    if (r.sent == r.answer.size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
    return static_cast<ssize_t>(n);
  }
};

bool server_doh_session::start() {
  nghttp2_session_callbacks* callbacks = nullptr;
  if (nghttp2_session_callbacks_new(&callbacks) != 0) return false;
  nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks,
                                                          &doh_callbacks::on_begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(callbacks, &doh_callbacks::on_header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks,
                                                            &doh_callbacks::on_data_chunk);
  nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, &doh_callbacks::on_frame);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks,
                                                         &doh_callbacks::on_stream_close);
  const int rv = nghttp2_session_server_new(&session_, callbacks, this);
  nghttp2_session_callbacks_del(callbacks);
  if (rv != 0) {
    session_ = nullptr;
    return false;
  }
  const std::array<nghttp2_settings_entry, 1> settings{{
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, owner_.options().doh_max_streams},
  }};
  return nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings.data(), settings.size()) ==
         0;
}

server_doh_session::request* server_doh_session::take_request() {
  if (free_requests_.empty()) {
    requests_.push_back(std::make_unique<request>());
    return requests_.back().get();
  }
  request* r = free_requests_.back();
  free_requests_.pop_back();
  return r;
}

void server_doh_session::release(request* r) {
  r->reset();
  free_requests_.push_back(r);
}

void server_doh_session::answer(std::int32_t stream_id, request& r) {
  // Streams above a GOAWAY's last stream are closed by nghttp2 once it is sent.
  if (goaway_ && stream_id > goaway_last_stream_) return;
  const server_options& options = owner_.options();
  const doh_target target = split_doh_target(r.target);
  if (target.path != options.doh_path) return respond(stream_id, r, 404);
  switch (r.method) {
    case request::verb::get: {
      const auto parameter = doh_dns_parameter(target.query);
      auto query = parameter ? base64url_decode(*parameter) : std::nullopt;
      if (!query || query->size() > doh_max_message) {
        owner_.counters.malformed_queries.fetch_add(1, std::memory_order_relaxed);
        return respond(stream_id, r, 400);
      }
      r.body.assign(query->begin(), query->end());
      break;
    }
    case request::verb::post:
      if (!r.dns_content_type) return respond(stream_id, r, 415);
      if (r.too_large) return respond(stream_id, r, 413);
      break;
    case request::verb::none:
    case request::verb::other:
      return respond(stream_id, r, 405);
  }
  const answer_edns& edns = owner_.edns(transport_kind::doh);
  r.answer.resize(r.body.size() + answer_room(edns));
  const std::size_t size = build_answer(r.body, options.mode, r.answer, edns);
  if (size == 0) {
    owner_.counters.malformed_queries.fetch_add(1, std::memory_order_relaxed);
    return respond(stream_id, r, 400);
  }
  r.answer.resize(size);
  if (const answer_limits limits = driver_.limits(); limits) {
    // Answers whose token came while their timer had not fired yet leave first: an answer
    // never overtakes one that waited (a late timer let new ones go first on a loaded
    // machine: 5 out of order in rate_limit_test under ThreadSanitizer).
    if (!delayed_.empty()) send_delayed();
    const std::uint64_t now = monotonic_ns();
    const std::uint64_t due = limits.reserve(now);
    if (due > now || !delayed_.empty()) return delay(stream_id, r, due);
  }
  deliver(stream_id, r);
}

void server_doh_session::deliver(std::int32_t stream_id, request& r) {
  respond(stream_id, r, 200);
  owner_.counters.queries[transport_kind::doh].fetch_add(1, std::memory_order_relaxed);
  driver_.answered(1);
  owner_.spend_answer_cost(1);
  ++answered_;
  const std::uint64_t close_after = owner_.options().close_after_queries;
  if (close_after != 0 && answered_ >= close_after) {
    goaway_ = true;
    goaway_last_stream_ = stream_id;
    nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_NO_ERROR, nullptr, 0);
  }
}

void server_doh_session::delay(std::int32_t stream_id, request& r, std::uint64_t due) {
  r.delayed = true;
  delayed_.push_back({stream_id, &r, due});
  owner_.counters.rate_limited_delayed.fetch_add(1, std::memory_order_relaxed);
  if (delayed_.size() == 1) driver_.wake_at(due);
}

void server_doh_session::send_delayed() {
  const std::uint64_t now = monotonic_ns();
  while (!delayed_.empty() && delayed_.front().due <= now) {
    const delayed_answer d = delayed_.front();
    delayed_.pop_front();
    d.r->delayed = false;
    // A GOAWAY sent meanwhile left this stream unprocessed; nghttp2 closes it.
    if (goaway_ && d.stream_id > goaway_last_stream_) continue;
    deliver(d.stream_id, *d.r);
  }
  if (!delayed_.empty()) driver_.wake_at(delayed_.front().due);
}

void server_doh_session::forget_delayed(const request* r) {
  std::erase_if(delayed_, [r](const delayed_answer& d) { return d.r == r; });
}

void server_doh_session::respond(std::int32_t stream_id, request& r, unsigned status) {
  std::array<char, 24> length_text{};
  const std::size_t length = status == 200 ? r.answer.size() : 0;
  const auto end =
      std::to_chars(length_text.data(), length_text.data() + length_text.size(), length).ptr;
  const std::string_view length_view(length_text.data(),
                                     static_cast<std::size_t>(end - length_text.data()));
  std::array<nghttp2_nv, 3> headers{};
  std::size_t count = 0;
  headers[count++] = response_header(":status", status_text(status));
  if (status == 200) {
    headers[count++] = response_header("content-type", doh_media_type);
  } else if (status == 405) {
    headers[count++] = response_header("allow", "GET, POST");
  }
  headers[count++] = response_header("content-length", length_view);
  int rv = 0;
  if (status == 200) {
    r.sent = 0;
    nghttp2_data_provider provider{};
    provider.source.ptr = &r;
    provider.read_callback = &doh_callbacks::read_answer;
    rv = nghttp2_submit_response(session_, stream_id, headers.data(), count, &provider);
  } else {
    rv = nghttp2_submit_response(session_, stream_id, headers.data(), count, nullptr);
  }
  if (rv != 0) {
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_INTERNAL_ERROR);
  }
}

}  // namespace dnstransport::detail
