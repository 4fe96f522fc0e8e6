#include "transport/stream/server_connection.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "responder/rate_limiter.hpp"
#include "responder/responder.hpp"
#include "util/clock.hpp"

namespace dnstransport::detail {

server_connection::server_connection(server_thread& owner, boost::asio::ip::tcp::socket socket,
                                     stream_acceptor& streams, std::atomic<std::uint64_t>& queries,
                                     const answer_edns& edns)
    : accepted_stream(owner, std::move(socket)),
      rate_timer_(owner.io()),
      queries_(queries),
      edns_(edns) {
  channel_.open(streams.open(socket_.native_handle()));
}

void server_connection::step() {
  if (closed_) return;
  if (handshaking_ && !handshake(channel_.stream())) return;
  // Answers not yet written go first: no more is read until the stream took them, which
  // holds back a client that sends faster than it reads.
  if (!flush() || channel_.output_pending()) return;
  if (closing_) {
    finish_close();
    return;
  }
  // An answer waits for the rate limit: nothing more is read until its timer (send_held).
  if (!held_.empty()) return;
  if (!read_queries()) return;
  if (!flush()) return;
  if (closing_ && !channel_.output_pending()) {
    finish_close();
    return;
  }
  if (!channel_.output_pending() && held_.empty()) wait(boost::asio::socket_base::wait_read);
}

bool server_connection::read_queries() {
  switch (channel_.read([this] {
    last_activity_ns_ = monotonic_ns();
    return answer_buffered();
  })) {
    case message_channel::read_end::drained:
    case message_channel::read_end::stopped:
    case message_channel::read_end::more:  // no read limit here: not returned
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

// Answers the complete queries read so far; false to stop reading (closing, or an answer
// held for the rate limit).
bool server_connection::answer_buffered() {
  const server_options& options = owner_.options();
  const bool limited = owner_.limiter() != nullptr;
  const std::size_t batch_start = channel_.output_mark();
  std::span<const std::uint8_t> message;
  std::uint64_t answered_now = 0;
  std::uint64_t now = 0;  // read once per batch, when the rate limit needs it
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
    const std::size_t size = build_answer(message, options.mode, scratch, edns_);
    if (size == 0) {
      owner_.counters.malformed_queries.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    if (limited && !admit(size, now)) break;
    std::memcpy(channel_.append(size).data(), scratch.data(), size);
    ++answered_;
    ++answered_now;
  }
  queries_.fetch_add(answered_now, std::memory_order_relaxed);
  owner_.spend_answer_cost(answered_now);
  if (options.reverse_order) channel_.reverse_since(batch_start);
  return !closing_ && held_.empty();
}

bool server_connection::admit(std::size_t size, std::uint64_t& now) {
  if (now == 0) now = monotonic_ns();
  const std::uint64_t due = owner_.limiter()->reserve(now);
  if (due <= now) return true;
  // The token is ours, due later: the answer waits for it (the scratch is the thread's).
  const auto scratch = owner_.answer_scratch();
  held_.assign(scratch.begin(), scratch.begin() + static_cast<std::ptrdiff_t>(size));
  owner_.counters.rate_limited_delayed.fetch_add(1, std::memory_order_relaxed);
  rate_timer_.expires_after(std::chrono::nanoseconds(due - std::min(due, monotonic_ns())));
  rate_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (ec || self->closed_) return;
    self->send_held();
  });
  return false;
}

// The held answer's token is due: the answer goes out, then those of the queries read after
// it (which may wait in turn), then reading goes on.
void server_connection::send_held() {
  std::memcpy(channel_.append(held_.size()).data(), held_.data(), held_.size());
  held_.clear();
  ++answered_;
  queries_.fetch_add(1, std::memory_order_relaxed);
  owner_.spend_answer_cost(1);
  last_activity_ns_ = monotonic_ns();
  if (!closing_) answer_buffered();
  step();
}

bool server_connection::flush() {
  return wait_as(channel_.flush());
}

void server_connection::check_idle(std::uint64_t now) {
  // A connection whose answer waits for the rate limit is not idle: its client waits.
  if (!held_.empty() || !idle_past_timeout(now)) return;
  closing_ = true;
  step();
}

void server_connection::finish_close() {
  if (!handshaking_) channel_.stream().shutdown();
  close();
}

void server_connection::close() {
  if (closed_) return;
  closed_ = true;
  rate_timer_.cancel();
  channel_.close();
  close_socket();
}

}  // namespace dnstransport::detail
