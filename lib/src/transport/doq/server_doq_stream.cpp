// The query I/O of a DoQ connection (server_doq_connection.hpp): stream data in, one query
// per stream checked against its length and answered, resets for streams that are no
// query, the stream callbacks that keep flow control and the stream limit moving, and under a
// rate limit the answers that wait for their tokens. The connection's life cycle is
// server_doq_connection.cpp.

#include "transport/doq/server_doq_connection.hpp"

#include <algorithm>
#include <chrono>
#include <exception>

#include "responder/client_rate_limits.hpp"
#include "responder/responder.hpp"
#include "util/clock.hpp"

namespace dnstransport::detail {

int doq_connection::on_stream_data(ngtcp2_conn* conn, std::uint32_t flags, std::int64_t stream_id,
                                   std::uint64_t, const std::uint8_t* data, std::size_t size,
                                   void* user_data, void*) {
  auto& self = *static_cast<doq_connection*>(user_data);
  try {
    self.receive(stream_id, (flags & NGTCP2_STREAM_DATA_FLAG_FIN) != 0, {data, size});
  } catch (const std::exception&) {
    return NGTCP2_ERR_CALLBACK_FAILURE;
  }
  ngtcp2_conn_extend_max_stream_offset(conn, stream_id, size);
  ngtcp2_conn_extend_max_offset(conn, size);
  return 0;
}

int doq_connection::on_stream_close(ngtcp2_conn* conn, std::uint32_t, std::int64_t stream_id,
                                    std::uint64_t, void* user_data, void*) {
  auto& self = *static_cast<doq_connection*>(user_data);
  bool credited = false;  // the client got this stream's credit back when its query was read
  if (const auto found = self.streams_.find(stream_id); found != self.streams_.end()) {
    credited = found->second->credited;
    if (found->second->queued) std::erase(self.send_queue_, found->second.get());
    if (found->second->delayed) {
      std::erase_if(self.delayed_,
                    [s = found->second.get()](const auto& d) { return d.first == s; });
    }
    self.streams_.erase(found);
  }
  if (ngtcp2_is_bidi_stream(stream_id) != 0 && ngtcp2_conn_is_local_stream(conn, stream_id) == 0 &&
      !credited && !self.thread_.options().doq_fixed_streams) {
    ngtcp2_conn_extend_max_streams_bidi(conn, 1);
  }
  return 0;
}

int doq_connection::on_stream_reset(ngtcp2_conn*, std::int64_t stream_id, std::uint64_t,
                                    std::uint64_t, void* user_data, void*) {
  auto& self = *static_cast<doq_connection*>(user_data);
  try {
    auto& slot = self.streams_[stream_id];
    if (!slot) {
      slot = std::make_unique<stream>();
      slot->id = stream_id;
    }
    // The client gave up on the query before it was complete: RFC 9250, section 4.3.
    if (!slot->failed && slot->out.empty()) self.fail_stream(*slot, doq_request_cancelled);
  } catch (const std::exception&) {
    return NGTCP2_ERR_CALLBACK_FAILURE;
  }
  return 0;
}

int doq_connection::on_extend_max_stream_data(ngtcp2_conn*, std::int64_t stream_id, std::uint64_t,
                                              void* user_data, void*) {
  auto& self = *static_cast<doq_connection*>(user_data);
  const auto found = self.streams_.find(stream_id);
  if (found == self.streams_.end()) return 0;
  stream& s = *found->second;
  if (!s.queued && !s.failed && !s.delayed && s.sent < s.out.size()) {
    try {
      self.send_queue_.push_back(&s);
    } catch (const std::exception&) {
      return NGTCP2_ERR_CALLBACK_FAILURE;
    }
    s.queued = true;
  }
  return 0;
}

void doq_connection::receive(std::int64_t stream_id, bool fin, std::span<const std::uint8_t> data) {
  auto& slot = streams_[stream_id];
  if (!slot) {
    slot = std::make_unique<stream>();
    slot->id = stream_id;
  }
  stream& s = *slot;
  if (s.failed || !s.out.empty() || s.in.state() != doq_stream_reader::outcome::more) return;
  const auto got = s.in.add(data, fin);
  if (got == doq_stream_reader::outcome::more) return;
  // The query is read: the client may open another stream now, not only once this one has
  // closed (after our answer is acknowledged, an ACK delay later), which would leave a
  // client with every stream answered waiting for credit.
  if (!thread_.options().doq_fixed_streams) {
    ngtcp2_conn_extend_max_streams_bidi(conn_, 1);
    s.credited = true;
  }
  // More than the length announces, or FIN before it is all there: not one DNS message.
  if (got != doq_stream_reader::outcome::message) {
    thread_.counters.malformed_queries.fetch_add(1, std::memory_order_relaxed);
    fail_stream(s, doq_protocol_error);
    return;
  }
  const server_options& o = thread_.options();
  ++queries_;
  // After close_after_queries, the connection closes once the answers so far are out; later
  // queries stay unanswered.
  if (o.close_after_queries != 0 && queries_ > o.close_after_queries) return;
  if (o.doq_reset_every != 0 && queries_ % o.doq_reset_every == 0) {
    fail_stream(s, doq_internal_error);
    return;
  }
  answer(s);
}

void doq_connection::answer(stream& s) {
  // Read now: the query may point into ngtcp2's packet buffer.
  const std::span<const std::uint8_t> query = s.in.message();
  const answer_edns& edns = thread_.edns(transport_kind::doq);
  s.out.resize(2 + query.size() + answer_room(edns));
  // The answer keeps the query's DNS id, which a DoQ client sets to 0 (RFC 9250,
  // section 4.2.1).
  const std::size_t size =
      build_answer(query, thread_.options().mode, std::span<std::uint8_t>(s.out).subspan(2), edns);
  if (size == 0) {
    s.out.clear();
    thread_.counters.malformed_queries.fetch_add(1, std::memory_order_relaxed);
    fail_stream(s, doq_protocol_error);
    return;
  }
  // doq_lie_every: the length claims an octet the stream never carries.
  const std::uint64_t lie = thread_.options().doq_lie_every;
  const std::size_t claimed = lie != 0 && queries_ % lie == 0 ? size + 1 : size;
  s.out[0] = static_cast<std::uint8_t>(claimed >> 8);
  s.out[1] = static_cast<std::uint8_t>(claimed);
  s.out.resize(2 + size);
  s.in = doq_stream_reader();
  if (const answer_limits limits = thread_.limits(*client_); limits) {
    const std::uint64_t now = monotonic_ns();
    const std::uint64_t due = limits.reserve(now);
    if (due > now) {
      delayed_.emplace_back(&s, due);
      s.delayed = true;
      thread_.counters.rate_limited_delayed.fetch_add(1, std::memory_order_relaxed);
      if (delayed_.size() == 1) arm_rate_timer();
      return;
    }
  }
  deliver(s);
}

void doq_connection::deliver(stream& s) {
  send_queue_.push_back(&s);
  s.queued = true;
  ++answers_;
  ++client_->answers;
  thread_.counters.queries[transport_kind::doq].fetch_add(1, std::memory_order_relaxed);
  thread_.spend_answer_cost(1);
}

void doq_connection::arm_rate_timer() {
  const std::uint64_t due = delayed_.front().second;
  rate_timer_.expires_after(std::chrono::nanoseconds(due - std::min(due, monotonic_ns())));
  rate_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    // A connection the listener removed has no IDs left.
    if (ec || self->phase_ != phase::open || self->ids_.empty()) return;
    try {
      self->send_delayed();
    } catch (const std::exception&) {
      self->listener_.remove(*self);  // out of memory: this connection is given up
    }
  });
}

void doq_connection::send_delayed() {
  const std::uint64_t now = monotonic_ns();
  while (!delayed_.empty() && delayed_.front().second <= now) {
    stream& s = *delayed_.front().first;
    delayed_.pop_front();
    s.delayed = false;
    deliver(s);
  }
  if (!delayed_.empty()) arm_rate_timer();
  if (!write() || !misbehave()) {
    listener_.remove(*this);
    return;
  }
  arm_timer();
}

void doq_connection::fail_stream(stream& s, std::uint64_t error) {
  s.failed = true;
  s.in = doq_stream_reader();
  pending_resets_.emplace_back(s.id, error);
}

void doq_connection::apply_resets() {
  for (const auto& [id, error] : pending_resets_) ngtcp2_conn_shutdown_stream(conn_, id, error);
  pending_resets_.clear();
}

}  // namespace dnstransport::detail
