#include "util/socket_util.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include <gtest/gtest.h>

namespace dnstransport::detail {
namespace {

namespace ip = boost::asio::ip;

// A UDP connect only sets the peer: nothing needs to listen on the port.
const ip::udp::endpoint server(ip::make_address("127.0.0.1"), 53);

sockaddr_in address_of(int fd, bool peer) {
  sockaddr_in a{};
  socklen_t size = sizeof a;
  if (peer) {
    getpeername(fd, reinterpret_cast<sockaddr*>(&a), &size);
  } else {
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &size);
  }
  return a;
}

TEST(socket_util_test, a_client_socket_costs_socket_and_connect) {
  syscall_counter counter;
  const int fd = open_connected_udp(server, std::nullopt, counter);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(counter.calls, 2u);
  EXPECT_EQ(counter.would_block, 0u);
  EXPECT_NE(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
  EXPECT_NE(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
  const sockaddr_in peer = address_of(fd, true);
  EXPECT_EQ(ntohs(peer.sin_port), 53);
  EXPECT_EQ(ntohl(peer.sin_addr.s_addr), INADDR_LOOPBACK);
  close(fd);
}

TEST(socket_util_test, a_source_address_adds_a_bind) {
  syscall_counter counter;
  const int fd = open_connected_udp(server, ip::make_address("127.0.0.1"), counter);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(counter.calls, 3u);
  const sockaddr_in local = address_of(fd, false);
  EXPECT_EQ(ntohl(local.sin_addr.s_addr), INADDR_LOOPBACK);
  EXPECT_NE(local.sin_port, 0);
  close(fd);
}

TEST(socket_util_test, a_failed_call_ends_the_sequence_and_closes_the_socket) {
  syscall_counter counter;
  // An IPv6 source for an IPv4 socket: bind fails, connect is not made, the socket is closed.
  const int result = open_connected_udp(server, ip::make_address("::1"), counter);
  EXPECT_LT(result, 0);
  EXPECT_NE(-result, 0);
  EXPECT_EQ(counter.calls, 3u);  // socket, bind, close
}

}  // namespace
}  // namespace dnstransport::detail
