#pragma once
// Internal: a UDP client's datagram_socket over its worker's side of an AF_XDP run
// (xdp_worker.hpp): its own source port, its answers handed to it by the worker that read
// them into a queue it reads as recvmmsg would, its queries written into frames of its
// worker's port as sendmmsg would send them.

#include <cstdint>
#include <span>
#include <vector>

#include "transport/udp/datagram_socket.hpp"
#include "transport/xdp/xdp_frames.hpp"

namespace dnstransport::detail {

class readiness_set;
class xdp_worker;
class xdp_run;

class xdp_client_socket final : public datagram_socket {
 public:
  xdp_client_socket(std::shared_ptr<xdp_run> run, readiness_set& readiness, ready_callback on_ready,
                    syscall_counter& syscalls);
  ~xdp_client_socket() override;

  int open(const boost::asio::ip::udp::endpoint& server,
           const std::optional<boost::asio::ip::address>& source) override;
  bool is_open() const noexcept override { return worker_ != nullptr; }
  // Every answer has the time the kernel received its frame (the XDP program's stamp), given
  // as SO_TIMESTAMPNS would give it.
  bool stamped() const noexcept override { return true; }
  socklen_t local_address(sockaddr_storage& address) override;
  void async_wait(bool readable, std::uint64_t token) override;
  void cancel() override;
  void close() override;
  void client_finished() noexcept override;
  int receive(std::span<mmsghdr> messages) override;
  int send(std::span<mmsghdr> messages) override;

  // From its worker: an answer for this client; true when the client waits for one (the
  // worker then wakes it once its read is over).
  bool deliver(std::span<const std::uint8_t> payload, std::uint64_t received_ns);
  void wake_readable();
  void wake_writable();
  std::uint16_t port() const noexcept { return to_.source_port; }

 private:
  // Calls the client back later, from the worker's io_context.
  void call_later(bool readable, std::uint64_t token, bool ok);

  std::shared_ptr<xdp_run> run_;
  readiness_set& readiness_;
  ready_callback on_ready_;
  syscall_counter& syscalls_;
  xdp_worker* worker_ = nullptr;
  frame_addresses to_;
  // The answers not read yet, in order: entries from next_answer_ on, their bytes in one
  // buffer, both emptied when all are read (the client reads until none is left), so an
  // answer costs no allocation once they have grown.
  struct answer {
    std::uint64_t received_ns = 0;  // CLOCK_MONOTONIC
    std::size_t offset = 0;         // in answer_bytes_
    std::size_t size = 0;
  };
  std::vector<answer> answers_;
  std::size_t next_answer_ = 0;
  std::vector<std::uint8_t> answer_bytes_;
  bool has_answers() const noexcept { return next_answer_ < answers_.size(); }
  bool waiting_read_ = false;
  bool waiting_write_ = false;
  std::uint64_t read_token_ = 0;
  std::uint64_t write_token_ = 0;
};

}  // namespace dnstransport::detail
