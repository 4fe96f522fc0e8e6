#include "util/socket_util.hpp"

#include <sys/socket.h>

#include <cerrno>

#include <fmt/format.h>

namespace dnstransport::detail {

std::string errno_name(int error) {
  switch (error) {
    case ECONNREFUSED:
      return "ECONNREFUSED";
    case ECONNRESET:
      return "ECONNRESET";
    case ECONNABORTED:
      return "ECONNABORTED";
    case ETIMEDOUT:
      return "ETIMEDOUT";
    case EHOSTUNREACH:
      return "EHOSTUNREACH";
    case ENETUNREACH:
      return "ENETUNREACH";
    case EADDRINUSE:
      return "EADDRINUSE";
    case EADDRNOTAVAIL:
      return "EADDRNOTAVAIL";
    case EMFILE:
      return "EMFILE";
    case ENFILE:
      return "ENFILE";
    case ENOBUFS:
      return "ENOBUFS";
    case ENOMEM:
      return "ENOMEM";
    case EPIPE:
      return "EPIPE";
    case EACCES:
      return "EACCES";
    case EPERM:
      return "EPERM";
    case EINVAL:
      return "EINVAL";
    case EMSGSIZE:
      return "EMSGSIZE";
    case EAFNOSUPPORT:
      return "EAFNOSUPPORT";
    case ENETDOWN:
      return "ENETDOWN";
    case EOPNOTSUPP:
      return "EOPNOTSUPP";
    default:
      return fmt::format("E{}", error);
  }
}

void enlarge_socket_buffers(int fd) noexcept {
  const int size = 4 << 20;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
}

boost::system::error_code open_connected_udp(boost::asio::ip::udp::socket& socket,
                                             const boost::asio::ip::udp::endpoint& server,
                                             const std::optional<boost::asio::ip::address>& source,
                                             syscall_counter& syscalls) {
  boost::system::error_code ec;
  socket.open(server.protocol(), ec);
  syscalls.count_calls(1);
  if (!ec && source) {
    socket.bind({*source, 0}, ec);
    syscalls.count_calls(1);
  }
  if (!ec) {
    socket.connect(server, ec);
    syscalls.count_calls(1);
  }
  if (!ec) {
    socket.non_blocking(true, ec);
    syscalls.count_calls(1);
  }
  return ec;
}

}  // namespace dnstransport::detail
