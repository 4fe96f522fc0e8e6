// The DoH client's requests going out: how many streams may open now (send allowance,
// queries per connection, the server's SETTINGS_MAX_CONCURRENT_STREAMS, GOAWAY), one request
// stream per query, POST (the query as the body) or GET (base64url in ?dns=), with DNS id 0,
// and nghttp2's output gathered into one write.

#include "transport/doh/doh_client.hpp"

#include <sys/uio.h>

#include <algorithm>
#include <string>
#include <string_view>

#include "transport/doh/doh_message.hpp"

namespace dnstransport::detail {

namespace {

// Streams in flight before the server's SETTINGS say how many it allows (RFC 9113 §6.5.2
// recommends servers allow at least 100).
constexpr std::uint32_t streams_before_settings = 100;

// The request's names and values outlive its submission (the request keeps them).
nghttp2_nv request_header(std::string_view name, std::string_view value) noexcept {
  return header_field(name, value, NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE);
}

}  // namespace

std::uint32_t doh_session::stream_room() const noexcept {
  if (goaway_ || session_ == nullptr) return 0;
  const std::uint32_t server_limit =
      settings_received_
          ? nghttp2_session_get_remote_settings(session_, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)
          : streams_before_settings;
  const std::uint32_t room = server_limit > open_streams_ ? server_limit - open_streams_ : 0;
  return static_cast<std::uint32_t>(std::min<std::size_t>(free_.size(), room));
}

bool doh_session::fill(std::uint64_t now) {
  const bool early = driver_.in_early_data();
  if ((!driver_.established() && !early) || session_ == nullptr ||
      driver_.channel().output_pending()) {
    return true;
  }
  // Each request's frames are taken from nghttp2 as soon as it is submitted, so that a
  // stream's HEADERS and DATA travel together: servers with one request buffer per
  // connection (Knot Resolver 5) refuse a stream whose HEADERS arrive between another's
  // HEADERS and DATA. They still leave in one write.
  out_.clear();
  // Queries the server did not process go first, whatever the send allowance and the
  // queries per connection (they were counted when they first went).
  std::uint32_t room = stream_room();
  if (submit_waiting(room)) {
    for (room = static_cast<std::uint32_t>(
             std::min<std::uint64_t>(room, driver_.connection_allowance(now)));
         room > 0; --room) {
      // Early data stops short of the ticket's limit: every request takes at most
      // request_bound() octets more.
      if (early && out_.size() + request_bound() > early_room_) break;
      if (!submit(now) || !take_output()) break;
    }
  }
  return write_output();
}

bool doh_session::submit_waiting(std::uint32_t& room) {
  const bool early = driver_.in_early_data();
  while (!waiting_.empty()) {
    if (room == 0 || (early && out_.size() + request_bound() > early_room_)) return false;
    const waiting_query w = waiting_.front();
    slot_table::slot* s = driver_.slots().find(w.id);
    if (s == nullptr) {  // timed out while it waited
      waiting_.pop_front();
      continue;
    }
    if (submit_slot(*s, w.resends) == nullptr) {
      goaway_ = true;  // stream ids used up: it goes on the next connection
      return false;
    }
    waiting_.pop_front();
    s->waiting_resend = false;
    if (w.resends == 1 && s->counted) ++driver_.counts().unprocessed_retried;
    --room;
    if (!take_output()) return false;
  }
  return true;
}

std::size_t doh_session::request_bound() const noexcept {
  // HEADERS (pseudo-headers, path and content headers, HPACK at worst literal) and DATA
  // (POST) or the base64url query in the path (GET): never twice the query plus 256.
  return 256 + doh_.settings().path.size() + 2 * driver_.plan().max_query_size();
}

bool doh_session::submit(std::uint64_t now) {
  slot_table::slot& s = driver_.next_query(now);
  if (submit_slot(s) != nullptr) return true;
  // Stream ids used up (2^30 requests): the connection is replaced like after a GOAWAY.
  driver_.unsend(s);
  goaway_ = true;
  return false;
}

doh_session::request* doh_session::submit_slot(slot_table::slot& s, std::uint8_t resends) {
  request& r = *free_.back();
  const auto query = driver_.plan().query(s.query_index);
  r.query.assign(query.begin(), query.end());
  r.query[0] = r.query[1] = 0;  // RFC 8484 §4.1: DNS id 0, answers are matched by stream
  if (driver_.plan().client_subnet.on()) driver_.write_client_subnet(s, r.query);
  r.id = s.id;
  r.resends = resends;
  r.finished = r.reset_by_server = r.too_large = r.content_type_ok = false;
  r.status = 0;
  r.content_length = -1;
  r.query_sent = 0;
  r.answer.clear();

  const doh_settings& d = doh_.settings();
  std::int32_t stream_id = 0;
  if (d.use_get) {
    r.path.assign(d.path);
    r.path += d.path.find('?') == std::string::npos ? "?dns=" : "&dns=";
    base64url_append(r.query, r.path);
    const nghttp2_nv headers[] = {
        request_header(":method", "GET"),          request_header(":scheme", "https"),
        request_header(":authority", d.authority), request_header(":path", r.path),
        request_header("accept", doh_media_type),
    };
    stream_id = nghttp2_submit_request(session_, nullptr, headers, std::size(headers), nullptr, &r);
  } else {
    r.length_text = std::to_string(r.query.size());
    const nghttp2_nv headers[] = {
        request_header(":method", "POST"),
        request_header(":scheme", "https"),
        request_header(":authority", d.authority),
        request_header(":path", d.path),
        request_header("accept", doh_media_type),
        request_header("content-type", doh_media_type),
        request_header("content-length", r.length_text),
    };
    nghttp2_data_provider body{};
    body.source.ptr = &r;
    body.read_callback = &doh_session::read_body;
    stream_id = nghttp2_submit_request(session_, nullptr, headers, std::size(headers), &body, &r);
  }
  if (stream_id < 0) return nullptr;
  r.in_use = true;
  r.stream_id = stream_id;
  free_.pop_back();
  ++open_streams_;
  return &r;
}

ssize_t doh_session::read_body(nghttp2_session*, std::int32_t, std::uint8_t* buffer,
                               std::size_t length, std::uint32_t* data_flags,
                               nghttp2_data_source* source, void*) {
  auto& r = *static_cast<request*>(source->ptr);
  const std::size_t n = std::min(length, r.query.size() - r.query_sent);
  std::copy_n(r.query.data() + r.query_sent, n, buffer);
  r.query_sent += n;
  if (r.query_sent == r.query.size()) *data_flags |= NGHTTP2_DATA_FLAG_EOF;
  return static_cast<ssize_t>(n);
}

bool doh_session::take_output() {
  for (;;) {
    const std::uint8_t* data = nullptr;
    const ssize_t n = nghttp2_session_mem_send(session_, &data);
    if (n < 0) {
      session_failed("http2 send", static_cast<int>(n));
      return false;
    }
    if (n == 0) return true;
    out_.insert(out_.end(), data, data + n);
  }
}

bool doh_session::write_output() {
  if (session_ == nullptr) return false;
  if (!take_output()) return false;
  if (out_.empty()) return true;
  const iovec piece{out_.data(), out_.size()};
  const bool alive = driver_.after_write(driver_.channel().send({&piece, 1}));
  out_.clear();
  return alive;
}

bool doh_session::send_output() {
  if (session_ == nullptr) return true;
  message_channel& channel = driver_.channel();
  if (channel.output_pending()) {
    if (!driver_.after_write(channel.flush())) return false;
    if (channel.output_pending()) return true;  // the stream asked to wait
  }
  // Everything nghttp2 has to send, in one write (one TLS record for many frames).
  out_.clear();
  return write_output();
}

}  // namespace dnstransport::detail
