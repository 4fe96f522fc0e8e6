#pragma once
// Internal: one worker's TCP connections over AF_XDP (xdp_tcp_connection.hpp), by source
// port. A connection outlives its client's socket (xdp_tcp_socket.hpp) until it has
// finished: after the client closes it, its FIN is sent and acknowledged here, and the
// server's is acknowledged, before its port is used again. A segment for a port with no
// connection is answered with a reset, as the kernel would (a SYN-ACK that comes after the
// client gave up).
//
// Segments go out through the worker's send port, each written into a frame at once and
// handed to the kernel together at the end of what the worker is doing (one kick per read
// or call, not per segment). Retransmissions run on one timer of the worker's io_context,
// armed for the earliest deadline of its connections; a segment that found no free frame
// goes again a millisecond later, not after the retransmission timeout.

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <vector>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/steady_timer.hpp>

#include "transport/xdp/xdp_frames.hpp"
#include "transport/xdp/xdp_tcp_connection.hpp"

namespace dnstransport::detail {

class xdp_port;
class xdp_run;
class xdp_tcp_socket;
class xdp_worker;
struct syscall_counter;

class xdp_tcp_connections {
 public:
  xdp_tcp_connections(xdp_run& run, xdp_worker& worker, xdp_port& sender,
                      boost::asio::io_context& io, syscall_counter& syscalls);
  ~xdp_tcp_connections();
  xdp_tcp_connections(const xdp_tcp_connections&) = delete;
  xdp_tcp_connections& operator=(const xdp_tcp_connections&) = delete;

  // A new connection of `socket` from `source` (the run's own when none): a free port (one
  // of the worker's whose connection finished, or a new one of the run's), its SYN sent.
  // Returns the port, or nothing when no port is left (or `source` is of another family).
  std::optional<std::uint16_t> open(xdp_tcp_socket& socket,
                                    const std::optional<boost::asio::ip::address>& source);
  // The socket lets go of its connection: closed (FIN, or RST with `abortive`), then
  // forgotten once finished.
  void release(std::uint16_t port, bool abortive);

  xdp_tcp_connection& connection(std::uint16_t port) noexcept { return slots_[port]->connection; }
  std::uint64_t newest_arrival(std::uint16_t port) const noexcept {
    return slots_[port]->newest_arrival;
  }
  // Writes on `port`'s connection (its socket's stream, a PROXY header).
  std::size_t write(std::uint16_t port, std::span<const iovec> pieces);

  // From the worker's read: a segment for `port` (the caller checked its address).
  void receive(std::uint16_t port, const tcp_header& header, std::span<const std::uint8_t> payload,
               std::uint64_t received_ns);
  // After the read: the sockets with news are called back, the ACKs still owed sent, and
  // every segment written handed to the kernel.
  void after_read();

 private:
  static constexpr std::size_t not_active = ~std::size_t{0};
  struct slot final : segment_sink {
    slot(xdp_tcp_connections& owner, std::uint16_t mss) : table(owner), connection(mss) {}
    bool send_segment(const tcp_header& header, std::span<const iovec> payload) override;
    xdp_tcp_connections& table;
    xdp_tcp_connection connection;
    frame_addresses to;
    xdp_tcp_socket* socket = nullptr;  // null once its client let go
    xdp_tcp_connection::events pending;
    bool touched = false;                // in touched_
    bool stalled = false;                // in stalled_
    std::size_t active_at = not_active;  // in active_
    std::uint64_t newest_arrival = 0;    // CLOCK_MONOTONIC, of the last segment taken
    std::uint32_t next_iss = 0;          // the next connection's on this port
  };

  bool send(const frame_addresses& to, const tcp_header& header, std::span<const iovec> payload);
  void stall(std::uint16_t port);
  void reset_stray(std::uint16_t port, const tcp_header& header, std::size_t payload_size);
  void touch(std::uint16_t port);
  void settle(std::uint16_t port);
  void arm_timer(std::uint64_t at);
  void on_timer();
  void kick();

  xdp_run& run_;
  xdp_worker& worker_;
  xdp_port& sender_;
  syscall_counter& syscalls_;
  boost::asio::steady_timer timer_;
  std::optional<std::uint64_t> timer_at_;
  std::uint16_t mss_;
  std::vector<std::unique_ptr<slot>> slots_;  // by source port: this worker's
  std::vector<std::uint16_t> free_ports_;     // the worker's, connection finished
  std::vector<std::uint16_t> active_;         // ports with a connection not finished
  std::vector<std::uint16_t> touched_;        // ports with news since the last after_read
  std::vector<std::uint16_t> stalled_;        // ports whose segment found no free frame
  bool dispatching_ = false;                  // in receive / after_read: kick at the end
  bool sent_ = false;                         // frames handed since the last kick
  std::mt19937 random_;                       // first sequence numbers
  // The timer's handler does nothing once the table is gone (a handler already queued).
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace dnstransport::detail
