// The stream side of the responder's DoH session: what the stream reads fed into nghttp2,
// what nghttp2 writes handed to the stream, and the end of the HTTP/2 session (GOAWAY).
#include <nghttp2/nghttp2.h>

#include "transport/doh/server_doh_session.hpp"
#include "util/clock.hpp"

namespace dnstransport::detail {

namespace {

// TLS records carry at most 16 KiB; one read takes one record.
constexpr std::size_t read_size = 16384;
// How much HTTP/2 output is gathered from nghttp2 before it is handed to the stream.
constexpr std::size_t write_batch = 65536;

}  // namespace

server_doh_session::server_doh_session(server_stream_connection& driver,
                                       std::unique_ptr<byte_stream> stream)
    : driver_(driver), owner_(driver.owner()), stream_(std::move(stream)), in_(read_size) {}

server_doh_session::~server_doh_session() {
  if (session_ != nullptr) nghttp2_session_del(session_);
}

std::unique_ptr<server_session> make_server_doh_session(server_stream_connection& driver,
                                                        std::unique_ptr<byte_stream> stream,
                                                        transport_kind /*transport*/) {
  return std::make_unique<server_doh_session>(driver, std::move(stream));
}

stream_io server_doh_session::read() {
  for (;;) {
    std::size_t n = 0;
    if (const stream_io io = stream_->read(in_, n); io != stream_io::done) return io;
    driver_.touch();
    if (nghttp2_session_mem_recv(session_, in_.data(), n) < 0) {
      // Not HTTP/2 (no client preface) or a fatal session error: send what nghttp2 queued.
      return stream_io::closed;
    }
    if (n < in_.size() && !stream_->has_buffered_input()) return stream_io::want_read;
  }
}

stream_io server_doh_session::flush() {
  for (;;) {
    if (written_ == out_.size()) {
      out_.clear();
      written_ = 0;
      while (session_ != nullptr && out_.size() < write_batch) {
        const std::uint8_t* data = nullptr;
        const ssize_t n = nghttp2_session_mem_send(session_, &data);
        if (n < 0) return stream_io::failed;
        if (n == 0) break;
        out_.insert(out_.end(), data, data + n);
      }
      if (out_.empty()) return stream_io::done;
    }
    const iovec piece{out_.data() + written_, out_.size() - written_};
    std::size_t n = 0;
    const stream_io io = stream_->write({&piece, 1}, n);
    if (io != stream_io::done) return io;
    written_ += n;
  }
}

bool server_doh_session::finished() const noexcept {
  return nghttp2_session_want_read(session_) == 0 && nghttp2_session_want_write(session_) == 0;
}

bool server_doh_session::end_for_idle() {
  if (session_ == nullptr) return false;
  if (!goaway_) {
    goaway_ = true;
    goaway_last_stream_ = nghttp2_session_get_last_proc_stream_id(session_);
    nghttp2_session_terminate_session(session_, NGHTTP2_NO_ERROR);
  }
  return true;
}

}  // namespace dnstransport::detail
