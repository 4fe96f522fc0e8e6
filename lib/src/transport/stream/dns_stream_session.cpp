// DNS messages with their length on a stream client's connection: queries filled into
// gathered writes (also as early data, and again when the server refused it), answers
// read, reassembled and handed to the driver. The class is in dns_stream_session.hpp.

#include "transport/stream/dns_stream_session.hpp"

#include <sys/uio.h>

#include <algorithm>
#include <array>
#include <span>

#include "util/clock.hpp"
#include "util/receive_time.hpp"

namespace dnstransport::detail {

bool dns_stream_session::fill(std::uint64_t now) {
  message_channel& channel = driver_.channel();
  if (!driver_.established() || channel.output_pending()) return true;
  const bool gather = driver_.plan().gather_writes;
  std::uint64_t allowance = driver_.connection_allowance(now);
  if (!gather) allowance = std::min<std::uint64_t>(allowance, 1);
  while (allowance > 0) {
    const unsigned batch = static_cast<unsigned>(std::min<std::uint64_t>(allowance, max_gather));
    if (!write_queries(now, batch)) return false;
    allowance -= batch;
    if (channel.output_pending()) return true;
    if (!gather) allowance = std::min<std::uint64_t>(driver_.connection_allowance(now), 1);
  }
  return true;
}

bool dns_stream_session::fill_early(std::uint64_t now, std::size_t room) {
  // Each query takes at most the largest query's octets and its length prefix.
  std::uint64_t allowance = std::min<std::uint64_t>(
      driver_.send_allowance(now), room / (driver_.plan().max_query_size() + frame_prefix_size));
  const std::uint64_t limit = driver_.settings().queries_per_connection;
  if (limit != 0) allowance = std::min(allowance, limit);
  allowance = std::min<std::uint64_t>(allowance, max_gather);
  return allowance == 0 || write_queries(now, static_cast<unsigned>(allowance));
}

bool dns_stream_session::write_queries(std::uint64_t now, unsigned batch) {
  std::array<iovec, max_gather * 2> pieces;
  for (unsigned i = 0; i < batch; ++i) {
    slot_table::slot& s = driver_.next_query(now);
    const auto query = driver_.query_to_send(s, i);
    auto& head = heads_[i];  // length prefix and id, then the rest of the encoded query
    put_frame_prefix(head.data(), query.size());
    patch_id(&head[frame_prefix_size], s.id);
    pieces[i * 2] = {head.data(), head.size()};
    pieces[i * 2 + 1] = {const_cast<std::uint8_t*>(query.data() + 2), query.size() - 2};
  }
  return driver_.after_write(driver_.channel().send({pieces.data(), batch * 2u}));
}

bool dns_stream_session::resend_in_flight(std::uint64_t) {
  std::array<iovec, max_gather * 2> pieces;
  unsigned count = 0;
  slot_table& slots = driver_.slots();
  const auto send = [&] {
    return driver_.after_write(driver_.channel().send({pieces.data(), count * 2u}));
  };
  for (slot_table::slot* s = slots.oldest(); s != nullptr; s = slots.next_of(*s)) {
    const auto query = driver_.query_to_send(*s, count);
    auto& head = heads_[count];
    put_frame_prefix(head.data(), query.size());
    patch_id(&head[frame_prefix_size], s->id);
    pieces[count * 2] = {head.data(), head.size()};
    pieces[count * 2 + 1] = {const_cast<std::uint8_t*>(query.data() + 2), query.size() - 2};
    if (s->counted) ++driver_.early_counts().queries_resent;
    if (++count == max_gather) {
      if (!send()) return false;
      count = 0;
    }
  }
  return count == 0 || send();
}

bool dns_stream_session::read() {
  message_channel& channel = driver_.channel();
  bool gone = false;
  switch (channel.read(
      [&] {
        const std::uint64_t stamp = channel.stream().newest_arrival();
        if (stamp == 0) {
          const std::uint64_t now = monotonic_ns();
          gone = !take_messages(now, now);
        } else {
          const receive_clock clock = receive_clock::read();
          gone = !take_messages(clock.monotonic_now, clock.received(stamp));
        }
        return !gone;
      },
      driver_.draining(), stream_client::max_reads_per_wakeup)) {
    case message_channel::read_end::drained:
      return true;
    case message_channel::read_end::more:
      driver_.read_soon();
      return true;
    case message_channel::read_end::want_write:
      driver_.wait_write();
      return true;
    case message_channel::read_end::closed:
      driver_.server_closed(false);
      return false;
    case message_channel::read_end::failed:
      driver_.server_closed(true);
      return false;
    case message_channel::read_end::stopped:
      return !gone;
  }
  return true;
}

bool dns_stream_session::take_messages(std::uint64_t now, std::uint64_t arrived) {
  message_channel& channel = driver_.channel();
  std::span<const std::uint8_t> message;
  for (;;) {
    const auto r = channel.next(message);
    if (r == frame_reader::result::need_more) return true;
    if (r == frame_reader::result::zero_length) {
      if (driver_.counted()) ++driver_.connections().failures["zero_length_frame"];
      driver_.server_closed(true);
      return false;
    }
    driver_.take_message(message, now, arrived);
  }
}

}  // namespace dnstransport::detail
