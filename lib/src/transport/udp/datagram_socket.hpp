#pragma once
// Internal: the connected UDP socket under a UDP or DoQ client. In a run it is a socket in the
// worker's readiness set (udp_socket.cpp: recvmmsg and sendmmsg, each counted in the worker's
// system calls); in tests it is a scripted in-memory peer, so the client's state machine runs
// with no socket. A call moves a batch of datagrams, so the virtual call is one per system
// call, not one per query.

#include <sys/socket.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/udp.hpp>

namespace dnstransport::detail {

class readiness_set;
struct syscall_counter;

class datagram_socket {
 public:
  // A wait ended: `readable` says which, `token` is the wait's (as given to async_wait), `ok`
  // is false when it was cancelled (cancel, close).
  using ready_callback = std::function<void(bool readable, std::uint64_t token, bool ok)>;

  virtual ~datagram_socket() = default;

  // Opens the socket connected to `server`, bound to `source` when there is one, with large
  // buffers and the kernel's receive stamps asked for. Returns 0, or the errno of the step
  // that failed (the socket then stays closed).
  virtual int open(const boost::asio::ip::udp::endpoint& server,
                   const std::optional<boost::asio::ip::address>& source) = 0;
  virtual bool is_open() const noexcept = 0;
  // Whether received datagrams carry the kernel's receive stamps (util/receive_time.hpp).
  virtual bool stamped() const noexcept = 0;
  // The socket's own address (getsockname) in `address`; returns its length.
  virtual socklen_t local_address(sockaddr_storage& address) = 0;

  // Calls the ready callback once the socket is readable (or writable), as watched_socket.
  virtual void async_wait(bool readable, std::uint64_t token) = 0;
  // Ends the waits (called back with ok = false).
  virtual void cancel() = 0;
  // Cancels the waits and closes the socket.
  virtual void close() = 0;
  // The client has nothing in flight and nothing more to send, for good: its worker stops
  // once all its clients have. Sockets that share work between workers (AF_XDP's) hand
  // theirs to the workers still running; a kernel socket has nothing to do.
  virtual void client_finished() noexcept {}

  // recvmmsg without blocking: datagrams into the messages' buffers, each message's msg_len
  // (and its control data, when stamped) set. Returns how many, or minus the errno (-EAGAIN:
  // none waiting).
  virtual int receive(std::span<mmsghdr> messages) = 0;
  // sendmmsg: the messages in order, each one datagram, or several of one size with a
  // UDP_SEGMENT control message (util/udp_gso.hpp). Returns how many messages went (fewer:
  // the rest did not), or minus the errno.
  virtual int send(std::span<mmsghdr> messages) = 0;
};

using datagram_socket_factory = std::function<std::unique_ptr<datagram_socket>(
    readiness_set& readiness, datagram_socket::ready_callback on_ready, syscall_counter& syscalls)>;

// A UDP socket watched by `readiness`; its system calls are counted in `syscalls` (the
// client's worker's).
std::unique_ptr<datagram_socket> make_udp_socket(readiness_set& readiness,
                                                 datagram_socket::ready_callback on_ready,
                                                 syscall_counter& syscalls);

}  // namespace dnstransport::detail
