#pragma once
// Internal: one TCP or TLS connection accepted by the built-in responder. Reads whatever is
// available, answers every complete message, writes all answers of a read in one go.

#include <cstdint>
#include <memory>
#include <vector>

#include <boost/asio/ip/tcp.hpp>

#include "framing.hpp"
#include "server_thread.hpp"
#include "tls/tls_engine.hpp"

namespace dnstransport::detail {

class stream_connection : public std::enable_shared_from_this<stream_connection> {
 public:
  stream_connection(server_thread& owner, boost::asio::ip::tcp::socket socket, bool tls);

  void start();
  // Closes the connection if it has been idle longer than the configured timeout.
  void check_idle(std::uint64_t now);
  void close();

 private:
  void wait(boost::asio::socket_base::wait_type type);
  void step();
  void do_handshake();
  bool read_some();  // false when the connection closed
  void answer_buffered();
  bool flush();  // false when the connection closed
  void finish_close();

  server_thread& owner_;
  boost::asio::ip::tcp::socket socket_;
  std::unique_ptr<tls_session> tls_;
  frame_reader reader_;
  std::vector<std::uint8_t> out_;
  std::size_t written_ = 0;  // bytes of out_ already sent
  std::uint64_t answered_ = 0;
  std::uint64_t last_activity_ns_ = 0;
  bool handshaking_ = false;
  bool closing_ = false;  // stop reading, flush, then close
  bool closed_ = false;
  bool waiting_ = false;
};

}  // namespace dnstransport::detail
