// A build without AF_XDP (no libxdp, libbpf or clang when it was configured): the setting is
// refused by name.
#include <fmt/format.h>

#include <dnstransport/error.hpp>

#include "transport/xdp/xdp_sockets.hpp"
#include "transport/xdp/xdp_tcp_socket.hpp"

namespace dnstransport::detail {

datagram_socket_factory make_xdp_sockets(const xdp_settings& settings) {
  throw setup_error(
      fmt::format("--xdp {}: this build has no AF_XDP (configured without libxdp, libbpf or clang)",
                  settings.interface));
}

stream_socket_factory make_xdp_tcp_sockets(const xdp_settings& settings) {
  make_xdp_sockets(settings);  // throws
  return {};
}

}  // namespace dnstransport::detail
