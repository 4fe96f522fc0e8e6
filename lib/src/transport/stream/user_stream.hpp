#pragma once
// Internal: a program's own stream transport (dnstransport/user_transport.hpp) as the
// stream layer's byte_stream, so that the stream client and the responder's stream
// connections run it as they run DNS over TCP.

#include <memory>

#include <dnstransport/user_transport.hpp>

#include "transport/stream/byte_stream.hpp"

namespace dnstransport::detail {

// `user` outlives the connector and its streams (a registered transport is kept for the
// program's life).
std::unique_ptr<stream_connector> make_user_connector(const user_transport& user);
// Null when the transport gives no server side.
std::unique_ptr<stream_acceptor> make_user_acceptor(const user_transport& user);

}  // namespace dnstransport::detail
