// The responder's TCP listeners: a SO_REUSEPORT acceptor per thread whose connections carry
// DNS messages over plain TCP or TLS (server_connection), or HTTP/2 over TLS
// (server_doh_connection).

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <fmt/format.h>
#include <boost/asio/ip/tcp.hpp>

#include <dnstransport/error.hpp>

#include "server/listeners.hpp"
#include "server/server_connection.hpp"
#include "server/server_doh_connection.hpp"
#include "transport/stream/byte_stream.hpp"

namespace dnstransport::detail {

namespace {

class stream_listener final : public thread_listener {
 public:
  stream_listener(server_thread& thread, transport_kind transport, tls_server_context* tls)
      : thread_(thread),
        transport_(transport),
        streams_(tls != nullptr ? make_tls_acceptor(*tls) : make_tcp_acceptor()),
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
    acceptor_.async_accept(
        [this](const boost::system::error_code& ec, boost::asio::ip::tcp::socket socket) {
          if (ec == boost::asio::error::operation_aborted) return;
          if (!ec) {
            thread_.counters.connections_accepted.fetch_add(1, std::memory_order_relaxed);
            thread_.adopt(connection_for(std::move(socket)));
          }
          accept();
        });
  }

  std::shared_ptr<accepted_connection> connection_for(boost::asio::ip::tcp::socket socket) {
    if (transport_ == transport_kind::doh) {
      return std::make_shared<server_doh_connection>(thread_, std::move(socket), *streams_);
    }
    return std::make_shared<server_connection>(thread_, std::move(socket), *streams_,
                                               thread_.counters.queries[transport_],
                                               thread_.edns(transport_));
  }

  server_thread& thread_;
  const transport_kind transport_;
  std::unique_ptr<stream_acceptor> streams_;
  boost::asio::ip::tcp::acceptor acceptor_;
};

}  // namespace

std::unique_ptr<thread_listener> make_stream_listener(server_thread& thread,
                                                      transport_kind transport,
                                                      tls_server_context* tls) {
  return std::make_unique<stream_listener>(thread, transport, tls);
}

}  // namespace dnstransport::detail
