// Plain TCP behind the byte_stream contract: recvmsg (with the receive stamp, where the
// socket gives one) and one gathering sendmsg, with EINTR retried and EAGAIN turned into a
// wait; each call counted where the client gave a counter.

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "transport/stream/byte_stream.hpp"
#include "transport/tls/tls_backend.hpp"
#include "util/receive_time.hpp"
#include "util/socket_util.hpp"
#include "util/syscall_counter.hpp"

namespace dnstransport::detail {

namespace {

class tcp_stream final : public byte_stream {
 public:
  tcp_stream(int fd, syscall_counter* syscalls) : fd_(fd), syscalls_(syscalls) {}

  // The same object over a new connection.
  void reopen(int fd, syscall_counter* syscalls) noexcept {
    fd_ = fd;
    syscalls_ = syscalls;
    error_ = 0;
    newest_arrival_ = 0;
  }

  const char* name() const noexcept override { return "tcp"; }
  bool has_handshake() const noexcept override { return false; }
  stream_io handshake() override { return stream_io::done; }

  stream_io read(std::span<std::uint8_t> buffer, std::size_t& transferred) override {
    for (;;) {
      const ssize_t r = receive_stamped(fd_, buffer.data(), buffer.size(), newest_arrival_);
      count_syscall(syscalls_, r);
      if (r > 0) {
        transferred = static_cast<std::size_t>(r);
        return stream_io::done;
      }
      if (r == 0) return stream_io::closed;
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return stream_io::want_read;
      error_ = errno;
      return stream_io::failed;
    }
  }

  bool has_buffered_input() const override { return false; }
  std::uint64_t newest_arrival() const noexcept override { return newest_arrival_; }

  stream_io write(std::span<const iovec> pieces, std::size_t& transferred) override {
    // sendmsg rather than writev: only it takes MSG_NOSIGNAL, and a peer that closed the
    // connection must not kill the process with SIGPIPE.
    msghdr message{};
    message.msg_iov = const_cast<iovec*>(pieces.data());
    message.msg_iovlen = pieces.size();
    for (;;) {
      const ssize_t r = ::sendmsg(fd_, &message, MSG_NOSIGNAL);
      count_syscall(syscalls_, r);
      if (r >= 0) {
        transferred = static_cast<std::size_t>(r);
        return stream_io::done;
      }
      if (errno == EINTR) continue;
      // EINPROGRESS: a Fast Open connect whose SYN went without the data (the kernel may
      // decline to put data in a SYN, e.g. after SYN losses): write again once connected.
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINPROGRESS) {
        return stream_io::want_write;
      }
      error_ = errno;
      return stream_io::failed;
    }
  }

  void shutdown() override {}

  std::string failure_cause() const override { return errno_name(error_); }
  std::string error_message() const override {
    return fmt::format("{} ({})", std::strerror(error_), errno_name(error_));
  }

 private:
  int fd_;
  syscall_counter* syscalls_;
  int error_ = 0;
  std::uint64_t newest_arrival_ = 0;
};

class tcp_connector final : public stream_connector {
 public:
  // A client reconnecting after every few queries would otherwise allocate a stream per
  // connection; the spare is always one of ours.
  std::unique_ptr<byte_stream> open(int fd, const tls_ticket*, std::unique_ptr<byte_stream> spare,
                                    syscall_counter* syscalls) override {
    if (!spare) return make_tcp_stream(fd, syscalls);
    static_cast<tcp_stream&>(*spare).reopen(fd, syscalls);
    return spare;
  }
};

class tcp_acceptor final : public stream_acceptor {
 public:
  std::unique_ptr<byte_stream> open(int fd) override { return make_tcp_stream(fd); }
};

}  // namespace

std::unique_ptr<byte_stream> make_tcp_stream(int fd, syscall_counter* syscalls) {
  return std::make_unique<tcp_stream>(fd, syscalls);
}

std::unique_ptr<stream_connector> make_tcp_connector() {
  return std::make_unique<tcp_connector>();
}

std::unique_ptr<stream_acceptor> make_tcp_acceptor() {
  return std::make_unique<tcp_acceptor>();
}

std::size_t total_size(std::span<const iovec> pieces) noexcept {
  std::size_t total = 0;
  for (const iovec& piece : pieces) total += piece.iov_len;
  return total;
}

}  // namespace dnstransport::detail
