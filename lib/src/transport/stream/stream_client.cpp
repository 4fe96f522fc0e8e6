// Stream client: DNS over a byte stream (plain TCP, RFC 7766, or TLS, RFC 7858: whichever
// the run's stream_connector opens). A client keeps up to `outstanding` queries in flight on
// its connection, matches answers by id in any order, and replaces the connection after
// `queries_per_connection` queries. All ready queries go out as one gathered write of
// [length+id][rest] pieces: plain TCP sends them without a copy, TLS joins them once.

#include <sys/uio.h>

#include <algorithm>
#include <array>
#include <cerrno>

#include <fmt/format.h>
#include <boost/asio/ip/tcp.hpp>

#include "transport/stream/message_channel.hpp"
#include "transport/stream/stream_socket.hpp"
#include "transport/stream/stream_transport.hpp"
#include "transport/tls/tls_backend.hpp"
#include "util/clock.hpp"

namespace dnstransport::detail {

namespace {

constexpr unsigned max_gather = 256;  // queries per write (2 pieces each, IOV_MAX is 1024)

// Running to a query count, connects/handshakes failed in a row before a client gives up.
constexpr unsigned max_failed_in_a_row = 3;

enum class conn_state { idle, connecting, handshaking, established };

class stream_client final : public client_base {
 public:
  stream_client(worker& owner, unsigned index, std::uint64_t quota,
                const stream_transport& transport)
      : client_base(owner, index, quota),
        transport_(transport),
        socket_(transport.make_socket(owner.io(),
                                      [this](bool readable, std::uint64_t generation, bool ok) {
                                        wait_ended(readable, generation, ok);
                                      })) {}

  // Connects when the first query may go out at once (see tick): a paced client whose first
  // query is due later connects then, not at the start with an idle connection.
  void start() override {
    const std::uint64_t now = monotonic_ns();
    if (send_allowance(now) > 0) connect(now);
  }

  void tick(std::uint64_t now) override {
    if (state_ != conn_state::established) expire_waiting_retries(now);
    if (state_ == conn_state::connecting || state_ == conn_state::handshaking) {
      // Nothing left to send: a set-up still going would end neither opened nor failed.
      if (!may_send(now) && slots_.empty()) {
        close(true);
        return;
      }
      if (now - connection_started_ns_ >= plan().timeout_ns) {
        fail_connection(
            state_ == conn_state::connecting ? std::string("tcp connect") : handshake_name(),
            ETIMEDOUT);
      }
      return;
    }
    if (state_ == conn_state::established) {
      expire(now);
      if (!may_send(now) && slots_.empty()) {
        close(true);
        return;
      }
      if (connection_done()) {
        close(true);
        if (send_allowance(now) > 0) connect(now);
        return;
      }
      fill(now);
      return;
    }
    // Connect only when a query may go out at once: a paced client would otherwise hold an
    // idle connection (that servers close) and count the wait as set-up time.
    if (send_allowance(now) > 0) connect(now);
  }

  void abandon() override {
    fail_in_flight(true);
    if (state_ != conn_state::idle) close(true);
  }

 private:
  const stream_settings& settings() const noexcept { return transport_.settings(); }
  std::string handshake_name() {
    return fmt::format("{} handshake", channel_.is_open() ? channel_.stream().name() : "stream");
  }

  bool connection_done() const noexcept {
    const std::uint64_t limit = settings().queries_per_connection;
    return limit != 0 && sent_on_connection_ >= limit && slots_.empty();
  }

  void connect(std::uint64_t now) {
    // Too many set-ups in flight on this thread: wait for the next tick. Thousands of
    // simultaneous handshakes would only time out against any single server.
    if (!owner_.begin_connection_setup()) return;
    in_setup_ = true;
    ++generation_;
    state_ = conn_state::connecting;
    connection_started_ns_ = now;
    // A connection whose set-up began in the warm-up is left out of every connection figure.
    counted_ = measuring(now);
    sent_on_connection_ = 0;
    highest_sequence_answered_ = 0;
    any_answered_ = false;
    waiting_read_ = waiting_write_ = false;

    const run_plan& p = plan();
    tcp_dial_options options;
    options.nodelay = settings().tcp_nodelay;
    options.fastopen = settings().tcp_fastopen;
    // Spread successive connections of all clients over the source addresses.
    if (!p.sources.empty()) {
      options.source = &p.sources[(index_ + connections_made_ * p.clients) % p.sources.size()];
    }
    ++connections_made_;
    const tcp_dial dial = socket_->connect({p.server_address, p.server_port}, options);
    switch (dial.result) {
      case tcp_dial::outcome::connected:
        on_connected(now);
        return;
      case tcp_dial::outcome::in_progress:
        wait(boost::asio::socket_base::wait_write);
        return;
      case tcp_dial::outcome::failed:
        fail_connection(dial.what, dial.error);
        return;
    }
  }

  void on_connected(std::uint64_t now) {
    if (counted_) {
      ++connections().opened;
      connections().connect_latency.record(now - connection_started_ns_);
    }
    channel_.open(
        socket_->open_stream(transport_.connector(), settings().resume ? ticket_.get() : nullptr));
    state_ = conn_state::handshaking;
    handshake_started_ns_ = now;
    handshake(now);
  }

  // The stream's own set-up above TCP (TLS); a stream without one is ready at once.
  void handshake(std::uint64_t now) {
    byte_stream& stream = channel_.stream();
    switch (stream.handshake()) {
      case stream_io::done:
        if (stream.has_handshake()) {
          // The last handshake step does the expensive crypto: read the clock after it, so
          // neither the handshake nor the first query's send time is back-dated.
          now = monotonic_ns();
          if (counted_) {
            connections().handshake_latency.record(now - handshake_started_ns_);
            ++(stream.resumed() ? connections().handshakes_resumed : connections().handshakes_full);
          }
        }
        end_setup();
        failed_in_a_row_ = 0;
        state_ = conn_state::established;
        fill(now);
        arm_read();
        return;
      case stream_io::want_read:
        wait(boost::asio::socket_base::wait_read);
        return;
      case stream_io::want_write:
        wait(boost::asio::socket_base::wait_write);
        return;
      case stream_io::closed:
      case stream_io::failed:
        fail_connection(handshake_name(), stream.failure_cause(), stream.error_message());
        return;
    }
  }

  // A connect (or socket set-up) that failed with `error`, counted by its errno name.
  void fail_connection(const std::string& what, int error) {
    if (counted_) {
      ++connections().failed;
      connections().record_socket_error(what.c_str(), error);
    }
    connection_failed();
  }

  // A handshake that failed, counted by the stream's cause ("tls_certificate").
  void fail_connection(const std::string& what, const std::string& cause,
                       const std::string& message) {
    if (counted_) {
      ++connections().failed;
      connections().record_failure(cause, fmt::format("{}: {}", what, message));
    }
    connection_failed();
  }

  void connection_failed() {
    // Running to a query count, a server that fails every connection would keep the run
    // going forever: after a few failures in a row this client gives up.
    if (++failed_in_a_row_ >= max_failed_in_a_row && plan().send_end_ns == UINT64_MAX) quota_ = 0;
    // In-flight queries exist only with TCP fast open; they die with the attempt.
    fail_in_flight(false);
    drop_socket();
    // Retry on the next tick rather than at once, so a refusing server is not hammered.
    state_ = conn_state::idle;
  }

  void wait(boost::asio::socket_base::wait_type type) {
    const bool reading = type == boost::asio::socket_base::wait_read;
    bool& flag = reading ? waiting_read_ : waiting_write_;
    if (flag) return;
    flag = true;
    socket_->async_wait(reading, generation_);
  }

  void wait_ended(bool reading, std::uint64_t generation, bool ok) {
    if (generation != generation_) return;  // a wait of an earlier connection
    (reading ? waiting_read_ : waiting_write_) = false;
    if (ok) on_ready();
  }

  void arm_read() { wait(boost::asio::socket_base::wait_read); }

  void on_ready() {
    const std::uint64_t now = monotonic_ns();
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
        handshake(now);
        return;
      case conn_state::established:
        break;
    }
    if (!flush()) return;
    if (!read_available()) return;
    if (connection_done()) {
      close(true);
      if (send_allowance(now) > 0) connect(monotonic_ns());
      return;
    }
    fill(monotonic_ns());
    if (state_ == conn_state::established) arm_read();
  }

  // Reads and processes everything available (answers are timed as each read returns).
  // False when the connection is gone.
  bool read_available() {
    bool gone = false;
    switch (channel_.read([&] {
      gone = !take_messages(monotonic_ns());
      return !gone;
    })) {
      case message_channel::read_end::drained:
        return true;
      case message_channel::read_end::want_write:
        wait(boost::asio::socket_base::wait_write);
        return true;
      case message_channel::read_end::closed:
        server_closed(false);
        return false;
      case message_channel::read_end::failed:
        server_closed(true);
        return false;
      case message_channel::read_end::stopped:
        return !gone;
    }
    return true;
  }

  bool take_messages(std::uint64_t now) {
    std::span<const std::uint8_t> message;
    for (;;) {
      const auto r = channel_.next(message);
      if (r == frame_reader::result::need_more) return true;
      if (r == frame_reader::result::zero_length) {
        if (counted_) ++connections().failures["zero_length_frame"];
        server_closed(true);
        return false;
      }
      const completion c = on_message(message, now);
      if (!c.matched) continue;
      if (any_answered_ && c.sequence < highest_sequence_answered_) {
        if (counted_) ++counts().out_of_order;
      } else {
        highest_sequence_answered_ = c.sequence;
        any_answered_ = true;
      }
      if (!counted_) continue;
      if (c.answered) ++connections().answered;
      if (c.first_on_connection && c.answered) {
        connections().first_query_latency.record(now - connection_started_ns_);
      }
    }
  }

  // The server ended the connection: EOF (or close_notify), or a reset/error.
  void server_closed(bool reset) {
    auto& c = connections();
    if (counted_) ++(reset ? c.reset_by_server : c.closed_by_server);
    fail_in_flight(false);
    drop_socket();
    state_ = conn_state::idle;
    const std::uint64_t now = monotonic_ns();
    if (send_allowance(now) > 0) connect(now);
  }

  void fill(std::uint64_t now) {
    if (state_ != conn_state::established || channel_.output_pending()) return;
    std::uint64_t allowance = send_allowance(now);
    const std::uint64_t limit = settings().queries_per_connection;
    if (limit != 0) allowance = std::min(allowance, limit - std::min(limit, sent_on_connection_));
    if (!plan().gather_writes) allowance = std::min<std::uint64_t>(allowance, 1);
    while (allowance > 0) {
      const unsigned batch = static_cast<unsigned>(std::min<std::uint64_t>(allowance, max_gather));
      if (!write_queries(now, batch)) return;
      allowance -= batch;
      if (channel_.output_pending()) return;
      if (!plan().gather_writes) {
        allowance = std::min<std::uint64_t>(send_allowance(now), 1);
        if (limit != 0 && sent_on_connection_ >= limit) allowance = 0;
      }
    }
  }

  slot_table::slot& next_query(std::uint64_t now) {
    slot_table::slot& s = take_slot(now);
    s.first_on_connection = sent_on_connection_ == 0;
    ++sent_on_connection_;
    return s;
  }

  // Writes `batch` queries in one gathered write; the channel keeps what the stream did not
  // take. False if the connection died.
  bool write_queries(std::uint64_t now, unsigned batch) {
    std::array<iovec, max_gather * 2> pieces;
    for (unsigned i = 0; i < batch; ++i) {
      slot_table::slot& s = next_query(now);
      const auto query = (*plan().queries)[s.query_index];
      auto& head = heads_[i];  // length prefix and id, then the rest of the encoded query
      put_frame_prefix(head.data(), query.size());
      patch_id(&head[frame_prefix_size], s.id);
      pieces[i * 2] = {head.data(), head.size()};
      pieces[i * 2 + 1] = {const_cast<std::uint8_t*>(query.data() + 2), query.size() - 2};
    }
    return after_write(channel_.send({pieces.data(), batch * 2u}));
  }

  // Waits for what a write left to do. False if the connection died.
  bool after_write(stream_io r) {
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

  // Sends pending output. False when the connection is gone.
  bool flush() { return after_write(channel_.flush()); }

  // We end the connection: after queries_per_connection, at the end of the run, or on abandon.
  void close(bool count) {
    if (count && counted_ && state_ != conn_state::idle && state_ != conn_state::connecting) {
      ++connections().closed_by_client;
    }
    if (state_ == conn_state::established && !settings().close_with_rst) {
      channel_.stream().shutdown();
    }
    drop_socket(settings().close_with_rst);  // keeps the connection's newest ticket
    state_ = conn_state::idle;
  }

  void end_setup() noexcept {
    if (in_setup_) owner_.end_connection_setup();
    in_setup_ = false;
  }

  void drop_socket(bool abortive = false) {
    end_setup();
    if (channel_.is_open() && settings().resume) {
      if (auto ticket = channel_.stream().ticket()) ticket_ = std::move(ticket);
    }
    channel_.close();
    // Whether the SYN carried the first query is known once the SYN-ACK came back.
    if (sent_on_connection_ > 0 && counted_ && socket_->syn_data_accepted()) {
      ++connections().fastopen_data_in_syn;
    }
    ++generation_;
    socket_->close(abortive);
    waiting_read_ = waiting_write_ = false;
  }

  const stream_transport& transport_;
  std::unique_ptr<stream_socket> socket_;
  message_channel channel_;
  std::unique_ptr<tls_ticket> ticket_;
  std::array<std::array<std::uint8_t, frame_prefix_size + 2>, max_gather> heads_{};
  conn_state state_ = conn_state::idle;
  std::uint64_t generation_ = 0;
  std::uint64_t connection_started_ns_ = 0;
  std::uint64_t handshake_started_ns_ = 0;
  std::uint64_t sent_on_connection_ = 0;
  std::uint64_t connections_made_ = 0;
  std::uint64_t highest_sequence_answered_ = 0;
  bool any_answered_ = false;
  bool waiting_read_ = false;
  bool waiting_write_ = false;
  bool in_setup_ = false;  // counted in the worker's set-ups in flight
  bool counted_ = false;   // set-up began after the warm-up: the connection is counted

  unsigned failed_in_a_row_ = 0;  // connects/handshakes failed since the last success
};

}  // namespace

std::unique_ptr<client_base> stream_transport::make_client(worker& owner, unsigned index,
                                                           std::uint64_t quota) const {
  return std::make_unique<stream_client>(owner, index, quota, *this);
}

std::unique_ptr<client_base> stream_transport::make_retry_client(worker& owner, unsigned index,
                                                                 const client_base& feeder) const {
  auto client = std::make_unique<stream_client>(owner, index, UINT64_MAX, *this);
  client->serve_retries(feeder);
  return client;
}

}  // namespace dnstransport::detail
