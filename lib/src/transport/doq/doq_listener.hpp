#pragma once
// Internal: the responder's half of DNS over QUIC, as the registry makes it: one
// doq_listener per thread (server_doq.hpp), sharing one doq_context (GnuTLS, ALPN "doq",
// the 0-RTT anti-replay table).

#include <memory>

#include "responder/listener.hpp"

namespace dnstransport::detail {

// Refuses no streams per connection.
void check_doq_listener(const server_options& options);
std::unique_ptr<listener_shared> share_doq_context(const server_options& options,
                                                   const tls_server_options& tls);
std::unique_ptr<thread_listener> make_doq_listener(server_thread& thread,
                                                   transport_kind /*transport*/,
                                                   const listener_shared* shared);

}  // namespace dnstransport::detail
