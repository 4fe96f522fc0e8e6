#pragma once
// Internal: what a run over AF_XDP shares between its worker threads: the XDP program on the
// interface (xdp_program.hpp), one port on each receive queue (xdp_port.hpp), the workers
// (xdp_worker.hpp) and which worker each source port's client belongs to.
//
// A worker sends through the port of its own index (so there are at least as many queues as
// threads). An answer comes in on the queue the server, or the NIC's hash, picks, which may
// be another worker's, so each queue has one reader at a time and an answer read by a worker
// other than its client's is handed over to that one. The queues are shared out as the
// workers come: the first reads them all, each later one takes those of its index (queue
// modulo threads). A worker whose clients have all finished stops (its thread stops reading
// anything), so it first hands the queues it reads to a worker still running: no answer a
// running worker waits for is left unread.

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include <boost/asio/ip/address.hpp>

#include "transport/xdp/xdp_frames.hpp"
#include "transport/xdp/xdp_sockets.hpp"

namespace dnstransport::detail {

class readiness_set;
class xdp_client_socket;
class xdp_port;
class xdp_program;
class xdp_worker;
struct syscall_counter;

class xdp_run : public std::enable_shared_from_this<xdp_run> {
 public:
  // Resolves the addresses, attaches the program and opens the ports; throws setup_error
  // naming the setting (xdp_sockets.hpp).
  explicit xdp_run(const xdp_settings& settings);
  ~xdp_run();
  xdp_run(const xdp_run&) = delete;
  xdp_run& operator=(const xdp_run&) = delete;

  // A client's socket opens on the worker whose readiness set `set` is (its thread): its
  // worker (made at the worker's first client, which takes its share of the queues to read),
  // and its addresses: from `source` (the run's own when none) and a source port of its own.
  // Null when no source port is left, `source` is not of the server's family, or more
  // workers than threads come.
  xdp_worker* join(xdp_client_socket& client, readiness_set& set, syscall_counter& syscalls,
                   const std::optional<boost::asio::ip::address>& source,
                   frame_addresses& addresses);
  // The client of source `port` is gone (its worker's thread).
  void leave(std::uint16_t port) noexcept;

  // TCP (xdp_tcp_connections.hpp), whose connections take ports as they need them: the
  // worker of `set` (made as join makes it), null when more workers than threads come; a
  // port of its own for `worker` from `source` (none left: nothing); and the address of a
  // port the worker uses again (its thread).
  xdp_worker* worker(readiness_set& set, syscall_counter& syscalls);
  std::optional<std::uint16_t> new_port(xdp_worker& worker, const boost::asio::ip::address& source);
  void set_source(std::uint16_t port, const boost::asio::ip::address& source) noexcept;
  // The largest TCP segment the link carries (its MTU less the headers).
  std::uint16_t tcp_mss() const noexcept { return tcp_mss_; }

  // The worker of the client with source `port`, null when none (any thread).
  xdp_worker* owner(std::uint16_t port) const noexcept {
    return owners_[port].load(std::memory_order_acquire);
  }
  // Whether `address` (4 or 16 octets) is the source address of the client with source
  // `port` (any thread, after owner() gave its worker).
  bool addressed_to(std::uint16_t port, std::span<const std::uint8_t> address) const noexcept {
    const auto& own = sources_[port];
    return address.size() == source_size_ &&
           std::memcmp(own.data(), address.data(), source_size_) == 0;
  }
  // `worker`'s clients have all finished or gone (its thread): the queues it reads go to a
  // worker still running.
  void retire(xdp_worker& worker);
  // Whether `worker` is to read `queue` now (a worker asked to start or stop checks).
  bool reads(const xdp_worker& worker, unsigned queue);

  xdp_port& port(unsigned queue) noexcept { return *ports_[queue]; }
  unsigned queues() const noexcept { return static_cast<unsigned>(ports_.size()); }
  // The server and the source address: what received frames are read against.
  const frame_addresses& addresses() const noexcept { return addresses_; }

 private:
  // Under the lock: the worker of `set`, made when it has none (the queues it is to read
  // added to `to_read`); a port for `worker`, its addresses in `addresses` (false: none left,
  // or `source` of the other family).
  xdp_worker* worker_of(readiness_set& set, syscall_counter& syscalls,
                        std::vector<unsigned>& to_read);
  bool assign_port(xdp_worker& worker, const std::optional<boost::asio::ip::address>& source,
                   frame_addresses& addresses);

  std::unique_ptr<xdp_program> program_;  // outlives the ports
  std::vector<std::unique_ptr<xdp_port>> ports_;
  frame_addresses addresses_;
  unsigned threads_ = 1;
  std::mutex mutex_;  // what follows
  std::vector<std::unique_ptr<xdp_worker>> workers_;
  std::vector<xdp_worker*> readers_;  // by queue; null: none running
  std::uint32_t next_port_ = 10000;
  std::unique_ptr<std::atomic<xdp_worker*>[]> owners_;  // by source port
  // Each client's source address by its source port (written before its owner is).
  std::unique_ptr<std::array<std::uint8_t, 16>[]> sources_;
  std::size_t source_size_ = 4;  // 16 over IPv6
  std::uint16_t tcp_mss_ = 1460;
};

}  // namespace dnstransport::detail
