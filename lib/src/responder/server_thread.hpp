#pragma once
// Internal: one thread of the built-in responder. Every thread has its own io_context and
// its own SO_REUSEPORT socket per listener (listeners.hpp), so the kernel spreads queries and
// connections over threads and nothing is shared between them but the rate limit, when there
// is one (rate_limiter.hpp), the limits per client address (client_rate_limits.hpp), and
// DoQ's 0-RTT anti-replay table (server_doq_context.hpp).

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <thread>
#include <unordered_map>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/steady_timer.hpp>

#include <dnstransport/server.hpp>

#include "responder/client_rate_limits.hpp"
#include "responder/responder.hpp"

namespace dnstransport::detail {

// Spins until the calling thread's CPU clock (CLOCK_THREAD_CPUTIME_ID) has advanced by `ns`:
// CPU spent, not time waited, however often the thread is preempted meanwhile. 0: returns.
void spend_thread_cpu(std::uint64_t ns) noexcept;

struct server_counters {
  per_transport<std::atomic<std::uint64_t>> queries;  // answered, per listener
  std::atomic<std::uint64_t> doq_early_data{0};
  std::atomic<std::uint64_t> doq_packets_dropped{0};
  std::atomic<std::uint64_t> doq_stateless_resets{0};
  std::atomic<std::uint64_t> doq_retries{0};
  std::atomic<std::uint64_t> doq_connections_ended{0};
  std::atomic<std::uint64_t> connections_accepted{0};
  std::atomic<std::uint64_t> tls_handshakes_failed{0};
  std::atomic<std::uint64_t> tls_resumed{0};
  std::atomic<std::uint64_t> tls_early_data{0};
  std::atomic<std::uint64_t> malformed_queries{0};
  std::atomic<std::uint64_t> rate_limited_dropped{0};
  std::atomic<std::uint64_t> rate_limited_delayed{0};
  std::atomic<std::uint64_t> proxy_headers{0};
  std::atomic<std::uint64_t> proxy_refused{0};
};

// What the thread knows of a connection it accepted (a server_stream_connection for TCP,
// TLS and DoH): it keeps it alive until the connection calls forget(),
// and sweeps it for idleness.
class accepted_connection {
 public:
  virtual ~accepted_connection() = default;
  virtual void start() = 0;
  // Closes the connection if it has been idle longer than the configured timeout.
  virtual void check_idle(std::uint64_t now) = 0;
};

// One transport's listener on one thread (listeners.hpp makes them): its own socket on the
// thread's io_context, opened before the thread starts, started with it, destroyed with it.
class thread_listener {
 public:
  virtual ~thread_listener() = default;
  // Binds the socket; port 0 binds a free port (later threads then pass the chosen one).
  // Returns the port. Throws setup_error naming the address when binding fails.
  virtual std::uint16_t open(const boost::asio::ip::address& address, std::uint16_t port) = 0;
  virtual void start() = 0;
};

// What a thread knows of one client address: the answers it sent it, and the address's own
// limit (server_options::rate_limit_per_client; null without one).
struct client_record {
  std::uint64_t answers = 0;
  rate_limiter* limit = nullptr;
};

class server_thread {
 public:
  // `limiter` and `per_client`, shared by every thread, are null without a rate limit and
  // without a limit per client.
  server_thread(const server_options& options, rate_limiter* limiter,
                client_rate_limits* per_client);
  ~server_thread();

  // Takes a listener that opened its socket on io(); it starts with the thread.
  void add_listener(std::unique_ptr<thread_listener> listener);

  void start(std::optional<int> cpu);
  void stop();

  server_counters counters;
  const server_options& options() const noexcept { return options_; }
  // The responder's rate limit; null when it has none.
  rate_limiter* limiter() const noexcept { return limiter_; }
  boost::asio::io_context& io() noexcept { return io_; }
  // Keeps a connection a listener accepted alive (and swept for idleness) and starts it.
  void adopt(std::shared_ptr<accepted_connection> connection);
  void forget(accepted_connection* connection);
  // Where a connection builds one answer before framing it; shared by the thread's
  // connections, which run one at a time.
  std::span<std::uint8_t> answer_scratch() noexcept { return answer_scratch_; }
  // What answers over `transport` give back to the queries' EDNS options.
  const answer_edns& edns(transport_kind transport) const noexcept { return edns_[transport]; }
  // The known cost (server_options::cost_answer_us, cost_handshake_us), spent on this thread's
  // CPU: every listener calls the first with the answers it just built, the second when a
  // connection's set-up completed (TCP accepted, TLS or QUIC handshake done). Nothing when 0.
  void spend_answer_cost(std::uint64_t answers) const noexcept {
    if (answer_cost_ns_ != 0 && answers != 0) spend_thread_cpu(answer_cost_ns_ * answers);
  }
  void spend_handshake_cost() const noexcept { spend_thread_cpu(handshake_cost_ns_); }

  // A client address (the address a PROXY header claimed, where one was read) and what the
  // thread knows of it: the thread's own table, read by server::stats() once the thread has
  // stopped. A record stays where it is while the table grows, so a connection keeps a
  // pointer to its own; its limit is looked up in the shared table once per thread.
  client_record& client(const boost::asio::ip::address& address);
  // The limits an answer to `client` is under.
  answer_limits limits(const client_record& client) const noexcept {
    return {limiter_, client.limit};
  }
  const std::unordered_map<boost::asio::ip::address, client_record>& clients() const noexcept {
    return clients_;
  }
  // Set once stop() joined the thread: its clients() are then final, and visible to any
  // thread that sees this true.
  bool stopped() const noexcept { return stopped_.load(std::memory_order_acquire); }

 private:
  void schedule_sweep();

  const server_options& options_;
  rate_limiter* const limiter_;
  client_rate_limits* const per_client_;
  const per_transport<answer_edns> edns_;
  const std::uint64_t answer_cost_ns_;
  const std::uint64_t handshake_cost_ns_;
  boost::asio::io_context io_{1};
  boost::asio::steady_timer sweep_timer_;
  std::unordered_map<accepted_connection*, std::shared_ptr<accepted_connection>> connections_;
  std::vector<std::uint8_t> answer_scratch_;
  std::unordered_map<boost::asio::ip::address, client_record> clients_;
  std::atomic<bool> stopped_{false};
  std::vector<std::unique_ptr<thread_listener>> listeners_;  // after io_: closed before it
  std::thread thread_;
};

}  // namespace dnstransport::detail
