#include "util/socket_util.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <netinet/in.h>

#include <cerrno>
#include <cstring>

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

int open_connected_udp(const boost::asio::ip::udp::endpoint& server,
                       const std::optional<boost::asio::ip::address>& source,
                       syscall_counter& syscalls) {
  const int fd =
      ::socket(server.protocol().family(), SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_UDP);
  syscalls.count_calls(1);
  if (fd < 0) return -errno;
  int result = 0;
  if (source) {
    const boost::asio::ip::udp::endpoint local(*source, 0);
    result = ::bind(fd, local.data(), static_cast<socklen_t>(local.size()));
    syscalls.count_calls(1);
  }
  if (result == 0) {
    result = ::connect(fd, server.data(), static_cast<socklen_t>(server.size()));
    syscalls.count_calls(1);
  }
  if (result == 0) return fd;
  const int error = errno;
  ::close(fd);
  syscalls.count_calls(1);
  return -error;
}

boost::asio::ip::address address_of(const sockaddr_storage& socket_address) noexcept {
  namespace ip = boost::asio::ip;
  if (socket_address.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(socket_address);
    return ip::address_v4(ntohl(v4.sin_addr.s_addr));
  }
  if (socket_address.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(socket_address);
    ip::address_v6::bytes_type bytes;
    std::memcpy(bytes.data(), v6.sin6_addr.s6_addr, bytes.size());
    const ip::address_v6 address(bytes);
    if (address.is_v4_mapped()) return ip::make_address_v4(ip::v4_mapped, address);
    return address;
  }
  return {};
}

}  // namespace dnstransport::detail
