#include "server/server_connection.hpp"

#include <cstring>

#include "server/responder.hpp"
#include "util/clock.hpp"

namespace dnstransport::detail {

server_connection::server_connection(server_thread& owner, boost::asio::ip::tcp::socket socket,
                                     stream_acceptor& streams, std::atomic<std::uint64_t>& queries)
    : owner_(owner), socket_(std::move(socket)), queries_(queries) {
  boost::system::error_code ec;
  socket_.non_blocking(true, ec);
  socket_.set_option(boost::asio::ip::tcp::no_delay(true), ec);
  channel_.open(streams.open(socket_.native_handle()));
  last_activity_ns_ = monotonic_ns();
}

void server_connection::start() {
  step();
}

void server_connection::wait(boost::asio::socket_base::wait_type type) {
  if (waiting_ || closed_) return;
  waiting_ = true;
  socket_.async_wait(type, [self = shared_from_this()](const boost::system::error_code& ec) {
    self->waiting_ = false;
    if (ec || self->closed_) return;
    self->step();
  });
}

void server_connection::step() {
  if (closed_) return;
  if (handshaking_) {
    do_handshake();
    if (handshaking_ || closed_) return;
  }
  // Answers not yet written go first: no more is read until the stream took them, which
  // holds back a client that sends faster than it reads.
  if (!flush() || channel_.output_pending()) return;
  if (closing_) {
    finish_close();
    return;
  }
  if (!read_queries()) return;
  if (!flush()) return;
  if (closing_ && !channel_.output_pending()) {
    finish_close();
    return;
  }
  if (!channel_.output_pending()) wait(boost::asio::socket_base::wait_read);
}

void server_connection::do_handshake() {
  byte_stream& stream = channel_.stream();
  switch (stream.handshake()) {
    case stream_io::done:
      handshaking_ = false;
      if (stream.resumed()) owner_.counters.tls_resumed.fetch_add(1, std::memory_order_relaxed);
      return;
    case stream_io::want_read:
      wait(boost::asio::socket_base::wait_read);
      return;
    case stream_io::want_write:
      wait(boost::asio::socket_base::wait_write);
      return;
    case stream_io::closed:
    case stream_io::failed:
      owner_.counters.tls_handshakes_failed.fetch_add(1, std::memory_order_relaxed);
      close();
      return;
  }
}

bool server_connection::read_queries() {
  switch (channel_.read([this] {
    last_activity_ns_ = monotonic_ns();
    return answer_buffered();
  })) {
    case message_channel::read_end::drained:
    case message_channel::read_end::stopped:
      return true;
    case message_channel::read_end::want_write:
      wait(boost::asio::socket_base::wait_write);
      return true;
    case message_channel::read_end::closed:
      closing_ = true;
      return true;
    case message_channel::read_end::failed:
      // A TLS session that failed may still have answers to flush; a reset socket not.
      closing_ = true;
      return true;
  }
  return true;
}

// Answers the complete queries read so far; false to stop reading (closing).
bool server_connection::answer_buffered() {
  const server_options& options = owner_.options();
  const std::size_t batch_start = channel_.output_mark();
  std::span<const std::uint8_t> message;
  std::uint64_t answered_now = 0;
  for (;;) {
    if (options.close_after_queries != 0 && answered_ >= options.close_after_queries) {
      closing_ = true;
      break;
    }
    const auto r = channel_.next(message);
    if (r == frame_reader::result::need_more) break;
    if (r == frame_reader::result::zero_length) {
      owner_.counters.malformed_queries.fetch_add(1, std::memory_order_relaxed);
      closing_ = true;
      break;
    }
    const auto scratch = owner_.answer_scratch();
    const std::size_t size = build_answer(message, options.mode, scratch);
    if (size == 0) {
      owner_.counters.malformed_queries.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    std::memcpy(channel_.append(size).data(), scratch.data(), size);
    ++answered_;
    ++answered_now;
  }
  queries_.fetch_add(answered_now, std::memory_order_relaxed);
  if (options.reverse_order) channel_.reverse_since(batch_start);
  return !closing_;
}

bool server_connection::flush() {
  switch (channel_.flush()) {
    case stream_io::done:
      return true;
    case stream_io::want_read:
      wait(boost::asio::socket_base::wait_read);
      return true;
    case stream_io::want_write:
      wait(boost::asio::socket_base::wait_write);
      return true;
    case stream_io::closed:
    case stream_io::failed:
      close();
      return false;
  }
  return true;
}

void server_connection::check_idle(std::uint64_t now) {
  const double timeout = owner_.options().idle_timeout_seconds;
  if (timeout <= 0 || closed_) return;
  if (now - last_activity_ns_ >= seconds_to_ns(timeout)) {
    closing_ = true;
    step();
  }
}

void server_connection::finish_close() {
  if (!handshaking_) channel_.stream().shutdown();
  close();
}

void server_connection::close() {
  if (closed_) return;
  closed_ = true;
  channel_.close();
  boost::system::error_code ec;
  socket_.close(ec);
  owner_.forget(this);
}

}  // namespace dnstransport::detail
