#pragma once
// Internal: the connection under a stream client's byte stream. In a run it is a TCP socket
// (tcp_socket.cpp: options, source address, non-blocking connect, readiness through the
// worker's readiness set);
// in tests it is a scripted in-memory peer, so the client's state machine runs with no socket.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>

namespace dnstransport::detail {

class byte_stream;
class readiness_set;
class stream_connector;
class tls_ticket;
struct syscall_counter;

struct tcp_dial_options {
  bool nodelay = true;
  bool fastopen = false;                             // TCP_FASTOPEN_CONNECT
  const boost::asio::ip::address* source = nullptr;  // null: the kernel picks
};

struct tcp_dial {
  // deferred: TCP Fast Open with a cookie, connect() returned at once and sent nothing; the
  // SYN leaves with the first write and the connection is established only after the
  // SYN-ACK (wait until writable, then ask established()).
  enum class outcome { connected, deferred, in_progress, failed };
  outcome result = outcome::failed;
  const char* what = "";  // failed: the step, "tcp socket", "tcp bind" or "tcp connect"
  int error = 0;          // failed: errno
};

class stream_socket {
 public:
  // A wait ended: `ok` is false when it was cancelled (the socket closed). `generation` is
  // the value given to async_wait, so the owner can ignore waits of an earlier connection.
  using ready_callback = std::function<void(bool readable, std::uint64_t generation, bool ok)>;

  virtual ~stream_socket() = default;

  // Opens a new connection to `server` (non-blocking); in_progress: wait until writable,
  // then ask connect_error().
  virtual tcp_dial connect(const boost::asio::ip::tcp::endpoint& server,
                           const tcp_dial_options& options) = 0;
  // After the connection became writable: 0 when connected, the errno otherwise.
  virtual int connect_error() = 0;
  // The byte stream over the connected socket, from `connector` (plain TCP or TLS), which
  // may reuse `spare`, the closed stream of the previous connection.
  virtual std::unique_ptr<byte_stream> open_stream(stream_connector& connector,
                                                   const tls_ticket* resume_from,
                                                   std::unique_ptr<byte_stream> spare) = 0;
  // Writes `bytes` on the connection before anything else (a PROXY protocol header, before
  // the TLS handshake; in the SYN with Fast Open). Returns 0, or the errno (EAGAIN when not
  // all of it went, which an empty send buffer never does).
  virtual int send_prefix(std::span<const std::uint8_t> bytes) = 0;
  // Calls the ready callback once the socket is readable (or writable).
  virtual void async_wait(bool readable, std::uint64_t generation) = 0;
  // Whether the SYN carried data the server accepted (TCP Fast Open), known after the SYN-ACK.
  virtual bool syn_data_accepted() = 0;
  // Whether the handshake is over (a deferred Fast Open connection past its SYN-ACK): if so,
  // the SYN's round trip as the kernel measured it (ns; 0 when it has none), else nothing.
  virtual std::optional<std::uint64_t> established() = 0;
  virtual bool is_open() const = 0;
  // Closes the connection; `abortive`: RST and no TIME_WAIT instead of FIN.
  virtual void close(bool abortive) = 0;
};

using stream_socket_factory = std::function<std::unique_ptr<stream_socket>(
    readiness_set& readiness, stream_socket::ready_callback on_ready, syscall_counter& syscalls)>;

// A TCP socket; the system calls it and its byte streams make are counted in `syscalls`
// (the client's worker's).
std::unique_ptr<stream_socket> make_tcp_socket(readiness_set& readiness,
                                               stream_socket::ready_callback on_ready,
                                               syscall_counter& syscalls);

}  // namespace dnstransport::detail
