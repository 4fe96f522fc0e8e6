#include "transport/stream/server_dns_session.hpp"

#include <algorithm>
#include <cstring>

#include "responder/client_rate_limits.hpp"
#include "responder/responder.hpp"
#include "util/clock.hpp"

namespace dnstransport::detail {

server_dns_session::server_dns_session(server_stream_connection& driver,
                                       std::unique_ptr<byte_stream> stream,
                                       std::atomic<std::uint64_t>& queries, const answer_edns& edns)
    : driver_(driver), owner_(driver.owner()), queries_(queries), edns_(edns) {
  channel_.open(std::move(stream));
}

std::unique_ptr<server_session> make_server_dns_session(server_stream_connection& driver,
                                                        std::unique_ptr<byte_stream> stream,
                                                        transport_kind transport) {
  server_thread& thread = driver.owner();
  return std::make_unique<server_dns_session>(
      driver, std::move(stream), thread.counters.queries[transport], thread.edns(transport));
}

stream_io server_dns_session::read() {
  switch (channel_.read([this] {
    driver_.touch();
    return answer_buffered();
  })) {
    case message_channel::read_end::drained:
    case message_channel::read_end::stopped:
    case message_channel::read_end::more:  // no read limit here: not returned
      return stream_io::want_read;
    case message_channel::read_end::want_write:
      return stream_io::want_write;
    case message_channel::read_end::closed:
      return stream_io::closed;
    case message_channel::read_end::failed:
      return stream_io::failed;
  }
  return stream_io::want_read;
}

bool server_dns_session::answer_buffered() {
  const server_options& options = owner_.options();
  const bool limited = static_cast<bool>(driver_.limits());
  const std::size_t batch_start = channel_.output_mark();
  std::span<const std::uint8_t> message;
  std::uint64_t answered_now = 0;
  std::uint64_t now = 0;  // read once per batch, when the rate limit needs it
  for (;;) {
    if (options.close_after_queries != 0 && answered_ >= options.close_after_queries) {
      driver_.end_after_output();
      break;
    }
    const auto r = channel_.next(message);
    if (r == frame_reader::result::need_more) break;
    if (r == frame_reader::result::zero_length) {
      owner_.counters.malformed_queries.fetch_add(1, std::memory_order_relaxed);
      driver_.end_after_output();
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
  driver_.answered(answered_now);
  owner_.spend_answer_cost(answered_now);
  if (options.reverse_order) channel_.reverse_since(batch_start);
  return !driver_.closing() && held_.empty();
}

bool server_dns_session::admit(std::size_t size, std::uint64_t& now) {
  if (now == 0) now = monotonic_ns();
  const std::uint64_t due = driver_.limits().reserve(now);
  if (due <= now) return true;
  // The token is ours, due later: the answer waits for it (the scratch is the thread's).
  const auto scratch = owner_.answer_scratch();
  held_.assign(scratch.begin(), scratch.begin() + static_cast<std::ptrdiff_t>(size));
  owner_.counters.rate_limited_delayed.fetch_add(1, std::memory_order_relaxed);
  driver_.wake_at(due);
  return false;
}

// The held answer's token is due: the answer goes out, then those of the queries read after
// it (which may wait in turn); the driver then reads on.
void server_dns_session::on_timer() {
  std::memcpy(channel_.append(held_.size()).data(), held_.data(), held_.size());
  held_.clear();
  ++answered_;
  queries_.fetch_add(1, std::memory_order_relaxed);
  driver_.answered(1);
  owner_.spend_answer_cost(1);
  driver_.touch();
  if (!driver_.closing()) answer_buffered();
}

}  // namespace dnstransport::detail
