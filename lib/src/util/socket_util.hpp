#pragma once
// Internal: socket helpers shared by clients and the responder.

#include <sys/socket.h>

#include <optional>
#include <string>

#include <boost/asio/ip/udp.hpp>
#include <boost/system/error_code.hpp>

#include "util/syscall_counter.hpp"

namespace dnstransport::detail {

// "ECONNREFUSED" for an errno value (the symbolic name users search for), "E<n>" otherwise.
std::string errno_name(int error);

// Asks for large socket buffers so bursts of answers are not dropped by the kernel (capped
// by net.core.rmem_max / wmem_max; a refusal is harmless).
void enlarge_socket_buffers(int fd) noexcept;

// Opens a client's connected, non-blocking UDP socket towards `server`: socket (created
// non-blocking and close-on-exec), bind (only with a `source` address, on an ephemeral port)
// and connect, each counted in `syscalls` as it is made, stopping at the first that fails.
// Returns the descriptor, or minus the errno of the call that failed (the socket is then
// closed, also counted).
int open_connected_udp(const boost::asio::ip::udp::endpoint& server,
                       const std::optional<boost::asio::ip::address>& source,
                       syscall_counter& syscalls);

// The address of an IPv4 or IPv6 socket address (an IPv4-mapped IPv6 one as IPv4); the
// unspecified address for another family.
boost::asio::ip::address address_of(const sockaddr_storage& socket_address) noexcept;

}  // namespace dnstransport::detail
