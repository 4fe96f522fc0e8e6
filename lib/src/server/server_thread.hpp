#pragma once
// Internal: one thread of the built-in responder. Every thread has its own io_context and
// its own SO_REUSEPORT sockets (UDP, TCP, TLS), so the kernel spreads queries and
// connections over threads and nothing is shared between them.

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
class server_connection;
class stream_acceptor;

struct server_counters {
  std::atomic<std::uint64_t> udp_queries{0};
  std::atomic<std::uint64_t> tcp_queries{0};
  std::atomic<std::uint64_t> tls_queries{0};
  std::atomic<std::uint64_t> connections_accepted{0};
  std::atomic<std::uint64_t> tls_handshakes_failed{0};
  std::atomic<std::uint64_t> tls_resumed{0};
  std::atomic<std::uint64_t> malformed_queries{0};
};

class server_thread {
 public:
  server_thread(const server_options& options, tls_server_context* tls);
  ~server_thread();

  // Binds the listeners; a port of 0 binds a free port the first time (later threads then
  // pass the chosen port). Throws setup_error naming the address when binding fails.
  std::uint16_t open_udp(const boost::asio::ip::udp::endpoint& where);
  std::uint16_t open_tcp(const boost::asio::ip::tcp::endpoint& where);
  std::uint16_t open_tls(const boost::asio::ip::tcp::endpoint& where);

  void start(std::optional<int> cpu);
  void stop();

  server_counters counters;
  const server_options& options() const noexcept { return options_; }
  boost::asio::io_context& io() noexcept { return io_; }
  void forget(server_connection* connection);
  // Where a connection builds one answer before framing it; shared by the thread's
  // connections, which run one at a time.
  std::span<std::uint8_t> answer_scratch() noexcept { return answer_scratch_; }

 private:
  void wait_udp();
  void on_udp_readable();
  void accept(boost::asio::ip::tcp::acceptor& acceptor, stream_acceptor& streams,
              std::atomic<std::uint64_t>& queries);
  void schedule_sweep();

  const server_options& options_;
  std::unique_ptr<stream_acceptor> tcp_streams_;
  std::unique_ptr<stream_acceptor> tls_streams_;  // when the responder has TLS
  boost::asio::io_context io_{1};
  std::optional<boost::asio::ip::udp::socket> udp_;
  std::optional<boost::asio::ip::tcp::acceptor> tcp_;
  std::optional<boost::asio::ip::tcp::acceptor> tls_acceptor_;
  boost::asio::steady_timer sweep_timer_;
  std::unordered_map<server_connection*, std::shared_ptr<server_connection>> connections_;
  std::vector<std::uint8_t> in_;
  std::vector<std::uint8_t> out_;
  std::vector<std::uint8_t> answer_scratch_;
  std::thread thread_;
};

}  // namespace dnstransport::detail
