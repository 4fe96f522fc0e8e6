#pragma once
// Internal: the responder's half of DNS over HTTPS (doh_listener.cpp): the stream listener's
// TLS acceptor (ALPN "h2") whose connections run an HTTP/2 server session
// (server_doh_session).

#include <memory>

#include "responder/listener.hpp"

namespace dnstransport::detail {

// Refuses a path that is not absolute or has a query, and no streams per connection.
void check_doh_listener(const server_options& options);
// The TLS context of the DoH listeners: the responder's certificate, ALPN "h2".
std::unique_ptr<listener_shared> share_doh_context(const server_options& options,
                                                   const tls_server_options& tls);
std::unique_ptr<thread_listener> make_doh_listener(server_thread& thread,
                                                   transport_kind /*transport*/,
                                                   const listener_shared* shared);

}  // namespace dnstransport::detail
