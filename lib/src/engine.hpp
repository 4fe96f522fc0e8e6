#pragma once
// Internal: the load engine. A run is split into per-thread workers; each worker owns an
// io_context, its clients and a result shard, and touches nothing shared per query. Clients
// (UDP, or stream for TCP and TLS) share the per-query accounting in client_base.

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <dnstransport/load.hpp>

#include "slot_table.hpp"

namespace dnstransport::detail {

class tls_client_context;

// Everything the workers share, read-only once the run starts.
struct run_plan {
  const load_spec* spec = nullptr;
  const query_set* queries = nullptr;
  boost::asio::ip::address server_address;
  std::uint16_t server_port = 0;
  std::vector<boost::asio::ip::address> sources;  // source addresses to spread clients over
  tls_client_context* tls = nullptr;

  std::uint64_t start_ns = 0;
  std::uint64_t measure_start_ns = 0;  // end of the warm-up
  std::uint64_t send_end_ns = 0;       // no new query after this (UINT64_MAX: count mode)
  std::uint64_t timeout_ns = 0;
  double rate_per_client = 0;  // queries per second; 0: no limit
};

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
  bool finished(std::uint64_t now) const noexcept { return slots_.empty() && !may_send(now); }

 protected:
  // How many queries may be sent right now (free slots, quota, rate, phase).
  std::uint32_t send_allowance(std::uint64_t now) const noexcept;
  bool may_send(std::uint64_t now) const noexcept;

  // Takes a slot for the next query; the caller sends it.
  slot_table::slot& take_slot(std::uint64_t now) noexcept;
  // Undoes take_slot for a query the kernel did not accept.
  void return_slot(slot_table::slot& s) noexcept;

  // Classifies one received message and completes its query when it matches one.
  struct completion {
    bool matched = false;
    std::uint64_t sequence = 0;
    bool first_on_connection = false;
  };
  completion on_message(std::span<const std::uint8_t> message, std::uint64_t now) noexcept;

  // Counts every query sent before `now - timeout` as lost.
  void expire(std::uint64_t now) noexcept;

  // Counts every query in flight as lost on close (stream closed or reset), or abandoned.
  void fail_in_flight(bool abandoned) noexcept;

  const run_plan& plan() const noexcept;
  run_result& shard() noexcept;

  worker& owner_;
  unsigned index_;
  slot_table slots_;
  std::uint32_t next_query_;
  std::uint64_t quota_;  // queries left to send in count mode (UINT64_MAX: unlimited)
  std::uint64_t sent_ = 0;
  double pace_phase_;  // in [0, 1): where in each pacing interval this client's queries fall
};

// One thread's share of the run.
class worker {
 public:
  worker(const run_plan& plan, unsigned index, std::vector<unsigned> client_indices,
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

  run_result& shard() noexcept { return shard_; }
  const run_plan& plan() const noexcept { return plan_; }
  boost::asio::io_context& io() noexcept { return io_; }

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

  // Latest time a counted answer arrived, for the measured window.
  std::uint64_t last_answer_ns = 0;
  double thread_cpu_seconds = 0;
  double wall_seconds = 0;

 private:
  void schedule_tick();
  void on_tick();

  const run_plan& plan_;
  unsigned index_;
  boost::asio::io_context io_{1};
  boost::asio::steady_timer tick_timer_;
  std::vector<std::unique_ptr<client_base>> clients_;
  run_result shard_;
  std::vector<std::uint8_t> scratch_;
  std::atomic<bool> stop_requested_{false};
  unsigned connection_setups_ = 0;
  std::atomic<std::uint64_t> pub_sent_{0};
  std::atomic<std::uint64_t> pub_received_{0};
  std::atomic<std::uint64_t> pub_lost_{0};
};

inline const run_plan& client_base::plan() const noexcept {
  return owner_.plan();
}
inline run_result& client_base::shard() noexcept {
  return owner_.shard();
}

// Factories per transport.
std::unique_ptr<client_base> make_udp_client(worker& owner, unsigned index, std::uint64_t quota);
std::unique_ptr<client_base> make_stream_client(worker& owner, unsigned index, std::uint64_t quota);

}  // namespace dnstransport::detail
