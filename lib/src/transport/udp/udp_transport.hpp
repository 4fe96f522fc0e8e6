#pragma once
// Internal: DNS over UDP as a transport of the engine: one connected socket per client.

#include <memory>

#include "engine/engine.hpp"
#include "transport/udp/datagram_socket.hpp"

namespace dnstransport::detail {

class stream_transport;

// `tc_retry` (may be null): the stream transport over which each client retries the queries
// whose answers came back truncated, as a stub resolver would; null counts them `truncated`.
// `sockets`: what each client's socket is; UDP sockets unless a test scripts them.
std::unique_ptr<client_transport> make_udp_transport(
    std::unique_ptr<stream_transport> tc_retry, datagram_socket_factory sockets = make_udp_socket);

}  // namespace dnstransport::detail
