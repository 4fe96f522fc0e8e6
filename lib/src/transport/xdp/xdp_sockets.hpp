#pragma once
// Internal: DNS over UDP (and TCP: xdp_tcp_socket.hpp) from AF_XDP sockets
// (generator_settings::xdp_interface): the UDP client's datagram_socket
// (transport/udp/datagram_socket.hpp) made of frames the library writes and reads itself
// (xdp_frames.hpp), so the engine and the UDP client are those of the kernel path. The run attaches
// an XDP program to the interface that sends the server's answers to the AF_XDP socket of their
// queue (xdp_program.hpp), and opens one socket on each of the interface's receive queues
// (xdp_port.hpp); each worker thread sends through one and the queues are read by the workers still
// running (xdp_run.hpp); each client has a source port of its own.

#include <optional>
#include <string>

#include <boost/asio/ip/address.hpp>

#include "transport/udp/datagram_socket.hpp"

namespace dnstransport::detail {

struct xdp_settings {
  // How errors name the settings (error.hpp's setting(): load_spec::generator.xdp_interface
  // and xdp_gateway_mac).
  std::string setting;
  std::string gateway_setting;
  std::string threads_setting;  // load_spec::generator.threads
  std::string interface;
  std::string server;  // a host name or an address, as load_spec::target.server
  std::uint16_t port = 53;
  // The MAC address to send to, "02:00:00:00:00:01" (empty: the server's, from the kernel's
  // neighbour table).
  std::string gateway_mac;
  unsigned threads = 1;  // worker threads: at most the interface's receive queues
  bool tcp = false;      // DNS over TCP (xdp_tcp_socket.hpp), not UDP
};

// The sockets of one run: attaches the program and opens the AF_XDP sockets now; throws
// setup_error naming --xdp (no such interface, not root, fewer queues than threads, an XDP
// program there already, no MAC address for the server). The program is detached and the sockets
// closed once the factory and every socket it made are gone.
datagram_socket_factory make_xdp_sockets(const xdp_settings& settings);

}  // namespace dnstransport::detail
