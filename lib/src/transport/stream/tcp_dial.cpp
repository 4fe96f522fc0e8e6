#include "transport/stream/tcp_dial.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace dnstransport::detail {

tcp_dial dial_tcp(boost::asio::ip::tcp::socket& socket,
                  const boost::asio::ip::tcp::endpoint& server, const tcp_dial_options& options) {
  tcp_dial dial;
  boost::system::error_code ec;
  socket.open(server.protocol(), ec);
  if (ec) {
    dial.what = "tcp socket";
    dial.error = ec.value();
    return dial;
  }
  const int fd = socket.native_handle();
  socket.non_blocking(true, ec);
  const int one = 1;
  if (options.nodelay) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (options.source != nullptr) {
    // Let the kernel pick the port at connect time, so ports are shared per destination.
    setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
    socket.bind({*options.source, 0}, ec);
    if (ec) {
      dial.what = "tcp bind";
      dial.error = ec.value();
      return dial;
    }
  }
  if (options.fastopen) {
    dial.fastopen = setsockopt(fd, IPPROTO_TCP, TCP_FASTOPEN_CONNECT, &one, sizeof one) == 0;
  }
  sockaddr_storage address{};
  std::memcpy(&address, server.data(), server.size());
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), static_cast<socklen_t>(server.size())) ==
      0) {
    dial.result = tcp_dial::outcome::connected;
  } else if (errno == EINPROGRESS) {
    dial.result = tcp_dial::outcome::in_progress;
  } else {
    dial.what = "tcp connect";
    dial.error = errno;
  }
  return dial;
}

int connect_error(int fd) noexcept {
  int error = 0;
  socklen_t length = sizeof error;
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0) return errno;
  return error;
}

bool syn_data_accepted(int fd) noexcept {
  tcp_info info{};
  socklen_t length = sizeof info;
  return getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &length) == 0 &&
         (info.tcpi_options & TCPI_OPT_SYN_DATA) != 0;
}

void set_abortive_close(int fd) noexcept {
  const linger abortive{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &abortive, sizeof abortive);
}

}  // namespace dnstransport::detail
