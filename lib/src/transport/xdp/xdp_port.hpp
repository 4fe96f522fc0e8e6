#pragma once
// Internal: the AF_XDP socket (libxdp's xsk) on one queue of the interface, with its memory
// (UMEM: half the frames for receiving, half for sending). Two sides, each used by one thread
// at a time: the receiving side (the rx and fill rings) by the worker that reads the queue,
// under a lock, since the queue passes from one worker to another (xdp_run.hpp); the sending
// side (the tx and completion rings, the free send frames) by the one worker that sends
// through this queue.

#include <sys/socket.h>

#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include <xdp/xsk.h>

#include "transport/xdp/xdp_frames.hpp"

namespace dnstransport::detail {

struct syscall_counter;

class xdp_port {
 public:
  // Opens the socket on `queue` of `interface` and puts it in `sockets_map`. Throws
  // setup_error starting with `named` (the setting and the interface).
  xdp_port(const std::string& interface, const std::string& named, std::uint32_t queue,
           int sockets_map);
  ~xdp_port();
  xdp_port(const xdp_port&) = delete;
  xdp_port& operator=(const xdp_port&) = delete;

  std::uint32_t queue() const noexcept { return queue_; }
  // Zero-copy (false: the kernel copies the frames, as veth needs).
  bool zero_copy() const noexcept { return zero_copy_; }
  // The socket's descriptor (libxdp's: watch a duplicate).
  int descriptor() const noexcept;

  // Receiving side. Reads every frame waiting and gives each that is a UDP datagram or a TCP
  // segment from
  // `from`'s destination (the server) to `each` (read_frame's datagram, and when the kernel
  // received it on CLOCK_MONOTONIC), then lends the frames back to the kernel. The frames'
  // memory is the kernel's again once `each` returns.
  using datagram_callback =
      std::function<void(const received_datagram& datagram, std::uint64_t received_ns)>;
  void receive(const frame_addresses& from, const datagram_callback& each,
               syscall_counter& syscalls);

  // Sending side. Writes a frame per message (as to `to`) into free send frames and hands
  // them to the kernel. Returns how many went, -EAGAIN when no frame is free now (wait for
  // the socket to be writable, then reclaim), -EMSGSIZE for a message larger than a frame.
  int send(const frame_addresses& to, std::span<mmsghdr> messages, syscall_counter& syscalls);
  // Writes one TCP segment's frame and hands it to the kernel without asking it to send
  // (kick_send does, once for many); false when no frame is free or it does not fit.
  bool send_segment(const frame_addresses& to, const tcp_header& header,
                    std::span<const iovec> payload) noexcept;
  // Takes back the frames the kernel has sent; true when some are free.
  bool reclaim() noexcept;
  // Asks the kernel to send what the tx ring holds, when it wants to be asked.
  void kick_send(syscall_counter& syscalls) noexcept;
  // The same until the ring is empty: in copy mode one call sends at most 32 frames (the
  // kernel's TX_BATCH_SIZE), and a TCP worker's read may have queued more (bounded).
  void kick_send_all(syscall_counter& syscalls) noexcept;

 private:
  std::string interface_;
  std::uint32_t queue_;
  void* area_ = nullptr;
  std::size_t area_size_ = 0;
  xsk_umem* umem_ = nullptr;
  xsk_socket* socket_ = nullptr;
  std::mutex receiving_;  // the rx and fill rings
  xsk_ring_prod fill_{};
  xsk_ring_cons rx_{};
  xsk_ring_cons completion_{};
  xsk_ring_prod tx_{};
  std::vector<std::uint64_t> free_frames_;  // send frames not in the kernel's hands
  bool zero_copy_ = false;
};

}  // namespace dnstransport::detail
