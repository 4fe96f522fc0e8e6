#pragma once
// Internal: the responder's listeners, one per transport and thread. What every thread's
// listeners of a responder share (the TLS contexts, made once from one certificate) is a
// listener_contexts; make_listener builds one transport's listener for one thread. This is
// the one place the responder names its transports.

#include <sys/socket.h>

#include <memory>
#include <string>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/socket_base.hpp>
#include <boost/system/error_code.hpp>

#include <dnstransport/server.hpp>

#include "server/server_thread.hpp"

namespace dnstransport::detail {

class tls_server_context;
class doq_context;

struct listener_contexts {
  listener_contexts();
  ~listener_contexts();
  listener_contexts(listener_contexts&&) noexcept;
  listener_contexts& operator=(listener_contexts&&) noexcept;

  certificate_files certificate;  // in use by the TLS, DoH and DoQ listeners; empty without
  std::unique_ptr<tls_server_context> tls;
  std::unique_ptr<tls_server_context> doh;  // the same certificate, ALPN "h2"
#ifdef DNSTRANSPORT_HAVE_DOQ
  std::unique_ptr<doq_context> doq;  // the same certificate, GnuTLS, ALPN "doq"
#endif
};

// Checks the settings of the listeners `options` asks for and makes what they share: the
// certificate (given, or generated into options.certificate_directory) and the TLS
// contexts. Throws setup_error.
listener_contexts make_listener_contexts(const server_options& options);

// One thread's listener for `transport`, to be opened and handed to the thread.
std::unique_ptr<thread_listener> make_listener(transport_kind transport, server_thread& thread,
                                               const listener_contexts& contexts);

// The listeners make_listener chooses from: UDP (udp_listener.cpp), a TCP acceptor whose
// connections answer DNS messages over plain TCP or TLS (stream_listener.cpp, `transport`
// tcp or tls) or HTTP/2 over TLS (doh), and DoQ (server_doq.hpp).
std::unique_ptr<thread_listener> make_udp_listener(server_thread& thread);
std::unique_ptr<thread_listener> make_stream_listener(server_thread& thread,
                                                      transport_kind transport,
                                                      tls_server_context* tls);

// Opens `socket` (a UDP socket or a TCP acceptor) for `where` and binds it with
// SO_REUSEPORT, so that every responder thread has a socket of its own on the same port;
// SO_REUSEADDR too with `reuse_address`. The first failure is left in `ec`.
template <typename Socket, typename Endpoint>
void open_shared_port(Socket& socket, const Endpoint& where, bool reuse_address,
                      boost::system::error_code& ec) {
  socket.open(where.protocol(), ec);
  if (!ec && reuse_address) socket.set_option(boost::asio::socket_base::reuse_address(true), ec);
  if (ec) return;
  const int one = 1;
  setsockopt(socket.native_handle(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  socket.bind(where, ec);
}

// "127.0.0.1:53", "[::1]:53": an address and port as a message shows them.
std::string describe_endpoint(const boost::asio::ip::address& address, std::uint16_t port);

}  // namespace dnstransport::detail
