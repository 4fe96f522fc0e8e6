#pragma once
// Internal: DNS over a byte stream as a transport of the engine: plain TCP (RFC 7766) or TLS
// (RFC 7858), whichever the connector opens. Its clients keep up to `outstanding` queries in
// flight per connection and replace the connection after queries_per_connection queries.

#include <cstdint>
#include <memory>

#include "engine/engine.hpp"
#include "transport/stream/byte_stream.hpp"
#include "transport/stream/stream_socket.hpp"

namespace dnstransport::detail {

// What the stream transport needs from the run's settings.
struct stream_settings {
  std::uint64_t queries_per_connection = 0;  // then the client reconnects; 0: never
  bool close_with_rst = false;               // abortive close (SO_LINGER 0) instead of FIN
  bool tcp_nodelay = true;
  bool tcp_fastopen = false;  // first query in the SYN where the kernel allows
  bool resume = false;        // offer the newest session ticket when reconnecting (TLS)
  // Close a connection idle for the edns-tcp-keepalive timeout its answers advertised.
  bool honour_keepalive = false;
  // Close a connection with nothing in flight or to send for this long; the next query
  // opens a new one. 0: never.
  std::uint64_t idle_timeout_ns = 0;
};

class stream_transport final : public client_transport {
 public:
  // `make_socket`: what a client's connections run on; TCP sockets unless a test scripts them.
  stream_transport(const stream_settings& settings, std::unique_ptr<stream_connector> connector,
                   stream_socket_factory make_socket = make_tcp_socket)
      : settings_(settings),
        connector_(std::move(connector)),
        make_socket_(std::move(make_socket)) {}

  std::unique_ptr<client_base> make_client(worker& owner, unsigned index,
                                           std::uint64_t quota) const override;
  // A client that sends only the queries `feeder` hands it (UDP's retries of truncated
  // answers), and keeps its connection while the feeder may still hand it some.
  std::unique_ptr<client_base> make_retry_client(worker& owner, unsigned index,
                                                 const client_base& feeder) const;

  const stream_settings& settings() const noexcept { return settings_; }
  stream_connector& connector() const noexcept { return *connector_; }
  std::pair<std::uint64_t, std::uint64_t> certificate_checks() const override {
    const verified_chains::counts c = connector_->certificate_checks();
    return {c.verified, c.reused};
  }
  std::unique_ptr<stream_socket> make_socket(readiness_set& readiness,
                                             stream_socket::ready_callback on_ready,
                                             syscall_counter& syscalls) const {
    return make_socket_(readiness, std::move(on_ready), syscalls);
  }

 private:
  stream_settings settings_;
  std::unique_ptr<stream_connector> connector_;
  stream_socket_factory make_socket_;
};

}  // namespace dnstransport::detail
