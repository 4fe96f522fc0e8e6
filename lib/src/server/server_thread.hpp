#pragma once
// Internal: one thread of the built-in responder. Every thread has its own io_context and
// its own SO_REUSEPORT sockets (UDP, TCP, TLS, DoH, DoQ), so the kernel spreads queries and
// connections over threads and nothing is shared between them but the rate limit, when there
// is one (rate_limiter.hpp), and DoQ's 0-RTT anti-replay table (server_doq_context.hpp).

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <thread>
#include <unordered_map>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <dnstransport/server.hpp>

namespace dnstransport::detail {

class tls_server_context;
class stream_acceptor;
class rate_limiter;

struct server_counters {
  std::atomic<std::uint64_t> udp_queries{0};
  std::atomic<std::uint64_t> tcp_queries{0};
  std::atomic<std::uint64_t> tls_queries{0};
  std::atomic<std::uint64_t> doh_queries{0};
  std::atomic<std::uint64_t> doq_queries{0};
  std::atomic<std::uint64_t> doq_early_data{0};
  std::atomic<std::uint64_t> doq_packets_dropped{0};
  std::atomic<std::uint64_t> doq_stateless_resets{0};
  std::atomic<std::uint64_t> doq_retries{0};
  std::atomic<std::uint64_t> connections_accepted{0};
  std::atomic<std::uint64_t> tls_handshakes_failed{0};
  std::atomic<std::uint64_t> tls_resumed{0};
  std::atomic<std::uint64_t> tls_early_data{0};
  std::atomic<std::uint64_t> malformed_queries{0};
  std::atomic<std::uint64_t> rate_limited_dropped{0};
  std::atomic<std::uint64_t> rate_limited_delayed{0};
};

// What the thread knows of a connection it accepted (a server_connection for TCP and TLS,
// a server_doh_connection for DoH): it keeps it alive until the connection calls forget(),
// and sweeps it for idleness.
class accepted_connection {
 public:
  virtual ~accepted_connection() = default;
  virtual void start() = 0;
  // Closes the connection if it has been idle longer than the configured timeout.
  virtual void check_idle(std::uint64_t now) = 0;
};

// A listener with its own socket that runs on the thread's io_context (the DoQ listener):
// started with the thread, destroyed with it.
class thread_listener {
 public:
  virtual ~thread_listener() = default;
  virtual void start() = 0;
};

class server_thread {
 public:
  // `tls` (DoT) and `doh` (the same certificate, ALPN "h2") may be null when that listener
  // is off; `limiter`, shared by every thread, is null without a rate limit.
  server_thread(const server_options& options, tls_server_context* tls, tls_server_context* doh,
                rate_limiter* limiter);
  ~server_thread();

  // Binds the listeners; a port of 0 binds a free port the first time (later threads then
  // pass the chosen port). Throws setup_error naming the address when binding fails.
  std::uint16_t open_udp(const boost::asio::ip::udp::endpoint& where);
  std::uint16_t open_tcp(const boost::asio::ip::tcp::endpoint& where);
  std::uint16_t open_tls(const boost::asio::ip::tcp::endpoint& where);
  std::uint16_t open_doh(const boost::asio::ip::tcp::endpoint& where);

  // Takes a listener that opened its socket on io(); it starts with the thread.
  void add_listener(std::unique_ptr<thread_listener> listener);

  void start(std::optional<int> cpu);
  void stop();

  server_counters counters;
  const server_options& options() const noexcept { return options_; }
  // The responder's rate limit; null when it has none.
  rate_limiter* limiter() const noexcept { return limiter_; }
  boost::asio::io_context& io() noexcept { return io_; }
  void forget(accepted_connection* connection);
  // Where a connection builds one answer before framing it; shared by the thread's
  // connections, which run one at a time.
  std::span<std::uint8_t> answer_scratch() noexcept { return answer_scratch_; }

 private:
  void wait_udp();
  void on_udp_readable();
  void accept(boost::asio::ip::tcp::acceptor& acceptor, stream_acceptor& streams,
              std::atomic<std::uint64_t>& queries);
  void accept_doh();
  void adopt(std::shared_ptr<accepted_connection> connection);
  void schedule_sweep();

  const server_options& options_;
  rate_limiter* const limiter_;
  std::unique_ptr<stream_acceptor> tcp_streams_;
  std::unique_ptr<stream_acceptor> tls_streams_;  // when the responder has TLS
  std::unique_ptr<stream_acceptor> doh_streams_;  // when the responder has DoH
  boost::asio::io_context io_{1};
  std::optional<boost::asio::ip::udp::socket> udp_;
  std::optional<boost::asio::ip::tcp::acceptor> tcp_;
  std::optional<boost::asio::ip::tcp::acceptor> tls_acceptor_;
  std::optional<boost::asio::ip::tcp::acceptor> doh_acceptor_;
  boost::asio::steady_timer sweep_timer_;
  std::unordered_map<accepted_connection*, std::shared_ptr<accepted_connection>> connections_;
  std::vector<std::uint8_t> in_;
  std::vector<std::uint8_t> out_;
  std::vector<std::uint8_t> answer_scratch_;
  std::vector<std::unique_ptr<thread_listener>> listeners_;  // after io_: closed before it
  std::thread thread_;
};

}  // namespace dnstransport::detail
