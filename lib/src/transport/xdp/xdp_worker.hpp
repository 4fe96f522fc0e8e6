#pragma once
// Internal: one worker thread's side of a run over AF_XDP (xdp_run.hpp): its UDP clients by
// source port (its TCP connections: xdp_tcp_connections.hpp), the queues it reads (watched in its
// readiness set), the port it sends through, and the answers other workers read for its clients.
// Used on the worker's thread, but for hand_over (any thread).

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include <sys/socket.h>

#include "transport/xdp/xdp_port.hpp"

namespace dnstransport::detail {

class readiness_set;
class watched_socket;
class xdp_client_socket;
class xdp_run;
class xdp_tcp_connections;
struct syscall_counter;

class xdp_worker {
 public:
  xdp_worker(xdp_run& run, unsigned index, readiness_set& set, syscall_counter& syscalls);
  ~xdp_worker();
  xdp_worker(const xdp_worker&) = delete;
  xdp_worker& operator=(const xdp_worker&) = delete;

  unsigned index() const noexcept { return index_; }
  readiness_set& readiness() noexcept { return set_; }

  void join(xdp_client_socket& client, std::uint16_t port);
  void leave(std::uint16_t port) noexcept;
  // The client of `port` has finished for good (udp_client's tick): when all have, the
  // worker retires (its queues to another worker; handed answers no longer taken).
  void client_finished(std::uint16_t port) noexcept;

  // Its TCP connections (xdp_tcp_connections.hpp), made at the first.
  xdp_tcp_connections& tcp();
  // A TCP client's socket comes, or goes (its destructor): when the last has gone, the
  // connections are dropped and the worker retires (it watches nothing more).
  void join_tcp() noexcept { ++tcp_sockets_; }
  void leave_tcp() noexcept;

  // Through the worker's port (xdp_port::send); -EAGAIN: wait_writable.
  int send(const frame_addresses& to, std::span<mmsghdr> messages);
  // Calls the client back (writable) once send frames are free again.
  void wait_writable(xdp_client_socket& client) noexcept;

  // Reads `queue` from now on (watched in the worker's set), unless the run gave it to
  // another worker in the meantime; stop_reading ends that unless the run gave it back.
  void start_reading(unsigned queue);
  void stop_reading(unsigned queue) noexcept;

  // Under the run's lock: whether the worker still runs (has a client not finished), and
  // its end (xdp_run::retire).
  bool running() const noexcept { return running_; }
  void mark_stopped() noexcept { running_ = false; }

  // Answers copied out of the frames they came in, for another worker's clients: entries
  // and their bytes, no allocation per answer once the vectors have grown.
  struct answer_batch {
    struct entry {
      std::uint16_t port;
      std::uint64_t received_ns;
      std::size_t offset;  // in bytes
      std::size_t size;
    };
    std::vector<entry> answers;
    std::vector<std::uint8_t> bytes;
    void add(std::uint16_t port, std::span<const std::uint8_t> payload, std::uint64_t received_ns);
    void clear() noexcept {
      answers.clear();
      bytes.clear();
    }
  };

  // Any thread: answers for this worker's clients that another worker read (`batch`, left
  // empty), taken on this worker's thread: one lock and at most one post per batch.
  // Dropped once the worker has retired.
  void hand_over(answer_batch& batch);

 private:
  void on_readable(unsigned queue);
  void on_writable();
  void deliver(std::uint16_t port, std::span<const std::uint8_t> payload,
               std::uint64_t received_ns);
  void take_handed();
  void hand_over_read();
  void wake_waiting();
  void retire_if_done() noexcept;

  xdp_run& run_;
  unsigned index_;
  readiness_set& set_;
  syscall_counter& syscalls_;
  xdp_port& sender_;
  xdp_port::datagram_callback each_;         // on_readable's, made once
  std::vector<xdp_client_socket*> clients_;  // by source port
  std::vector<bool> finished_;               // by source port
  std::size_t joined_ = 0;
  std::size_t finished_count_ = 0;  // of the joined
  bool retired_ = false;
  bool running_ = true;                                   // the run's lock
  std::vector<std::unique_ptr<watched_socket>> reading_;  // by queue; null: not read here
  std::unique_ptr<watched_socket> writing_;               // the sender's, for free frames
  std::vector<xdp_client_socket*> waiting_clients_;       // got answers in this read, and wait
  std::vector<xdp_client_socket*> woken_;
  std::vector<xdp_client_socket*> writers_;  // waiting for free frames

  // This read's answers for other workers, by their index, handed over after the read.
  std::vector<answer_batch> outboxes_;
  std::vector<xdp_worker*> outbox_owners_;

  std::mutex handed_mutex_;  // what follows
  answer_batch handed_;
  bool handed_posted_ = false;
  bool accepting_ = true;  // false once retired
  answer_batch taken_;     // take_handed's, swapped with handed_

  std::unique_ptr<xdp_tcp_connections> tcp_;
  std::size_t tcp_sockets_ = 0;
};

}  // namespace dnstransport::detail
