#pragma once
// Internal: a stream client's TCP connection over AF_XDP (DNS over TCP, --xdp): the
// stream_socket (transport/stream/stream_socket.hpp) whose connection runs in user space on
// its worker's side of the run (xdp_tcp_connections.hpp), and the plain byte stream over it,
// so the stream client, its connections, queries and counters are those of the kernel path.
// A connection gets a source port of its own; the client's next connection another, or the
// same once the previous one has finished.

#include <cstdint>
#include <memory>
#include <optional>

#include "transport/stream/stream_socket.hpp"
#include "transport/xdp/xdp_tcp_connection.hpp"

namespace dnstransport::detail {

class readiness_set;
class xdp_run;
class xdp_worker;

class xdp_tcp_socket final : public stream_socket {
 public:
  xdp_tcp_socket(std::shared_ptr<xdp_run> run, readiness_set& readiness, ready_callback on_ready,
                 syscall_counter& syscalls);
  ~xdp_tcp_socket() override;

  tcp_dial connect(const boost::asio::ip::tcp::endpoint& server,
                   const tcp_dial_options& options) override;
  int connect_error() override;
  // A plain TCP stream over the connection; the connector (plain TCP: the registry allows no
  // other over AF_XDP) is not used.
  std::unique_ptr<byte_stream> open_stream(stream_connector& connector,
                                           const tls_ticket* resume_from,
                                           std::unique_ptr<byte_stream> spare) override;
  int send_prefix(std::span<const std::uint8_t> bytes) override;
  void async_wait(bool readable, std::uint64_t generation) override;
  bool syn_data_accepted() override { return false; }  // no Fast Open over AF_XDP
  std::optional<std::uint64_t> established() override;
  bool is_open() const override { return port_.has_value(); }
  void close(bool abortive) override;

  // From the connections' table, on the worker's thread: what the connection's last
  // segments changed.
  void on_events(const xdp_tcp_connection::events& events);

  // For its stream.
  xdp_tcp_connection* connection() noexcept;
  std::size_t write(std::span<const iovec> pieces);
  std::uint64_t newest_arrival() const noexcept;  // CLOCK_REALTIME, ns; 0: none

 private:
  void call_later(bool readable, std::uint64_t token, bool ok);
  bool read_ready() noexcept;
  bool write_ready() noexcept;

  std::shared_ptr<xdp_run> run_;
  readiness_set& readiness_;
  ready_callback on_ready_;
  syscall_counter& syscalls_;
  xdp_worker* worker_ = nullptr;  // from the first connection on
  std::optional<std::uint16_t> port_;
  bool waiting_read_ = false;
  bool waiting_write_ = false;
  std::uint64_t read_token_ = 0;
  std::uint64_t write_token_ = 0;
};

// The stream sockets of a run of DNS over TCP over AF_XDP (xdp_sockets.hpp's settings).
stream_socket_factory make_xdp_tcp_sockets(const struct xdp_settings& settings);

}  // namespace dnstransport::detail
