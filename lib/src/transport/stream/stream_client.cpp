// The stream client's readiness: readiness waits, the session's reads, writes and fills on
// each, coalesced reads, answers counted on the connection; and the stream transport's
// client factories (with the DNS length-framed session). The class is in stream_client.hpp,
// its connection life cycle in stream_client_connection.cpp.

#include <algorithm>
#include <memory>
#include <utility>

#include <boost/asio/post.hpp>
#include <boost/asio/socket_base.hpp>

#include "transport/stream/stream_client.hpp"

#include "transport/stream/dns_stream_session.hpp"
#include "util/clock.hpp"

namespace dnstransport::detail {

void stream_client::wait(boost::asio::socket_base::wait_type type) {
  const bool reading = type == boost::asio::socket_base::wait_read;
  bool& flag = reading ? waiting_read_ : waiting_write_;
  if (flag) return;
  flag = true;
  socket_->async_wait(reading, generation_);
}

void stream_client::wait_ended(bool reading, std::uint64_t generation, bool ok) {
  if (generation != generation_) return;  // a wait of an earlier connection
  (reading ? waiting_read_ : waiting_write_) = false;
  if (!ok) return;
  count_wakeup();
  on_ready();
}

void stream_client::read_soon() {
  if (read_posted_) return;
  read_posted_ = true;
  // After the handlers (and timers) already due: a peer that keeps sending gets one
  // wake-up's worth of reads at a time, as a readiness wait would give it.
  boost::asio::post(owner_.io(), [this, generation = generation_] {
    read_posted_ = false;
    if (generation != generation_ || state_ != conn_state::established) return;
    count_wakeup();
    on_ready();
  });
}

void stream_client::read_delayed() {
  delay_pending_ = false;
  if (state_ != conn_state::established) return;  // the connection it was for has ended
  // What came during the delay is read in this one wake-up, every TLS record of it.
  draining_ = true;
  on_ready();
  draining_ = false;
}

// With coalescing (engine/read_coalescing.hpp) the next read comes after a delay rather than
// at the first byte while answers flow in: a readiness wait would end for the next one
// alone. (Unlike a datagram's, a stream read's kernel stamp is its newest segment's: the
// delay, bounded by the latency, is what bounds how late an answer is timed.)
void stream_client::wait_for_answers() {
  if (delay_pending_) return;  // the delayed read is due soon
  if (!waiting_read_ && !waiting_write_ && delay_next_read()) {
    delay_pending_ = true;
    return;
  }
  arm_read();
}

void stream_client::on_ready() {
  const std::uint64_t now = monotonic_ns();
  if (syn_pending_ && state_ != conn_state::idle && !confirm_syn(now)) return;
  switch (state_) {
    case conn_state::idle:
      return;
    case conn_state::connecting: {
      if (const int error = socket_->connect_error(); error != 0) {
        fail_connection("tcp connect", error);
      } else {
        on_connected(now);
      }
      return;
    }
    case conn_state::handshaking:
      // Early data the stream did not take yet goes first: the library wants the same
      // write again (OpenSSL) before the handshake goes on.
      if (life_.early() && channel_.output_pending()) {
        if (!after_write(channel_.flush()) || channel_.output_pending()) return;
      }
      handshake(now);
      return;
    case conn_state::established:
      break;
  }
  life_.last_activity_ns = now;
  if (!session_->flush()) return;
  if (!session_->read()) return;
  if (connection_done()) {
    close(true);
    if (has_work(now)) connect(monotonic_ns());
    return;
  }
  session_->fill(monotonic_ns());
  if (state_ == conn_state::established) wait_for_answers();
}

bool stream_client::after_write(stream_io r) {
  if (state_ == conn_state::handshaking && (r == stream_io::closed || r == stream_io::failed)) {
    // Early data that could not be written: the set-up failed, counted and retried as such.
    fail_connection(handshake_name(), channel_.stream().failure_cause(),
                    channel_.stream().error_message());
    return false;
  }
  switch (r) {
    case stream_io::done:
      return true;
    case stream_io::want_read:
      arm_read();
      return true;
    case stream_io::want_write:
      wait(boost::asio::socket_base::wait_write);
      return true;
    case stream_io::closed:
      server_closed(false);
      return false;
    case stream_io::failed:
      server_closed(true);
      return false;
  }
  return true;
}

std::unique_ptr<client_base> stream_transport::make_client(worker& owner, unsigned index,
                                                           std::uint64_t quota) const {
  auto client = std::make_unique<stream_client>(owner, index, quota, *this);
  client->set_session(std::make_unique<dns_stream_session>(*client));
  return client;
}

std::unique_ptr<client_base> stream_transport::make_retry_client(worker& owner, unsigned index,
                                                                 const client_base& feeder) const {
  auto client = std::make_unique<stream_client>(owner, index, UINT64_MAX, *this);
  client->set_session(std::make_unique<dns_stream_session>(*client));
  client->serve_retries(feeder);
  return client;
}

}  // namespace dnstransport::detail
