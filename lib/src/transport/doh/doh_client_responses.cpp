// The DoH client's responses coming in: the stream's reads fed to nghttp2 (each answer
// timed by the read that brought it), and nghttp2's callbacks: :status, content-type and
// content-length read, the body gathered, the answer counted or its failure named (status,
// content type, length, empty body, RST_STREAM), GOAWAY and SETTINGS noted, the streams
// a GOAWAY or REFUSED_STREAM leaves unprocessed sent again, and a response on a stream that
// ended counted (duplicate, late).

#include "transport/doh/doh_client.hpp"

#include <algorithm>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "transport/doh/doh_message.hpp"
#include "util/clock.hpp"
#include "util/receive_time.hpp"

namespace dnstransport::detail {

namespace {

constexpr std::size_t max_dns_message = 65535;

// "application/dns-message", in any case, with or without parameters. Every answer passes
// here: the exact spelling is checked first, without a per-character case fold.
bool is_dns_message(std::string_view value) {
  if (value == doh_media_type) return true;
  const std::size_t end = value.find(';');
  std::string_view type = value.substr(0, end);
  while (!type.empty() && (type.back() == ' ' || type.back() == '\t')) type.remove_suffix(1);
  const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
  return std::equal(type.begin(), type.end(), doh_media_type.begin(), doh_media_type.end(),
                    [&lower](char a, char b) { return lower(a) == b; });
}

}  // namespace

bool doh_session::read() {
  if (session_ == nullptr) return true;
  const auto buffer = driver_.scratch();
  byte_stream& stream = driver_.channel().stream();
  for (unsigned reads = 1;; ++reads) {
    std::size_t n = 0;
    switch (stream.read(buffer, n)) {
      case stream_io::done:
        break;
      case stream_io::want_read:
        return send_output();
      case stream_io::want_write:
        driver_.wait_write();
        return send_output();
      case stream_io::closed:
        driver_.server_closed(false);
        return false;
      case stream_io::failed:
        driver_.server_closed(true);
        return false;
    }
    if (const std::uint64_t stamp = stream.newest_arrival(); stamp != 0) {
      const receive_clock clock = receive_clock::read();
      now_ = clock.monotonic_now;
      arrived_ = clock.received(stamp);
    } else {
      now_ = monotonic_ns();
      arrived_ = 0;
    }
    const ssize_t used = nghttp2_session_mem_recv(session_, buffer.data(), n);
    arrived_ = 0;  // finish() outside a read has no stamp
    if (used < 0) {
      session_failed("http2", static_cast<int>(used));
      return false;
    }
    if (!goaway_ && nghttp2_session_want_write(session_) != 0) {
      // A protocol error ends the session with a GOAWAY, queued now; once it is sent the
      // session wants nothing more.
      if (!send_output()) return false;
      if (nghttp2_session_want_read(session_) == 0 && nghttp2_session_want_write(session_) == 0) {
        session_failed("http2", NGHTTP2_ERR_PROTO);
        return false;
      }
    }
    if (n < buffer.size() && !stream.has_buffered_input()) return send_output();
    if (reads >= stream_client::max_reads_per_wakeup) {
      // A server that keeps sending: the rest after what is due (read ahead, it may be off
      // the socket already, where no readiness wait would see it).
      if (stream.has_buffered_input()) driver_.read_soon();
      return send_output();
    }
  }
}

void doh_session::finish(request& r, std::uint64_t now) {
  r.finished = true;
  if (r.status != 200) {
    driver_.fail_exchange(
        r.id, now, r.status == 0 ? std::string("no_status") : fmt::format("status_{}", r.status));
  } else if (r.content_length != -1 &&
             (r.too_large || r.content_length != static_cast<std::int64_t>(r.answer.size()))) {
    // A content-length that is not a number, or not the body's length (RFC 9113 §8.1.1).
    driver_.fail_exchange(r.id, now, "content_length");
  } else if (!r.content_type_ok) {
    driver_.fail_exchange(r.id, now, "content_type");
  } else if (r.too_large) {
    driver_.fail_exchange(r.id, now, "body_too_large");
  } else if (r.answer.empty()) {
    driver_.fail_exchange(r.id, now, "empty_body");
  } else {
    driver_.take_answer(r.id, r.answer, now, arrived_);
  }
}

void doh_session::release_request(request& r) noexcept {
  r.in_use = false;
  --open_streams_;
  free_.push_back(&r);
}

doh_session::request* doh_session::stream_request(std::int32_t stream_id) noexcept {
  if (last_ != nullptr && last_->in_use && last_->stream_id == stream_id) return last_;
  auto* r = static_cast<request*>(nghttp2_session_get_stream_user_data(session_, stream_id));
  if (r != nullptr) last_ = r;
  return r;
}

int doh_session::on_header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                           std::size_t name_size, const std::uint8_t* value, std::size_t value_size,
                           std::uint8_t, void* user_data) {
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  request* r = static_cast<doh_session*>(user_data)->stream_request(frame->hd.stream_id);
  if (r == nullptr) return 0;
  const std::string_view n(reinterpret_cast<const char*>(name), name_size);
  const std::string_view v(reinterpret_cast<const char*>(value), value_size);
  if (n == ":status") {
    // Three digits (RFC 9110 §15); anything else is no status, a broken response.
    unsigned status = 0;
    for (const char c : v) {
      status = c >= '0' && c <= '9' ? status * 10 + static_cast<unsigned>(c - '0') : 0;
      if (status == 0) break;
    }
    r->status = v.size() == 3 ? status : 0;
  } else if (n == "content-type") {
    r->content_type_ok = is_dns_message(v);
  } else if (n == "content-length") {
    std::size_t length = 0;
    const bool digits = !v.empty() && v.size() <= 9 && std::all_of(v.begin(), v.end(), [](char c) {
      return c >= '0' && c <= '9';
    });
    for (const char c : v) length = length * 10 + static_cast<std::size_t>(c - '0');
    r->content_length = digits ? static_cast<std::int64_t>(length) : -2;
  }
  return 0;
}

int doh_session::on_data_chunk(nghttp2_session*, std::uint8_t, std::int32_t stream_id,
                               const std::uint8_t* data, std::size_t size, void* user_data) {
  request* r = static_cast<doh_session*>(user_data)->stream_request(stream_id);
  if (r == nullptr || r->too_large) return 0;
  if (r->answer.size() + size > max_dns_message) {
    r->too_large = true;
    return 0;
  }
  r->answer.insert(r->answer.end(), data, data + size);
  return 0;
}

int doh_session::on_frame(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
  auto& self = *static_cast<doh_session*>(user_data);
  switch (frame->hd.type) {
    case NGHTTP2_SETTINGS:
      if ((frame->hd.flags & NGHTTP2_FLAG_ACK) == 0) self.settings_received_ = true;
      return 0;
    case NGHTTP2_GOAWAY:
      // A graceful shutdown sends two: the connection counts once.
      if (!self.goaway_ && self.driver_.counted()) ++self.driver_.connections().goaway;
      self.goaway_ = true;
      self.goaway_last_stream_ = frame->goaway.last_stream_id;
      return 0;
    case NGHTTP2_RST_STREAM:
      if (request* r = self.stream_request(frame->hd.stream_id)) {
        r->reset_by_server = true;
      }
      return 0;
    case NGHTTP2_HEADERS:
    case NGHTTP2_DATA:
      if ((frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0) {
        request* r = self.stream_request(frame->hd.stream_id);
        if (r == nullptr) return 0;
        if (!r->finished) {
          self.finish(*r, self.now_);
        } else {
          // A response on a stream we gave up (its query timed out, the RST_STREAM not sent
          // yet): late.
          self.driver_.count_stray(r->id, self.now_);
        }
      }
      return 0;
    default:
      return 0;
  }
}

int doh_session::on_stream_close(nghttp2_session*, std::int32_t stream_id, std::uint32_t error_code,
                                 void* user_data) {
  auto& self = *static_cast<doh_session*>(user_data);
  request* r = self.stream_request(stream_id);
  if (r == nullptr || !r->in_use) return 0;
  if (!r->finished) {
    const std::uint64_t now = self.now_ != 0 ? self.now_ : monotonic_ns();
    // Never processed by the server (RFC 9113, section 8.7), so safe to send again. nghttp2
    // closes the streams above a GOAWAY's last stream id with REFUSED_STREAM too.
    if (self.goaway_ && stream_id > self.goaway_last_stream_) {
      self.resend_later(*r, "goaway_unprocessed", now);
    } else if (error_code == NGHTTP2_REFUSED_STREAM) {
      self.resend_later(*r, "refused_stream", now);
    } else {
      self.driver_.fail_exchange(r->id, now, r->reset_by_server ? "stream_reset" : "stream_error");
    }
  } else {
    self.remember_closed(*r);
  }
  self.release_request(*r);
  return 0;
}

void doh_session::remember_closed(const request& r) noexcept {
  closed_[static_cast<std::size_t>(r.stream_id >> 1) % closed_.size()] = {r.stream_id, connection_,
                                                                          r.id};
}

void doh_session::count_stray(std::int32_t stream_id) noexcept {
  const closed_stream& c = closed_[static_cast<std::size_t>(stream_id >> 1) % closed_.size()];
  const std::uint64_t now = now_ != 0 ? now_ : monotonic_ns();
  if (c.stream_id == stream_id && c.connection == connection_) {
    driver_.count_stray(c.id, now);
  } else {
    // Closed too long ago to say whose it was, or refused (its query went again).
    driver_.count_unexpected(now);
  }
}

int doh_session::on_begin_frame(nghttp2_session* session, const nghttp2_frame_hd* header,
                                void* user_data) {
  // nghttp2 ignores a HEADERS frame on a stream that closed, with no other callback: a
  // second response (or one after we gave the stream up) is seen only here.
  if (header->type != NGHTTP2_HEADERS || (header->stream_id & 1) == 0) return 0;
  auto& self = *static_cast<doh_session*>(user_data);
  if (static_cast<std::uint32_t>(header->stream_id) >=
          nghttp2_session_get_next_stream_id(session) ||
      nghttp2_session_get_stream_user_data(session, header->stream_id) != nullptr) {
    return 0;  // on an open stream, or on one never opened (a protocol error)
  }
  self.count_stray(header->stream_id);
  return 0;
}

}  // namespace dnstransport::detail
