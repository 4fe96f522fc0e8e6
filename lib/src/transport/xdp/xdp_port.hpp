#pragma once
// Internal: the AF_XDP socket (libxdp's xsk) on one queue of the interface, with its memory
// (UMEM: half the frames for receiving, half for sending), and the run's clients, each known
// by its source port (an answer may come in on any queue: the one the server, or the NIC's
// hash, picks). The worker's readiness set watches the socket: when frames came, the port
// reads them all, hands each answer to its client and wakes the clients that wait. Used on
// the worker's thread only, after it was made on the load's.

#include <sys/socket.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include <xdp/xsk.h>

#include "engine/readiness.hpp"
#include "transport/xdp/xdp_frames.hpp"

namespace dnstransport::detail {

class xdp_client_socket;

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

  // The worker's readiness set, at its first client's open (its thread).
  void watch(readiness_set& set, syscall_counter& syscalls);
  void join(xdp_client_socket& client, std::uint16_t port);
  void leave(std::uint16_t port) noexcept;

  // Writes a frame per message (as to `to`) into free send frames and hands them to the
  // kernel. Returns how many went (0: no free frame now; the caller waits to write).
  int send(const frame_addresses& to, std::span<mmsghdr> messages);
  // Calls the client back (writable) once frames are free again.
  void wait_writable(xdp_client_socket& client) noexcept;
  // What the frames are read against: the server and this worker's source address.
  void expect(const frame_addresses& from) { from_ = from; }

 private:
  void on_ready(bool readable, bool ok);
  void wake_waiting();
  void receive();
  void reclaim() noexcept;
  void kick_send() noexcept;

  std::string interface_;
  std::uint32_t queue_;
  void* area_ = nullptr;
  std::size_t area_size_ = 0;
  xsk_umem* umem_ = nullptr;
  xsk_socket* socket_ = nullptr;
  xsk_ring_prod fill_{};
  xsk_ring_cons completion_{};
  xsk_ring_cons rx_{};
  xsk_ring_prod tx_{};
  std::vector<std::uint64_t> free_frames_;  // send frames not in the kernel's hands
  bool zero_copy_ = false;
  frame_addresses from_;
  std::unique_ptr<watched_socket> watched_;  // a duplicate of the socket's descriptor
  syscall_counter* syscalls_ = nullptr;
  std::vector<xdp_client_socket*> clients_;  // by source port
  std::size_t joined_ = 0;
  std::vector<xdp_client_socket*> waiting_clients_;  // got answers in this read, and wait
  std::vector<xdp_client_socket*> woken_;
  std::vector<xdp_client_socket*> writers_;  // waiting for free frames
};

}  // namespace dnstransport::detail
