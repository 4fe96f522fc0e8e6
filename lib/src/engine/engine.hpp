#pragma once
// Internal: the load engine. A run is split into per-thread workers; each worker owns an
// io_context, its clients and its counters, and touches nothing shared per query. The
// transport of the run makes the clients (client_transport, run_plan.hpp); every client shares
// the per-query accounting in client_base. Nothing here knows load_spec or run_result: the
// load (load/) turns the spec into a run_plan and the workers' counters into the result.

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <dnstransport/query_source.hpp>

#include "engine/arrival_schedule.hpp"
#include "engine/connection_tally.hpp"
#include "engine/counters.hpp"
#include "engine/in_flight_questions.hpp"
#include "engine/letter_case.hpp"
#include "engine/read_coalescing.hpp"
#include "engine/readiness.hpp"
#include "engine/run_plan.hpp"
#include "engine/slot_table.hpp"
#include "engine/timer_deadlines.hpp"

namespace dnstransport {
enum class query_outcome : std::uint8_t;  // dnstransport/client.hpp
}  // namespace dnstransport

namespace dnstransport::detail {

class client_base;
class worker;

// Per-query bookkeeping shared by every transport: slot table, query cursor, send budget,
// response classification and timeouts.
class client_base {
 public:
  client_base(worker& owner, unsigned index, std::uint64_t quota);
  virtual ~client_base() = default;
  client_base(const client_base&) = delete;
  client_base& operator=(const client_base&) = delete;

  virtual void start() = 0;
  // Periodic work: expire timed-out queries, send more when the budget allows.
  virtual void tick(std::uint64_t now) = 0;
  // Stop at once: queries in flight count as abandoned, sockets close.
  virtual void abandon() = 0;

  // Nothing in flight and nothing more to send.
  virtual bool finished(std::uint64_t now) const noexcept {
    return slots_.empty() && !may_send(now);
  }

  // The delay this client asked for with worker::delay_read is over: read what came.
  virtual void read_delayed() {}

  // Open loop: the time of this client's next scheduled query (UINT64_MAX: none), and the
  // queries whose time came, taken into the waiting list or counted as not sent. Queries
  // that waited longer than the timeout are counted as not sent too.
  void open_schedule();  // at the start of the run, once the plan's times are set
  std::uint64_t next_arrival_ns() const noexcept;
  void admit_arrivals(std::uint64_t now) noexcept;
  void expire_waiting(std::uint64_t now) noexcept;

  // A query whose UDP answer was truncated, handed to a client that retries it over TCP.
  // Its latency still runs from the original send; the retry is not a new query sent.
  struct retry {
    std::uint32_t query_index = 0;
    std::uint64_t sent_ns = 0;
    bool counted = false;
  };
  // Makes this client send only queries handed to it with take_retry (the TC retry client);
  // it keeps its connection while `feeder` may still send or has queries in flight.
  void serve_retries(const client_base& feeder) noexcept { feeder_ = &feeder; }
  void take_retry(const retry& r) { retries_.push_back(r); }

  // The octets of the query in slot `s` to send (its id still to be patched): the encoded
  // query, or, told apart by letter case, a copy in its own case held in scratch `piece` (below
  // case_pieces: one per query of a batch, valid until the next call with that piece).
  // With EDNS Client Subnet, the copy carries the subnet the query is sent with.
  static constexpr unsigned case_pieces = 256;
  std::span<const std::uint8_t> query_to_send(const slot_table::slot& s, unsigned piece) noexcept;
  // EDNS Client Subnet (run_plan::client_subnet): writes the subnet the query in slot `s`
  // carries into `query`, a copy of it that the transport sends (DoH, DoQ).
  void write_client_subnet(const slot_table::slot& s, std::span<std::uint8_t> query) const noexcept;

 protected:
  // How many queries may be sent right now (free slots, quota, rate, phase; open loop: the
  // queries whose scheduled time came).
  std::uint32_t send_allowance(std::uint64_t now) noexcept;
  bool may_send(std::uint64_t now) const noexcept;
  // Replay: how many waiting queries may go now, at most `room`.
  std::uint32_t replay_allowance(std::uint32_t room) const noexcept;

  // Takes a slot for the next query; the caller sends it.
  slot_table::slot& take_slot(std::uint64_t now) noexcept;
  // Undoes take_slot for a query the kernel did not accept.
  void return_slot(slot_table::slot& s) noexcept;

  // Classifies one received message and completes its query when it matches one.
  struct completion {
    bool matched = false;
    bool answered = false;  // counted in responses_received
    std::uint64_t sequence = 0;
    bool first_on_connection = false;
    // The edns-tcp-keepalive TIMEOUT the answer advertised (units of 100 ms); -1: none.
    std::int32_t keepalive_timeout = -1;
    // From the query's send to the message (matched messages, counted or not).
    std::uint64_t latency_ns = 0;
    std::uint64_t sent_ns = 0;  // when the query was sent
  };
  // `datagram`: arrived over UDP, where an answer may not exceed what the query allowed.
  // `received_ns`: when the kernel received it (util/receive_time.hpp; for a stream, the
  // newest segment read so far), which the latency runs to when it lies between the query's
  // send and `now`; 0: `now`.
  completion on_message(std::span<const std::uint8_t> message, std::uint64_t now,
                        bool datagram = false, std::uint64_t received_ns = 0) noexcept;
  // An answer whose query the transport already knows (an HTTP/2 stream): `id` is the
  // query's slot id; the message must carry `wire_id`, the id that was sent (DoH sends 0).
  // `received_ns` as for on_message.
  completion on_answer(std::uint16_t id, std::span<const std::uint8_t> message, std::uint64_t now,
                       std::uint16_t wire_id, std::uint64_t received_ns = 0) noexcept;
  // The exchange of the query with `id` failed above DNS (an HTTP status other than 200, a
  // reset stream): counted in http_failed (or, for `quic`, quic_failed) under `cause`
  // ("status_404", "stream_reset").
  enum class exchange_layer { http, quic };
  void fail_exchange(std::uint16_t id, std::uint64_t now, std::string_view cause,
                     exchange_layer layer = exchange_layer::http) noexcept;
  // The query with `id` was in flight on a connection that ended: lost on close.
  void lose_on_close(std::uint16_t id) noexcept;
  // A message for the query with `id`, known by its stream, after that query ended (a second
  // answer on an HTTP/2 stream): counted as duplicate, late or unexpected, as a message with
  // a past id is.
  void count_stray(std::uint16_t id, std::uint64_t now) noexcept;
  // A message that belongs to no query this client can name: unexpected.
  void count_unexpected(std::uint64_t now) noexcept {
    if (measuring(now)) ++counts().unexpected;
  }

  // A truncated answer's query: true when the client retries it elsewhere (UDP with
  // --tc-retry tcp), and the query then ends there instead of in `truncated`.
  virtual bool retry_truncated(const slot_table::slot& /*s*/) { return false; }

  // After the warm-up: what happens now is counted.
  bool measuring(std::uint64_t now) const noexcept;

  // A new connection's set-up begins at `now` (connection_tally.hpp).
  void begin_connection(connection_tally& t, std::uint64_t now) const noexcept;
  // An exchange on the connection completed (`c`; nothing when it matched no query), its
  // answer taken at `end_ns`: an answer that overtook an earlier query's is out of order, one
  // to a query sent before the previous answer came is queued (and one at a time when it
  // came a whole answer time after that: connection_tally::space), and a counted connection
  // counts its answers and its first query's latency from its set-up.
  void count_on_connection(connection_tally& t, const completion& c, std::uint64_t end_ns) noexcept;

  // Counts every query sent before `now - timeout` as lost.
  void expire(std::uint64_t now) noexcept;
  // Counts TC retries that waited for a connection longer than the timeout as lost.
  void expire_waiting_retries(std::uint64_t now) noexcept;

  // Counts every query in flight as lost on close (stream closed or reset), or abandoned.
  // Queries waiting to be sent again (slot::waiting_resend: on no connection) are not lost
  // on close: they wait for the next connection (or their timeout).
  void fail_in_flight(bool abandoned) noexcept;

  const run_plan& plan() const noexcept;
  // The worker woke up for this client: a readiness wait of its socket completed, or a
  // timer of its own expired (generator_counters::wakeups).
  void count_wakeup() noexcept;
  // Where this client's system calls on its sockets are counted.
  syscall_counter& syscalls() noexcept;
  query_counters& counts() noexcept;
  connection_counters& connections() noexcept;
  quic_counters& quic() noexcept;
  early_data_counters& early_counts() noexcept;

  // Coalesced receiving (engine/read_coalescing.hpp), after a wake-up's reads: true when
  // the next read was put off (this client's read_delayed comes after the delay), false when
  // the client should wait for its socket's readiness now.
  bool delay_next_read() noexcept;

  // Frees a query's slot and its question.
  void release(slot_table::slot& s, slot_table::past outcome) noexcept;
  // Ends a query: release, and a fed query's end told to the feed (`how`).
  void finish(slot_table::slot& s, slot_table::past outcome, query_outcome how) noexcept;

  // A connection of this client is established / has ended (counted in the worker's gauge
  // of open connections, warm-up included; connection_down is idempotent).
  void connection_up() noexcept;
  void connection_down() noexcept;

 private:
  friend class connection_life;  // counts a kept connection's life (connection_life.hpp)

  // The query in flight with `id`, or null after counting what the id was (late, duplicate,
  // unexpected; or lost and late when its timeout passed before this was read).
  slot_table::slot* in_flight(std::uint16_t id, std::uint64_t now) noexcept;
  // The letters of the slot's query whose case its pattern changes (0: none).
  std::uint32_t case_flips(const slot_table::slot& s) const noexcept;
  // Whether an answer's client subnet option (read into `summary`) is the one the query in
  // `s` carried: its family, source prefix and address.
  bool echoes_client_subnet(const slot_table::slot& s, std::span<const std::uint8_t> message,
                            const response_summary& summary) const noexcept;
  // Puts a query of the set in flight among the questions; its letter-case pattern.
  std::uint32_t take_question(std::uint32_t query) noexcept;
  // An answer's EDNS options, counted (answers only, after the warm-up).
  void count_keepalive(std::uint16_t timeout) noexcept;
  void count_padded(std::size_t size) noexcept;
  void count_client_subnet(const response_summary& summary) noexcept;
  // Classifies `message` as the answer to `s` (sent with `expected_id`) and ends the query.
  completion complete(slot_table::slot& s, std::span<const std::uint8_t> message, std::uint64_t now,
                      std::uint16_t expected_id, bool datagram,
                      std::uint64_t received_ns = 0) noexcept;

 protected:
  worker& owner_;
  unsigned index_;
  slot_table slots_;
  std::uint32_t next_query_;
  std::uint64_t quota_;  // queries left to send in count mode (UINT64_MAX: unlimited)
  std::uint64_t sent_ = 0;
  double pace_phase_;  // in [0, 1): where in each pacing interval this client's queries fall
  const std::uint32_t* question_of_;  // plan().question_of, at hand
  std::uint32_t query_count_;
  in_flight_questions questions_;
  std::uint32_t question_room_;  // queries that may be in flight (run_plan::in_flight_limit)
  std::vector<std::uint8_t> case_scratch_;      // told apart by letter case: queries in their case
  std::array<std::uint8_t, 16> own_subnet_{};   // client subnet per client: this client's address
  const client_base* feeder_ = nullptr;         // set: this client serves the feeder's TC retries
  std::deque<retry> retries_;                   // waiting to be sent (retry client only)
  std::unique_ptr<arrival_schedule> schedule_;  // open loop only
  bool arrivals_open_ = true;                   // open loop: more queries will be scheduled
  bool connection_live_ = false;
  read_coalescing coalescing_;  // fed by every matched message (complete)
};

// One thread's share of the run.
class worker {
 public:
  worker(const run_plan& plan, std::vector<unsigned> client_indices,
         std::vector<std::uint64_t> quotas);
  ~worker();

  // Runs until every client has finished or stop was requested; call on the worker thread.
  void run();

  // Asks the worker to stop early (any thread).
  void request_stop() noexcept { stop_requested_.store(true, std::memory_order_relaxed); }

  // Progress counters published at every tick (any thread may read).
  std::uint64_t published_sent() const noexcept {
    return pub_sent_.load(std::memory_order_relaxed);
  }
  std::uint64_t published_received() const noexcept {
    return pub_received_.load(std::memory_order_relaxed);
  }
  std::uint64_t published_lost() const noexcept {
    return pub_lost_.load(std::memory_order_relaxed);
  }

  counters& shard() noexcept { return shard_; }
  // A handler of this worker's event loop begins: a socket became ready or a timer expired
  // (generator_counters::wakeups). Every system call of the worker's clients is made in one
  // (or in the clients' start), so the first past the warm-up opens the window.
  void count_wakeup() noexcept {
    if (!window_open_) open_window_if_due();
    ++shard_.generator.wakeups;
  }
  syscall_counter& syscalls() noexcept { return shard_.generator.syscalls; }
  const run_plan& plan() const noexcept { return plan_; }
  boost::asio::io_context& io() noexcept { return io_; }
  // Where the clients' sockets wait for readiness.
  readiness_set& readiness() noexcept { return readiness_; }

  // Receive buffers shared by this worker's clients (they run one at a time on this thread).
  std::span<std::uint8_t> scratch(std::size_t i) noexcept;
  static constexpr std::size_t scratch_count = 32;
  static constexpr std::size_t scratch_size = 65536;

  // Connects and TLS handshakes in progress on this thread are capped; a client that finds
  // no room stays idle and retries on the next tick.
  static constexpr unsigned max_connection_setups = 256;
  bool begin_connection_setup() noexcept {
    if (connection_setups_ >= max_connection_setups) return false;
    ++connection_setups_;
    return true;
  }
  void end_connection_setup() noexcept { --connection_setups_; }

  // Open connections of this worker's clients (warm-up included).
  std::uint64_t open_connections = 0;
  // A client's connection opened (+1) or ended (-1): the gauge above, its time-weighted sum
  // over the measured window (connection_counters::open_ns) and the run's maximum.
  void count_open_connection(int delta) noexcept;

  // Coalesced receiving (plan().coalesce_ns): calls `c.read_delayed()` once `delay_ns` is
  // over, in one wake-up with every client that asked before it ended (a client asking
  // while the timer runs joins the batch due then, or brings it forward to its own time, so
  // no client waits longer than it asked).
  void delay_read(client_base& c, std::uint64_t delay_ns);

  // The timeline: counted events are split into rows of plan().interval_ns from the end of
  // the warm-up. Called before an event at `now` is counted; cheap when no row ends.
  void roll_timeline(std::uint64_t now) noexcept {
    if (now >= timeline_next_ns_) close_rows(now);
  }
  // Latencies of the current row's answers.
  latency_histogram row_latency;
  struct row {
    std::uint64_t index = 0;  // intervals since the end of the warm-up
    std::uint64_t sent = 0, answered = 0, lost = 0, failed = 0, not_sent = 0;
    std::uint64_t connections_open = 0, connections_opened = 0, handshakes = 0;
    std::uint64_t handshakes_resumed = 0;  // of handshakes
    query_counts queries;                  // every outcome, for live figures (on_figures)
    std::vector<std::pair<std::uint64_t, std::uint64_t>> latency;  // bucket's lowest, count
    std::uint64_t latency_min = 0, latency_max = 0;
    double latency_sum = 0;
  };
  // Ends the current row at the end of the run (a shorter last row).
  void finish_timeline() noexcept;
  // After the worker ended: its rows.
  const std::vector<row>& timeline() const noexcept { return rows_; }
  // While it runs, from another thread: how many rows are closed (every row of a lower
  // index is final; the run's last, shorter row is not counted), and copies of the rows of
  // index [from, to).
  std::uint64_t rows_closed() const noexcept {
    return rows_closed_.load(std::memory_order_acquire);
  }
  std::vector<row> rows_between(std::uint64_t from, std::uint64_t to) const;

  // Latest time a counted answer arrived, for the measured window.
  std::uint64_t last_answer_ns = 0;
  double thread_cpu_seconds = 0;
  double wall_seconds = 0;

 private:
  // The end of the warm-up: what the generator counted until now is left out of the run's
  // figures (generator_counters). Reads the clock, in the warm-up only.
  void open_window() noexcept;
  void open_window_if_due() noexcept;
  void schedule_tick();
  void on_tick();
  // The readiness set's timer expired (timer_deadlines.hpp): the arrivals and the read delay
  // that are due, then the next arm.
  void on_wake();
  void plan_wake();
  void on_arrival(std::uint64_t now);
  // The program submitted queries, cancelled some or closed the feed (run_plan::feed).
  void on_fed();
  void on_delay_over();
  void close_rows(std::uint64_t now) noexcept;
  // Adds open_connections × the time since the last change, inside the measured window, to
  // open_ns.
  void integrate_connections(std::uint64_t now) noexcept;
  // The run's maximum takes `open` (the run's open connections) when `now` is in the window.
  void note_connections_max(std::uint64_t now, std::uint64_t open) noexcept;
  row cumulative() const noexcept;
  void append_row(const row& now_counts) noexcept;

  const run_plan& plan_;
  boost::asio::io_context io_{1};
  boost::asio::steady_timer tick_timer_;
  timer_deadlines deadlines_;  // next arrival, end of the read delay (the readiness set's timer)
  readiness_set readiness_{io_, shard_.generator.syscalls};  // outlives the clients' sockets
  std::vector<client_base*> delayed_;       // clients whose reads wait for the delays deadline
  std::vector<client_base*> reading_;       // those being served now
  generator_counters generator_at_window_;  // counted before the end of the warm-up
  bool window_open_ = false;
  // Open loop: (next arrival, client) per client with arrivals left, earliest on top; an
  // entry may be earlier than its client's real next arrival (then it is re-queued).
  std::vector<std::pair<std::uint64_t, std::uint32_t>> arrivals_;
  std::vector<std::unique_ptr<client_base>> clients_;
  std::uint64_t timeline_next_ns_ = UINT64_MAX;
  std::uint64_t row_index_ = 0;
  row row_start_;          // the cumulative counts when the current row began
  std::vector<row> rows_;  // appended under rows_mutex_, read by rows_between
  mutable std::mutex rows_mutex_;
  std::atomic<std::uint64_t> rows_closed_{0};
  counters shard_;
  std::vector<std::uint8_t> scratch_;
  std::atomic<bool> stop_requested_{false};
  unsigned connection_setups_ = 0;
  std::uint64_t connections_since_ns_ = 0;  // last change of open_connections
  bool window_max_noted_ = false;           // the open connections at the window's start
  std::atomic<std::uint64_t> pub_sent_{0};
  std::atomic<std::uint64_t> pub_received_{0};
  std::atomic<std::uint64_t> pub_lost_{0};
};

inline const run_plan& client_base::plan() const noexcept {
  return owner_.plan();
}
inline void client_base::count_wakeup() noexcept {
  owner_.count_wakeup();
}
inline bool client_base::delay_next_read() noexcept {
  const std::uint64_t delay = coalescing_.delay_ns(owner_.plan(), slots_.in_flight());
  if (delay == 0) return false;
  ++owner_.shard().generator.reads_delayed;
  owner_.delay_read(*this, delay);
  return true;
}
inline syscall_counter& client_base::syscalls() noexcept {
  return owner_.syscalls();
}
inline query_counters& client_base::counts() noexcept {
  return owner_.shard().queries;
}
inline connection_counters& client_base::connections() noexcept {
  return owner_.shard().connections;
}
inline quic_counters& client_base::quic() noexcept {
  return owner_.shard().quic;
}
inline early_data_counters& client_base::early_counts() noexcept {
  return owner_.shard().early_data;
}
inline bool client_base::measuring(std::uint64_t now) const noexcept {
  return now >= owner_.plan().measure_start_ns;
}
inline void client_base::begin_connection(connection_tally& t, std::uint64_t now) const noexcept {
  t = connection_tally{.started_ns = now, .counted = measuring(now)};
}
inline void client_base::count_on_connection(connection_tally& t, const completion& c,
                                             std::uint64_t end_ns) noexcept {
  if (!c.matched) return;
  const bool overtaken = t.overtaken(c.sequence);
  if (overtaken && t.counted) ++counts().out_of_order;
  // Spacing counts every answer to a query sent after the warm-up (c.answered), on
  // connections opened before it too: persistent connections are opened then.
  const auto spacing = t.space(c.sent_ns, end_ns, !overtaken);
  if (c.answered && spacing.queued) {
    ++counts().queued_answers;
    if (spacing.one_at_a_time) ++counts().one_at_a_time_answers;
  }
  if (!t.counted || !c.answered) return;
  ++connections().answered;
  if (c.first_on_connection) connections().first_query_latency.record(end_ns - t.started_ns);
}

}  // namespace dnstransport::detail
