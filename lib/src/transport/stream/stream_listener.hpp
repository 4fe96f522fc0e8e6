#pragma once
// Internal: the responder's half of the stream transports (stream_listener.cpp): a
// SO_REUSEPORT acceptor per thread whose connections (server_stream_connection) carry DNS
// messages with a length prefix over plain TCP or TLS (server_dns_session). DoH's listener
// is this acceptor with a session of its own (transport/doh/doh_listener.cpp).

#include <memory>

#include <boost/asio/ip/tcp.hpp>

#include "responder/listener.hpp"
#include "transport/stream/byte_stream.hpp"
#include "transport/stream/server_stream_connection.hpp"

namespace dnstransport::detail {

class tls_server_context;

// What the TLS listeners share: the server context made from the responder's certificate.
class tls_listener_context final : public listener_shared {
 public:
  explicit tls_listener_context(std::unique_ptr<tls_server_context> context);
  ~tls_listener_context() override;
  tls_server_context& context() const noexcept { return *context_; }

 private:
  std::unique_ptr<tls_server_context> context_;
};
std::unique_ptr<listener_shared> share_tls_context(const server_options& options,
                                                   const tls_server_options& tls);

// The acceptor of `transport` on one thread: each connection's stream (plain or TLS) made
// by `streams`, its session by `session`.
std::unique_ptr<thread_listener> make_stream_listener(server_thread& thread,
                                                      transport_kind transport,
                                                      std::unique_ptr<stream_acceptor> streams,
                                                      server_session_maker session);

std::unique_ptr<thread_listener> make_tcp_listener(server_thread& thread,
                                                   transport_kind /*transport*/,
                                                   const listener_shared* shared);
// `shared` is the tls_listener_context share_tls_context made.
std::unique_ptr<thread_listener> make_tls_listener(server_thread& thread,
                                                   transport_kind /*transport*/,
                                                   const listener_shared* shared);

}  // namespace dnstransport::detail
