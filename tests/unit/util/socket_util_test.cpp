#include "util/socket_util.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

namespace dnstransport::detail {
namespace {

namespace ip = boost::asio::ip;

// A UDP connect only sets the peer: nothing needs to listen on the port.
const ip::udp::endpoint server(ip::make_address("127.0.0.1"), 53);

TEST(socket_util_test, a_client_socket_costs_socket_connect_and_ioctl) {
  boost::asio::io_context io;
  ip::udp::socket socket(io);
  syscall_counter counter;
  EXPECT_FALSE(open_connected_udp(socket, server, std::nullopt, counter));
  EXPECT_EQ(counter.calls, 3u);
  EXPECT_EQ(counter.would_block, 0u);
  EXPECT_TRUE(socket.is_open());
  EXPECT_TRUE(socket.non_blocking());
  EXPECT_EQ(socket.remote_endpoint(), server);
}

TEST(socket_util_test, a_source_address_adds_a_bind) {
  boost::asio::io_context io;
  ip::udp::socket socket(io);
  syscall_counter counter;
  EXPECT_FALSE(open_connected_udp(socket, server, ip::make_address("127.0.0.1"), counter));
  EXPECT_EQ(counter.calls, 4u);
  EXPECT_EQ(socket.local_endpoint().address(), ip::make_address("127.0.0.1"));
  EXPECT_NE(socket.local_endpoint().port(), 0);
}

TEST(socket_util_test, a_failed_call_ends_the_sequence_and_leaves_the_socket_to_the_caller) {
  boost::asio::io_context io;
  ip::udp::socket socket(io);
  syscall_counter counter;
  // An IPv6 source for an IPv4 socket: bind fails, connect and the ioctl are not made.
  EXPECT_TRUE(open_connected_udp(socket, server, ip::make_address("::1"), counter));
  EXPECT_EQ(counter.calls, 2u);
  EXPECT_TRUE(socket.is_open());
}

}  // namespace
}  // namespace dnstransport::detail
