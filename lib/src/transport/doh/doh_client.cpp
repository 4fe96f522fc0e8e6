// The DoH client: nghttp2's client session on the stream client's established stream. The
// class is in doh_client.hpp.

#include "transport/doh/doh_client.hpp"

#include <sys/uio.h>

#include <algorithm>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <boost/asio/socket_base.hpp>

#include "transport/doh/doh_message.hpp"
#include "util/clock.hpp"
#include "util/receive_time.hpp"

namespace dnstransport::detail {

namespace {

// Streams in flight before the server's SETTINGS say how many it allows (RFC 9113 §6.5.2
// recommends servers allow at least 100).
constexpr std::uint32_t streams_before_settings = 100;

// The connection's receive window: answers never wait for a WINDOW_UPDATE.
constexpr std::int32_t doh_connection_window = 1 << 24;

constexpr std::size_t max_dns_message = 65535;

// The request's names and values outlive its submission (the request keeps them).
nghttp2_nv request_header(std::string_view name, std::string_view value) noexcept {
  return header_field(name, value, NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE);
}

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

doh_client::doh_client(worker& owner, unsigned index, std::uint64_t quota,
                       const doh_transport& transport)
    : stream_client(owner, index, quota, transport.stream()),
      doh_(transport),
      requests_(owner.plan().outstanding) {
  free_.reserve(requests_.size());
  for (auto it = requests_.rbegin(); it != requests_.rend(); ++it) free_.push_back(&*it);
  const std::string& path = doh_.settings().path;
  for (request& r : requests_) {
    r.answer.reserve(512);
    if (doh_.settings().use_get) r.path.reserve(path.size() + 6 + 4 * 512 / 3 + 4);
  }
}

doh_client::~doh_client() {
  if (session_ != nullptr) nghttp2_session_del(session_);
}

void doh_client::established(std::uint64_t now) {
  const tls_connection* tls = channel_.stream().tls();
  const std::string alpn = tls != nullptr ? tls->alpn() : std::string();
  if (alpn != "h2") {
    fail_connection("doh", "doh_no_h2",
                    alpn.empty() ? std::string("the server did not select h2 in ALPN (none)")
                                 : fmt::format("the server did not select h2 in ALPN ({})", alpn));
    return;
  }
  // After 0-RTT the session exists already.
  if (session_ == nullptr && !start_session()) return;
  failed_in_a_row_ = 0;
  fill(now);
  if (state_ == conn_state::established) arm_read();
}

bool doh_client::start_session() {
  if (nghttp2_session_client_new2(&session_, doh_.callbacks(), this, doh_.options()) != 0) {
    session_ = nullptr;
    fail_connection("doh", "http2_error", "cannot create an HTTP/2 session (out of memory)");
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

bool doh_client::fill_early(std::uint64_t now, std::size_t room) {
  early_room_ = room;
  // The preface, SETTINGS and WINDOW_UPDATE take under 100 octets.
  if (room < 128 + request_bound() || send_allowance(now) == 0) return true;  // nothing goes
  if (!start_session()) return false;
  const std::uint64_t generation = generation_;
  fill(now);
  return generation == generation_;
}

bool doh_client::resend_in_flight(std::uint64_t now) {
  // The server never saw the early HTTP/2 session: a new one, with every query in flight
  // on a stream of its own again.
  std::vector<slot_table::slot*> in_flight;
  for (slot_table::slot* s = slots_.oldest(); s != nullptr; s = slots_.next_of(*s)) {
    in_flight.push_back(s);
  }
  connection_ended();
  if (!start_session()) return false;
  out_.clear();
  for (slot_table::slot* s : in_flight) {
    if (!submit_slot(*s) || !take_output()) return false;
    if (s->counted) ++early_counts().queries_resent;
  }
  now_ = now;
  return write_output();
}

std::uint32_t doh_client::stream_room(std::uint64_t now) noexcept {
  if (goaway_ || session_ == nullptr) return 0;
  std::uint64_t allowance = std::min<std::uint64_t>(send_allowance(now), free_.size());
  const std::uint64_t limit = settings().queries_per_connection;
  if (limit != 0) allowance = std::min(allowance, limit - std::min(limit, tally_.sent));
  const std::uint32_t server_limit =
      settings_received_
          ? nghttp2_session_get_remote_settings(session_, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)
          : streams_before_settings;
  const std::uint32_t room = server_limit > open_streams_ ? server_limit - open_streams_ : 0;
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(allowance, room));
}

void doh_client::fill(std::uint64_t now) {
  const bool early = state_ == conn_state::handshaking && early_;
  if ((state_ != conn_state::established && !early) || session_ == nullptr ||
      channel_.output_pending()) {
    return;
  }
  // Each request's frames are taken from nghttp2 as soon as it is submitted, so that a
  // stream's HEADERS and DATA travel together: servers with one request buffer per
  // connection (Knot Resolver 5) refuse a stream whose HEADERS arrive between another's
  // HEADERS and DATA. They still leave in one write.
  out_.clear();
  for (std::uint32_t room = stream_room(now); room > 0; --room) {
    // Early data stops short of the ticket's limit: every request takes at most
    // request_bound() octets more.
    if (early && out_.size() + request_bound() > early_room_) break;
    if (!submit(now) || !take_output()) break;
  }
  write_output();
}

std::size_t doh_client::request_bound() const noexcept {
  // HEADERS (pseudo-headers, path and content headers, HPACK at worst literal) and DATA
  // (POST) or the base64url query in the path (GET): never twice the query plus 256.
  return 256 + doh_.settings().path.size() + 2 * plan().queries->max_size();
}

bool doh_client::take_output() {
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

bool doh_client::write_output() {
  if (session_ == nullptr) return false;
  if (!take_output()) return false;
  if (out_.empty()) return true;
  const iovec piece{out_.data(), out_.size()};
  const bool alive = after_write(channel_.send({&piece, 1}));
  out_.clear();
  return alive;
}

bool doh_client::submit(std::uint64_t now) {
  slot_table::slot& s = next_query(now);
  if (early_ && s.counted && state_ == conn_state::handshaking)
    ++early_counts().queries_in_early_data;
  if (submit_slot(s)) return true;
  // Stream ids used up (2^30 requests): the connection is replaced like after a GOAWAY.
  return_slot(s);
  --tally_.sent;
  goaway_ = true;
  return false;
}

bool doh_client::submit_slot(slot_table::slot& s) {
  request& r = *free_.back();
  const auto query = (*plan().queries)[s.query_index];
  r.query.assign(query.begin(), query.end());
  r.query[0] = r.query[1] = 0;  // RFC 8484 §4.1: DNS id 0, answers are matched by stream
  r.id = s.id;
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
    body.read_callback = &doh_client::read_body;
    stream_id = nghttp2_submit_request(session_, nullptr, headers, std::size(headers), &body, &r);
  }
  if (stream_id < 0) return false;
  r.in_use = true;
  r.stream_id = stream_id;
  free_.pop_back();
  ++open_streams_;
  return true;
}

ssize_t doh_client::read_body(nghttp2_session*, std::int32_t, std::uint8_t* buffer,
                              std::size_t length, std::uint32_t* data_flags,
                              nghttp2_data_source* source, void*) {
  auto& r = *static_cast<request*>(source->ptr);
  const std::size_t n = std::min(length, r.query.size() - r.query_sent);
  std::copy_n(r.query.data() + r.query_sent, n, buffer);
  r.query_sent += n;
  if (r.query_sent == r.query.size()) *data_flags |= NGHTTP2_DATA_FLAG_EOF;
  return static_cast<ssize_t>(n);
}

bool doh_client::send_output() {
  if (session_ == nullptr) return true;
  if (channel_.output_pending()) {
    if (!after_write(channel_.flush())) return false;
    if (channel_.output_pending()) return true;  // the stream asked to wait
  }
  // Everything nghttp2 has to send, in one write (one TLS record for many frames).
  out_.clear();
  return write_output();
}

bool doh_client::flush() {
  return send_output();
}

bool doh_client::read_available() {
  if (session_ == nullptr) return true;
  const auto buffer = owner_.scratch(0);
  byte_stream& stream = channel_.stream();
  for (unsigned reads = 1;; ++reads) {
    std::size_t n = 0;
    switch (stream.read(buffer, n)) {
      case stream_io::done:
        break;
      case stream_io::want_read:
        return send_output();
      case stream_io::want_write:
        wait(boost::asio::socket_base::wait_write);
        return send_output();
      case stream_io::closed:
        server_closed(false);
        return false;
      case stream_io::failed:
        server_closed(true);
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
    if (reads >= max_reads_per_wakeup) {
      // A server that keeps sending: the rest after what is due (read ahead, it may be off
      // the socket already, where no readiness wait would see it).
      if (stream.has_buffered_input()) read_soon();
      return send_output();
    }
  }
}

bool doh_client::connection_done() const noexcept {
  return stream_client::connection_done() || (goaway_ && slots_.empty());
}

void doh_client::tick(std::uint64_t now) {
  stream_client::tick(now);
  if (session_ == nullptr || state_ != conn_state::established) return;
  now_ = now;
  bool cancelled = false;
  for (request& r : requests_) {
    if (!r.in_use || r.finished || slots_.find(r.id) != nullptr) continue;
    // The query timed out: the stream is no use any more.
    r.finished = true;
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, r.stream_id, NGHTTP2_CANCEL);
    cancelled = true;
  }
  if (cancelled) send_output();
}

void doh_client::connection_ended() noexcept {
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
}

void doh_client::session_failed(const char* what, int error) {
  if (tally_.counted) {
    connections().record_failure(
        "http2_error", last_error_.empty()
                           ? fmt::format("{}: {} ({})", what, nghttp2_strerror(error), error)
                           : fmt::format("{}: {}", what, last_error_));
  }
  server_closed(true);
}

int doh_client::on_error(nghttp2_session*, int, const char* message, std::size_t size,
                         void* user_data) {
  auto& self = *static_cast<doh_client*>(user_data);
  if (self.last_error_.empty()) self.last_error_.assign(message, size);
  return 0;
}

void doh_client::finish(request& r, std::uint64_t now) {
  r.finished = true;
  if (r.status != 200) {
    fail_exchange(r.id, now,
                  r.status == 0 ? std::string("no_status") : fmt::format("status_{}", r.status));
  } else if (r.content_length != -1 &&
             (r.too_large || r.content_length != static_cast<std::int64_t>(r.answer.size()))) {
    // A content-length that is not a number, or not the body's length (RFC 9113 §8.1.1).
    fail_exchange(r.id, now, "content_length");
  } else if (!r.content_type_ok) {
    fail_exchange(r.id, now, "content_type");
  } else if (r.too_large) {
    fail_exchange(r.id, now, "body_too_large");
  } else if (r.answer.empty()) {
    fail_exchange(r.id, now, "empty_body");
  } else {
    count_answer(on_answer(r.id, r.answer, now, 0, arrived_), now, arrived_ != 0 ? arrived_ : now);
  }
}

void doh_client::release_request(request& r) noexcept {
  r.in_use = false;
  --open_streams_;
  free_.push_back(&r);
}

doh_client::request* doh_client::stream_request(std::int32_t stream_id) noexcept {
  if (last_ != nullptr && last_->in_use && last_->stream_id == stream_id) return last_;
  auto* r = static_cast<request*>(nghttp2_session_get_stream_user_data(session_, stream_id));
  if (r != nullptr) last_ = r;
  return r;
}

int doh_client::on_header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                          std::size_t name_size, const std::uint8_t* value, std::size_t value_size,
                          std::uint8_t, void* user_data) {
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  request* r = static_cast<doh_client*>(user_data)->stream_request(frame->hd.stream_id);
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

int doh_client::on_data_chunk(nghttp2_session*, std::uint8_t, std::int32_t stream_id,
                              const std::uint8_t* data, std::size_t size, void* user_data) {
  request* r = static_cast<doh_client*>(user_data)->stream_request(stream_id);
  if (r == nullptr || r->too_large) return 0;
  if (r->answer.size() + size > max_dns_message) {
    r->too_large = true;
    return 0;
  }
  r->answer.insert(r->answer.end(), data, data + size);
  return 0;
}

int doh_client::on_frame(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
  auto& self = *static_cast<doh_client*>(user_data);
  switch (frame->hd.type) {
    case NGHTTP2_SETTINGS:
      if ((frame->hd.flags & NGHTTP2_FLAG_ACK) == 0) self.settings_received_ = true;
      return 0;
    case NGHTTP2_GOAWAY:
      // A graceful shutdown sends two: the connection counts once.
      if (!self.goaway_ && self.tally_.counted) ++self.connections().goaway;
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
        if (r != nullptr && !r->finished) self.finish(*r, self.now_);
      }
      return 0;
    default:
      return 0;
  }
}

int doh_client::on_stream_close(nghttp2_session*, std::int32_t stream_id, std::uint32_t error_code,
                                void* user_data) {
  auto& self = *static_cast<doh_client*>(user_data);
  request* r = self.stream_request(stream_id);
  if (r == nullptr || !r->in_use) return 0;
  if (!r->finished) {
    const std::uint64_t now = self.now_ != 0 ? self.now_ : monotonic_ns();
    if (error_code == NGHTTP2_REFUSED_STREAM ||
        (self.goaway_ && stream_id > self.goaway_last_stream_)) {
      self.lose_on_close(r->id);  // never processed by the server
    } else {
      self.fail_exchange(r->id, now, r->reset_by_server ? "stream_reset" : "stream_error");
    }
  }
  self.release_request(*r);
  return 0;
}

}  // namespace dnstransport::detail
