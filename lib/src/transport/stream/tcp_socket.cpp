// The stream client's TCP socket: options, source address, non-blocking connect, readiness
// waits through the worker's readiness set (engine/readiness.hpp). Every system call it makes is
// counted in the worker's counter, and the byte streams opened on it count theirs there too.

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "engine/readiness.hpp"
#include "transport/stream/byte_stream.hpp"
#include "transport/stream/stream_socket.hpp"
#include "util/receive_time.hpp"
#include "util/syscall_counter.hpp"

namespace dnstransport::detail {

namespace {

class tcp_socket final : public stream_socket {
 public:
  tcp_socket(readiness_set& readiness, ready_callback on_ready, syscall_counter& syscalls)
      : socket_(readiness, std::move(on_ready)), syscalls_(syscalls) {}

  tcp_dial connect(const boost::asio::ip::tcp::endpoint& server,
                   const tcp_dial_options& options) override {
    tcp_dial dial;
    fastopen_ = false;
    socket_.close();  // of the previous connection, if still open
    const int fd = ::socket(server.protocol().family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
                            IPPROTO_TCP);
    syscalls_.count_calls(1);
    if (fd < 0) {
      dial.what = "tcp socket";
      dial.error = errno;
      return dial;
    }
    if (const int error = socket_.assign(fd); error != 0) {
      dial.what = "tcp socket";
      dial.error = error;
      return dial;
    }
    // Answers are timed by when they arrived, not when the client came to read them.
    enable_receive_stamps(fd);
    syscalls_.count_calls(1);
    const int one = 1;
    if (options.nodelay) {
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      syscalls_.count_calls(1);
    }
    if (options.source != nullptr) {
      // Let the kernel pick the port at connect time, so ports are shared per destination.
      setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
      const boost::asio::ip::tcp::endpoint local(*options.source, 0);
      const int bound = ::bind(fd, local.data(), static_cast<socklen_t>(local.size()));
      syscalls_.count_calls(2);
      if (bound != 0) {
        dial.what = "tcp bind";
        dial.error = errno;
        return dial;
      }
    }
    if (options.fastopen) {
      fastopen_ = setsockopt(fd, IPPROTO_TCP, TCP_FASTOPEN_CONNECT, &one, sizeof one) == 0;
      syscalls_.count_calls(1);
    }
    sockaddr_storage address{};
    std::memcpy(&address, server.data(), server.size());
    const int connected =
        ::connect(fd, reinterpret_cast<sockaddr*>(&address), static_cast<socklen_t>(server.size()));
    syscalls_.count(connected);
    if (connected == 0) {
      dial.result = fastopen_ ? tcp_dial::outcome::deferred : tcp_dial::outcome::connected;
    } else if (errno == EINPROGRESS) {
      dial.result = tcp_dial::outcome::in_progress;
    } else {
      dial.what = "tcp connect";
      dial.error = errno;
    }
    return dial;
  }

  int connect_error() override {
    int error = 0;
    socklen_t length = sizeof error;
    const int result = getsockopt(socket_.native_handle(), SOL_SOCKET, SO_ERROR, &error, &length);
    syscalls_.count_calls(1);
    return result != 0 ? errno : error;
  }

  std::unique_ptr<byte_stream> open_stream(stream_connector& connector,
                                           const tls_ticket* resume_from,
                                           std::unique_ptr<byte_stream> spare) override {
    return connector.open(socket_.native_handle(), resume_from, std::move(spare), &syscalls_);
  }

  int send_prefix(std::span<const std::uint8_t> bytes) override {
    const ssize_t sent = ::send(socket_.native_handle(), bytes.data(), bytes.size(), MSG_NOSIGNAL);
    syscalls_.count(sent);
    if (sent < 0) return errno;
    return static_cast<std::size_t>(sent) == bytes.size() ? 0 : EAGAIN;
  }

  void async_wait(bool readable, std::uint64_t generation) override {
    socket_.async_wait(readable, generation);
  }

  bool syn_data_accepted() override {
    if (!fastopen_ || !socket_.is_open()) return false;
    tcp_info info{};
    socklen_t length = sizeof info;
    syscalls_.count_calls(1);
    return getsockopt(socket_.native_handle(), IPPROTO_TCP, TCP_INFO, &info, &length) == 0 &&
           (info.tcpi_options & TCPI_OPT_SYN_DATA) != 0;
  }

  std::optional<std::uint64_t> established() override {
    if (!socket_.is_open()) return std::nullopt;
    tcp_info info{};
    socklen_t length = sizeof info;
    syscalls_.count_calls(1);
    if (getsockopt(socket_.native_handle(), IPPROTO_TCP, TCP_INFO, &info, &length) != 0 ||
        info.tcpi_state == TCP_SYN_SENT || info.tcpi_state == TCP_CLOSE) {
      return std::nullopt;
    }
    // The smoothed round trip (us), which is the SYN's alone until other data is acked.
    return std::uint64_t{info.tcpi_rtt} * 1000;
  }

  bool is_open() const override { return socket_.is_open(); }

  void close(bool abortive) override {
    if (!socket_.is_open()) return;
    if (abortive) {
      const linger rst{1, 0};
      setsockopt(socket_.native_handle(), SOL_SOCKET, SO_LINGER, &rst, sizeof rst);
      syscalls_.count_calls(1);
    }
    socket_.close();
  }

 private:
  watched_socket socket_;
  syscall_counter& syscalls_;
  bool fastopen_ = false;  // TCP_FASTOPEN_CONNECT was accepted on this connection
};

}  // namespace

std::unique_ptr<stream_socket> make_tcp_socket(readiness_set& readiness,
                                               stream_socket::ready_callback on_ready,
                                               syscall_counter& syscalls) {
  return std::make_unique<tcp_socket>(readiness, std::move(on_ready), syscalls);
}

}  // namespace dnstransport::detail
