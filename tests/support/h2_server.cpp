#include "h2_server.hpp"

#include <algorithm>
#include <deque>
#include <map>
#include <new>
#include <string>
#include <string_view>

#include "misbehaviour.hpp"
#include "transport/doh/doh_message.hpp"

namespace dnstransport::hostile {

struct h2_server::impl {
  struct incoming {
    h2_request request;
    bytes body;
  };
  struct outgoing {
    bytes body;
    std::size_t sent = 0;
  };

  nghttp2_session* session = nullptr;
  std::map<std::int32_t, incoming> streams;
  std::map<std::int32_t, outgoing> bodies;
  std::deque<h2_request> complete;
  std::size_t open = 0;
  std::size_t most_open = 0;
  std::uint64_t requests = 0;
  std::uint64_t resets_received = 0;
  bool broken = false;

  static impl& of(void* user_data) { return *static_cast<impl*>(user_data); }

  static int on_begin_headers(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    impl& self = of(user_data);
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    self.streams[frame->hd.stream_id].request.stream_id = frame->hd.stream_id;
    ++self.open;
    self.most_open = std::max(self.most_open, self.open);
    return 0;
  }

  static int on_header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                       std::size_t name_size, const std::uint8_t* value, std::size_t value_size,
                       std::uint8_t, void* user_data) {
    impl& self = of(user_data);
    const auto it = self.streams.find(frame->hd.stream_id);
    if (it == self.streams.end()) return 0;
    const std::string_view n(reinterpret_cast<const char*>(name), name_size);
    const std::string v(reinterpret_cast<const char*>(value), value_size);
    if (n == ":method") it->second.request.method = v;
    if (n == ":path") it->second.request.path = v;
    if (n == "content-type") it->second.request.content_type = v;
    return 0;
  }

  static int on_data_chunk(nghttp2_session*, std::uint8_t, std::int32_t stream_id,
                           const std::uint8_t* data, std::size_t size, void* user_data) {
    impl& self = of(user_data);
    const auto it = self.streams.find(stream_id);
    if (it != self.streams.end()) it->second.body.insert(it->second.body.end(), data, data + size);
    return 0;
  }

  static int on_frame(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    impl& self = of(user_data);
    if (frame->hd.type == NGHTTP2_RST_STREAM) ++self.resets_received;
    if ((frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) ||
        (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) == 0) {
      return 0;
    }
    const auto it = self.streams.find(frame->hd.stream_id);
    if (it == self.streams.end()) return 0;
    h2_request r = std::move(it->second.request);
    r.query = std::move(it->second.body);
    const std::size_t at = r.path.find("dns=");
    if (r.method == "GET" && at != std::string::npos) {
      const std::string_view parameter =
          std::string_view(r.path).substr(at + 4, r.path.find('&', at) - (at + 4));
      r.query = detail::base64url_decode(parameter).value_or(bytes{});
    }
    r.number = self.requests++;
    self.complete.push_back(std::move(r));
    return 0;
  }

  static int on_stream_close(nghttp2_session*, std::int32_t stream_id, std::uint32_t,
                             void* user_data) {
    impl& self = of(user_data);
    self.bodies.erase(stream_id);
    if (self.streams.erase(stream_id) > 0) --self.open;  // open since its request HEADERS
    return 0;
  }

  static ssize_t read_body(nghttp2_session*, std::int32_t stream_id, std::uint8_t* buffer,
                           std::size_t length, std::uint32_t* flags, nghttp2_data_source*,
                           void* user_data) {
    impl& self = of(user_data);
    outgoing& o = self.bodies[stream_id];
    const std::size_t n = std::min(length, o.body.size() - o.sent);
    std::copy_n(o.body.data() + o.sent, n, buffer);
    o.sent += n;
    if (o.sent == o.body.size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
    return static_cast<ssize_t>(n);
  }
};

h2_server::h2_server(h2_options options) : impl_(std::make_unique<impl>()) {
  nghttp2_session_callbacks* callbacks = nullptr;
  if (nghttp2_session_callbacks_new(&callbacks) != 0) throw std::bad_alloc();
  nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, &impl::on_begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(callbacks, &impl::on_header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, &impl::on_data_chunk);
  nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, &impl::on_frame);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, &impl::on_stream_close);
  const int created = nghttp2_session_server_new(&impl_->session, callbacks, impl_.get());
  nghttp2_session_callbacks_del(callbacks);
  if (created != 0) throw std::bad_alloc();
  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, options.max_concurrent_streams}};
  nghttp2_submit_settings(impl_->session, NGHTTP2_FLAG_NONE, settings, std::size(settings));
}

h2_server::~h2_server() {
  nghttp2_session_del(impl_->session);
}

bool h2_server::receive(std::span<const std::uint8_t> data) {
  if (impl_->broken) return false;
  if (nghttp2_session_mem_recv(impl_->session, data.data(), data.size()) < 0) {
    impl_->broken = true;
    return false;
  }
  return true;
}

std::optional<h2_request> h2_server::next_request() {
  if (impl_->complete.empty()) return std::nullopt;
  h2_request r = std::move(impl_->complete.front());
  impl_->complete.pop_front();
  return r;
}

void h2_server::respond(std::int32_t stream_id, unsigned status, std::string_view content_type,
                        bytes body, std::optional<std::size_t> content_length) {
  std::vector<std::pair<std::string, std::string>> headers{
      {":status", std::to_string(status)},
      {"content-length", std::to_string(content_length.value_or(body.size()))}};
  if (!content_type.empty()) headers.emplace_back("content-type", content_type);
  respond_with(stream_id, headers, std::move(body));
}

void h2_server::respond_with(std::int32_t stream_id,
                             const std::vector<std::pair<std::string, std::string>>& fields,
                             bytes body) {
  std::vector<nghttp2_nv> headers;
  for (const auto& [name, value] : fields) {
    headers.push_back({reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data())),
                       reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data())),
                       name.size(), value.size(), NGHTTP2_NV_FLAG_NONE});
  }
  const bool has_body = !body.empty();
  impl_->bodies[stream_id] = {std::move(body), 0};
  nghttp2_data_provider provider{};
  provider.read_callback = &impl::read_body;
  nghttp2_submit_response(impl_->session, stream_id, headers.data(), headers.size(),
                          has_body ? &provider : nullptr);
}

void h2_server::answer(const h2_request& r) {
  respond(r.stream_id, 200, detail::doh_media_type, answer_to(r.query));
}

namespace {

// A frame header (RFC 9113, section 4.1) and its payload.
void append_frame(bytes& out, std::uint8_t type, std::uint8_t flags, std::int32_t stream_id,
                  const bytes& payload) {
  const std::size_t n = payload.size();
  for (const int shift : {16, 8, 0}) out.push_back(static_cast<std::uint8_t>(n >> shift));
  out.push_back(type);
  out.push_back(flags);
  for (const int shift : {24, 16, 8, 0}) {
    out.push_back(static_cast<std::uint8_t>(static_cast<std::uint32_t>(stream_id) >> shift));
  }
  out.insert(out.end(), payload.begin(), payload.end());
}

// HPACK (RFC 7541): a literal field without indexing whose name is static entry `index`
// (at least 15), with a value under 127 octets and no Huffman coding.
void append_literal(bytes& out, std::uint8_t index, std::string_view value) {
  out.push_back(0x0f);
  out.push_back(static_cast<std::uint8_t>(index - 15));
  out.push_back(static_cast<std::uint8_t>(value.size()));
  out.insert(out.end(), value.begin(), value.end());
}

}  // namespace

bytes h2_server::raw_answer_frames(const h2_request& r) {
  const bytes body = answer_to(r.query);
  bytes headers{0x88};                                       // :status 200 (static entry 8)
  append_literal(headers, 31, detail::doh_media_type);       // content-type
  append_literal(headers, 28, std::to_string(body.size()));  // content-length
  bytes out;
  append_frame(out, NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, r.stream_id, headers);
  append_frame(out, NGHTTP2_DATA, NGHTTP2_FLAG_END_STREAM, r.stream_id, body);
  return out;
}

bytes h2_server::raw_broken_frame() {
  bytes out;
  append_frame(out, NGHTTP2_DATA, NGHTTP2_FLAG_NONE, 0, {});
  return out;
}

void h2_server::reset(std::int32_t stream_id, std::uint32_t error_code) {
  nghttp2_submit_rst_stream(impl_->session, NGHTTP2_FLAG_NONE, stream_id, error_code);
}

void h2_server::goaway(std::int32_t last_stream_id, std::uint32_t error_code) {
  nghttp2_submit_goaway(impl_->session, NGHTTP2_FLAG_NONE, last_stream_id, error_code, nullptr, 0);
}

bool h2_server::send_to(const sink& to) {
  for (;;) {
    const std::uint8_t* data = nullptr;
    const ssize_t n = nghttp2_session_mem_send(impl_->session, &data);
    if (n < 0) return false;
    if (n == 0) return true;
    if (!to({data, static_cast<std::size_t>(n)})) return false;
  }
}

bool h2_server::broken() const noexcept {
  return impl_->broken;
}

std::size_t h2_server::most_open_streams() const noexcept {
  return impl_->most_open;
}

std::uint64_t h2_server::resets_received() const noexcept {
  return impl_->resets_received;
}

}  // namespace dnstransport::hostile
