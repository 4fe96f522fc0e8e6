// The datagram_socket of a run: a connected UDP socket in the worker's readiness set, its
// batches moved with recvmmsg and sendmmsg, every system call counted.
#include "transport/udp/datagram_socket.hpp"

#include <cerrno>

#include "engine/readiness.hpp"
#include "util/receive_time.hpp"
#include "util/socket_util.hpp"
#include "util/syscall_counter.hpp"

namespace dnstransport::detail {

namespace {

class udp_socket final : public datagram_socket {
 public:
  udp_socket(readiness_set& readiness, ready_callback on_ready, syscall_counter& syscalls)
      : socket_(readiness, std::move(on_ready)), syscalls_(syscalls) {}

  int open(const boost::asio::ip::udp::endpoint& server,
           const std::optional<boost::asio::ip::address>& source) override {
    const int fd = open_connected_udp(server, source, syscalls_);
    if (fd < 0) return -fd;
    if (const int error = socket_.assign(fd); error != 0) return error;
    enlarge_socket_buffers(fd);
    // Answers are timed by when they arrived, not when the client came to read them (a
    // delayed read must not add the delay to the latency): by the kernel's stamp.
    stamped_ = enable_receive_stamps(fd);
    syscalls_.count_calls(3);  // three setsockopt
    return 0;
  }

  bool is_open() const noexcept override { return socket_.is_open(); }
  bool stamped() const noexcept override { return stamped_; }

  socklen_t local_address(sockaddr_storage& address) override {
    socklen_t size = sizeof address;
    getsockname(socket_.native_handle(), reinterpret_cast<sockaddr*>(&address), &size);
    syscalls_.count_calls(1);
    return size;
  }

  void async_wait(bool readable, std::uint64_t token) override {
    socket_.async_wait(readable, token);
  }
  void cancel() override { socket_.cancel(); }
  void close() override { socket_.close(); }

  int receive(std::span<mmsghdr> messages) override {
    const int n = recvmmsg(socket_.native_handle(), messages.data(),
                           static_cast<unsigned>(messages.size()), MSG_DONTWAIT, nullptr);
    syscalls_.count(n);
    return n < 0 ? -errno : n;
  }

  int send(std::span<mmsghdr> messages) override {
    const int n = sendmmsg(socket_.native_handle(), messages.data(),
                           static_cast<unsigned>(messages.size()), 0);
    syscalls_.count(n);
    return n < 0 ? -errno : n;
  }

 private:
  watched_socket socket_;
  syscall_counter& syscalls_;
  bool stamped_ = false;
};

}  // namespace

std::unique_ptr<datagram_socket> make_udp_socket(readiness_set& readiness,
                                                 datagram_socket::ready_callback on_ready,
                                                 syscall_counter& syscalls) {
  return std::make_unique<udp_socket>(readiness, std::move(on_ready), syscalls);
}

}  // namespace dnstransport::detail
