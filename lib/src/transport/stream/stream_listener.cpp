// The responder's TCP listeners: a SO_REUSEPORT acceptor per thread whose connections
// (server_stream_connection) carry DNS messages over plain TCP or TLS (server_dns_session),
// or what another transport runs over the stream (DoH's HTTP/2).
#include "transport/stream/stream_listener.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <fmt/format.h>

#include <dnstransport/error.hpp>

#include "transport/stream/server_dns_session.hpp"
#include "transport/tls/tls_backend.hpp"

namespace dnstransport::detail {

namespace {

class stream_listener final : public thread_listener {
 public:
  stream_listener(server_thread& thread, transport_kind transport,
                  std::unique_ptr<stream_acceptor> streams, server_session_maker session)
      : thread_(thread),
        transport_(transport),
        streams_(std::move(streams)),
        session_(session),
        acceptor_(thread.io()) {}

  std::uint16_t open(const boost::asio::ip::address& address, std::uint16_t port) override {
    const boost::asio::ip::tcp::endpoint where(address, port);
    boost::system::error_code ec;
    open_shared_port(acceptor_, where, true, ec);
    if (!ec) {
      // Accept data in the SYN from clients using TCP Fast Open (--tcp-fastopen); refused
      // harmlessly where the kernel has it off.
      const int queue = 4096;
      setsockopt(acceptor_.native_handle(), IPPROTO_TCP, TCP_FASTOPEN, &queue, sizeof queue);
      acceptor_.listen(4096, ec);
    }
    if (ec) {
      throw setup_error(fmt::format("cannot listen on {} {}: {}", transport_name(transport_),
                                    describe_endpoint(address, port), ec.message()));
    }
    return acceptor_.local_endpoint().port();
  }

  void start() override { accept(); }

 private:
  void accept() {
    // The peer's address comes with the accept, for the thread's count of its clients.
    acceptor_.async_accept(
        peer_, [this](const boost::system::error_code& ec, boost::asio::ip::tcp::socket socket) {
          if (ec == boost::asio::error::operation_aborted) return;
          if (!ec) {
            thread_.counters.connections_accepted.fetch_add(1, std::memory_order_relaxed);
            thread_.adopt(
                server_stream_connection::make(thread_, make_accepted_socket(std::move(socket)),
                                               *streams_, session_, transport_, peer_.address()));
          }
          accept();
        });
  }

  server_thread& thread_;
  const transport_kind transport_;
  std::unique_ptr<stream_acceptor> streams_;
  const server_session_maker session_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::ip::tcp::endpoint peer_;  // of the connection being accepted
};

}  // namespace

tls_listener_context::tls_listener_context(std::unique_ptr<tls_server_context> context)
    : context_(std::move(context)) {}
tls_listener_context::~tls_listener_context() = default;

std::unique_ptr<listener_shared> share_tls_context(const server_options& /*options*/,
                                                   const tls_server_options& tls) {
  return std::make_unique<tls_listener_context>(make_tls_server_context(tls));
}

std::unique_ptr<thread_listener> make_stream_listener(server_thread& thread,
                                                      transport_kind transport,
                                                      std::unique_ptr<stream_acceptor> streams,
                                                      server_session_maker session) {
  return std::make_unique<stream_listener>(thread, transport, std::move(streams), session);
}

std::unique_ptr<thread_listener> make_tcp_listener(server_thread& thread,
                                                   transport_kind /*transport*/,
                                                   const listener_shared* /*shared*/) {
  return make_stream_listener(thread, transport_kind::tcp, make_tcp_acceptor(),
                              make_server_dns_session);
}

std::unique_ptr<thread_listener> make_tls_listener(server_thread& thread,
                                                   transport_kind /*transport*/,
                                                   const listener_shared* shared) {
  const auto& tls = static_cast<const tls_listener_context&>(*shared);
  return make_stream_listener(thread, transport_kind::tls, make_tls_acceptor(tls.context()),
                              make_server_dns_session);
}

}  // namespace dnstransport::detail
