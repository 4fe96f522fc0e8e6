#pragma once
// Internal: what a transport gives the responder (its listener half, beside its client in
// transport/<name>/) and the helpers its listeners share. A transport registers a
// listener_factory with its client (registry/transports.cpp); server/ makes, from the settings,
// what every thread's listener of it shares once, then one listener per thread.

#include <sys/socket.h>

#include <cstdint>
#include <memory>
#include <string>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/socket_base.hpp>
#include <boost/system/error_code.hpp>

#include <dnstransport/server.hpp>
#include <dnstransport/tls.hpp>

#include "responder/server_thread.hpp"

namespace dnstransport::detail {

// What every thread's listener of one transport shares (a TLS context), made once.
class listener_shared {
 public:
  virtual ~listener_shared() = default;
};

struct listener_factory {
  // Throws setup_error for settings of its own that do not hold (null: it has none).
  void (*check)(const server_options& options) = nullptr;
  // What its listeners share, from the settings and the responder's certificate (in
  // `tls`); null: they share nothing and need no certificate.
  std::unique_ptr<listener_shared> (*share)(const server_options& options,
                                            const tls_server_options& tls) = nullptr;
  // One thread's listener of `transport`, to be opened and handed to the thread; `shared`
  // is what share made (null without share). Null: the responder cannot listen for it.
  std::unique_ptr<thread_listener> (*make)(server_thread& thread, transport_kind transport,
                                           const listener_shared* shared) = nullptr;
};

// Opens `socket` (a UDP socket or a TCP acceptor) for `where` and binds it with
// SO_REUSEPORT, so that every responder thread has a socket of its own on the same port;
// SO_REUSEADDR too with `reuse_address`. The first failure is left in `ec`.
//
// Port 0 (a free port) is bound before SO_REUSEPORT is set: Linux gives a SO_REUSEPORT
// socket bound to port 0 a port that another process's SO_REUSEPORT sockets of the same user
// may already hold (about 1 pair in 3,000 for UDP), and the two responders would then share
// each other's queries. Without SO_REUSEPORT at bind, the port is one nobody holds; the
// option set after the bind still lets the other threads' sockets join it.
template <typename Socket, typename Endpoint>
void open_shared_port(Socket& socket, const Endpoint& where, bool reuse_address,
                      boost::system::error_code& ec) {
  socket.open(where.protocol(), ec);
  if (!ec && reuse_address) socket.set_option(boost::asio::socket_base::reuse_address(true), ec);
  if (ec) return;
  const int one = 1;
  const bool any_port = where.port() == 0;
  if (!any_port) setsockopt(socket.native_handle(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  socket.bind(where, ec);
  if (!ec && any_port) {
    setsockopt(socket.native_handle(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  }
}

// "127.0.0.1:53", "[::1]:53": an address and port as a message shows them.
std::string describe_endpoint(const boost::asio::ip::address& address, std::uint16_t port);

}  // namespace dnstransport::detail
