// The TCP socket under a connection the responder accepted.
#include <sys/socket.h>

#include <cerrno>

#include "transport/stream/server_stream_connection.hpp"

namespace dnstransport::detail {

namespace {

class accepted_tcp_socket final : public accepted_socket {
 public:
  explicit accepted_tcp_socket(boost::asio::ip::tcp::socket socket) : socket_(std::move(socket)) {
    boost::system::error_code ec;
    socket_.non_blocking(true, ec);
    socket_.set_option(boost::asio::ip::tcp::no_delay(true), ec);
  }

  int native_handle() noexcept override { return socket_.native_handle(); }

  void async_wait(boost::asio::socket_base::wait_type type,
                  std::shared_ptr<server_stream_connection> connection) override {
    socket_.async_wait(type, [self = std::move(connection)](const boost::system::error_code& ec) {
      self->ready(!ec);
    });
  }

  bool shutdown_send() noexcept override {
    boost::system::error_code ec;
    socket_.shutdown(boost::asio::ip::tcp::socket::shutdown_send, ec);
    return !ec;
  }

  bool discard_input(std::span<std::uint8_t> buffer) noexcept override {
    for (;;) {
      const ssize_t n = ::recv(socket_.native_handle(), buffer.data(), buffer.size(), MSG_DONTWAIT);
      if (n > 0) continue;
      if (n < 0 && errno == EINTR) continue;
      return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
  }

  void close() noexcept override {
    boost::system::error_code ec;
    socket_.close(ec);
  }

 private:
  boost::asio::ip::tcp::socket socket_;
};

}  // namespace

std::unique_ptr<accepted_socket> make_accepted_socket(boost::asio::ip::tcp::socket socket) {
  return std::make_unique<accepted_tcp_socket>(std::move(socket));
}

}  // namespace dnstransport::detail
