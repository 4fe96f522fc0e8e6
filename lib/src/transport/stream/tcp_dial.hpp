#pragma once
// Internal: the TCP socket under a client's stream: options, source address, non-blocking
// connect, and what the kernel can say about the connection afterwards.

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>

namespace dnstransport::detail {

struct tcp_dial_options {
  bool nodelay = true;
  bool fastopen = false;                             // TCP_FASTOPEN_CONNECT
  const boost::asio::ip::address* source = nullptr;  // null: the kernel picks
};

struct tcp_dial {
  enum class outcome { connected, in_progress, failed };
  outcome result = outcome::failed;
  const char* what = "";  // failed: the step, "tcp socket", "tcp bind" or "tcp connect"
  int error = 0;          // failed: errno
  bool fastopen = false;  // Fast Open was enabled on the socket
};

// Opens `socket` (non-blocking) with the options and starts connecting it to `server`.
tcp_dial dial_tcp(boost::asio::ip::tcp::socket& socket,
                  const boost::asio::ip::tcp::endpoint& server, const tcp_dial_options& options);

// After the socket became writable: 0 when the connect succeeded, its errno otherwise.
int connect_error(int fd) noexcept;

// Whether the SYN carried data that the server accepted (known once the SYN-ACK came back).
bool syn_data_accepted(int fd) noexcept;

// Makes the coming close() abortive: RST, no TIME_WAIT.
void set_abortive_close(int fd) noexcept;

}  // namespace dnstransport::detail
