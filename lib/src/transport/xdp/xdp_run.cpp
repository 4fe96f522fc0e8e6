// What a run over AF_XDP shares (xdp_run.hpp): its set-up (the interface, its queues and MAC
// address, the server's MAC address, the source address, the program, a port per queue), the
// workers as they come, and the queues' readers as they come and go.
#include "transport/xdp/xdp_run.hpp"

#include <net/if.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/post.hpp>

#include <dnstransport/error.hpp>

#include "engine/readiness.hpp"
#include "transport/xdp/xdp_neighbours.hpp"
#include "transport/xdp/xdp_port.hpp"
#include "transport/xdp/xdp_program.hpp"
#include "transport/xdp/xdp_worker.hpp"

namespace dnstransport::detail {

namespace {

using mac = std::array<std::uint8_t, 6>;

std::optional<mac> parse_mac(std::string_view text) {
  mac out{};
  unsigned values[6];
  char tail = 0;
  const std::string copy(text);
  if (std::sscanf(copy.c_str(), "%2x:%2x:%2x:%2x:%2x:%2x%c", &values[0], &values[1], &values[2],
                  &values[3], &values[4], &values[5], &tail) != 6) {
    return std::nullopt;
  }
  for (int i = 0; i < 6; ++i) out[i] = static_cast<std::uint8_t>(values[i]);
  return out;
}

// The interface's receive queues (/sys/class/net/NAME/queues/rx-N).
unsigned receive_queues(const std::string& interface) {
  unsigned n = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(
           std::filesystem::path("/sys/class/net") / interface / "queues", ec)) {
    if (entry.path().filename().string().rfind("rx-", 0) == 0) ++n;
  }
  return n;
}

// A UDP socket for the ioctl and the kernel's choices below.
struct plain_socket {
  explicit plain_socket(int family) : fd(socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0)) {}
  ~plain_socket() {
    if (fd >= 0) ::close(fd);
  }
  int fd;
};

std::optional<mac> interface_mac(const std::string& interface) {
  plain_socket s(AF_INET);
  ifreq request{};
  std::strncpy(request.ifr_name, interface.c_str(), IFNAMSIZ - 1);
  if (s.fd < 0 || ioctl(s.fd, SIOCGIFHWADDR, &request) != 0) return std::nullopt;
  mac out{};
  std::memcpy(out.data(), request.ifr_hwaddr.sa_data, 6);
  return out;
}

// The interface's MTU (1500 when the kernel does not say).
unsigned interface_mtu(const std::string& interface) {
  plain_socket s(AF_INET);
  ifreq request{};
  std::strncpy(request.ifr_name, interface.c_str(), IFNAMSIZ - 1);
  if (s.fd < 0 || ioctl(s.fd, SIOCGIFMTU, &request) != 0 || request.ifr_mtu <= 0) return 1500;
  return static_cast<unsigned>(request.ifr_mtu);
}

// The address the kernel would send from to `server` (its route's), nothing when it has none.
std::optional<boost::asio::ip::address> kernel_source(
    const boost::asio::ip::udp::endpoint& server) {
  boost::asio::io_context io;
  boost::system::error_code ec;
  boost::asio::ip::udp::socket s(io);
  s.open(server.protocol(), ec);
  if (!ec) s.connect(server, ec);
  if (ec) return std::nullopt;
  const auto local = s.local_endpoint(ec);
  if (ec) return std::nullopt;
  return local.address();
}

}  // namespace

xdp_run::xdp_run(const xdp_settings& settings) {
  const std::string named = fmt::format("{} {}", settings.setting, settings.interface);
  const unsigned ifindex = if_nametoindex(settings.interface.c_str());
  if (ifindex == 0) throw setup_error(fmt::format("{}: no such network interface", named));
  const unsigned queues = std::max(receive_queues(settings.interface), 1u);
  threads_ = std::max(settings.threads, 1u);
  if (threads_ > queues) {
    throw setup_error(fmt::format(
        "{}: the interface has {} receive queue{}, fewer than {} {} (each worker thread sends "
        "through a queue of its own; `ethtool -L {} combined N` gives a NIC more)",
        named, queues, queues == 1 ? "" : "s", settings.threads_setting, threads_,
        settings.interface));
  }
  if (settings.tcp && threads_ > 1) {
    throw setup_error(fmt::format(
        "{} {}: DNS over TCP over AF_XDP runs on one worker thread (its connections are not "
        "handed from one thread to another)",
        settings.threads_setting, threads_));
  }
  boost::asio::io_context io;
  boost::asio::ip::udp::resolver resolver(io);
  boost::system::error_code ec;
  const auto found = resolver.resolve(settings.server, std::to_string(settings.port), ec);
  if (ec || found.empty()) {
    throw setup_error(fmt::format("{}: cannot resolve \"{}\": {}", named, settings.server,
                                  ec ? ec.message() : "no address"));
  }
  const boost::asio::ip::udp::endpoint server = found.begin()->endpoint();
  const auto own_mac = interface_mac(settings.interface);
  if (!own_mac) {
    throw setup_error(fmt::format("{}: the interface has no MAC address to send from", named));
  }
  addresses_.source_mac = *own_mac;
  // The clients' own (--source) where they have one, else the one the kernel would use.
  if (const auto kernel = kernel_source(server)) {
    addresses_.source = *kernel;
  } else {
    throw setup_error(fmt::format("{}: no route to {}", named, server.address().to_string()));
  }
  if (!settings.gateway_mac.empty()) {
    const auto given = parse_mac(settings.gateway_mac);
    if (!given) {
      throw setup_error(fmt::format("{}: \"{}\" is not a MAC address (02:00:00:00:00:01)",
                                    settings.gateway_setting, settings.gateway_mac));
    }
    addresses_.destination_mac = *given;
  } else if (const auto neighbour = neighbour_mac(ifindex, server.address())) {
    addresses_.destination_mac = *neighbour;
  } else {
    throw setup_error(fmt::format(
        "{}: no MAC address for {} in the kernel's neighbour table (the server must be on the "
        "interface's link; else give the gateway's with {})",
        named, server.address().to_string(), settings.gateway_setting));
  }
  addresses_.destination = server.address();
  addresses_.destination_port = server.port();
  program_ = std::make_unique<xdp_program>(named, static_cast<int>(ifindex), server, settings.tcp);
  for (unsigned q = 0; q < queues; ++q) {
    ports_.push_back(
        std::make_unique<xdp_port>(settings.interface, named, q, program_->sockets_map()));
  }
  // The largest TCP segment a frame carries on this link: its MTU less the IP and TCP
  // headers (RFC 9293, 3.7.1), within a receive frame (4096 octets less the kernel's
  // XDP_PACKET_HEADROOM of 256, the program's stamp and the Ethernet header).
  const unsigned mtu = std::min(interface_mtu(settings.interface), 4096u - 256u - 32u - 14u);
  const unsigned headers = (server.address().is_v4() ? 20u : 40u) + 20u;
  tcp_mss_ = static_cast<std::uint16_t>(mtu > headers + 536 ? mtu - headers : 536);
  readers_.assign(queues, nullptr);
  owners_ = std::make_unique<std::atomic<xdp_worker*>[]>(65536);
  sources_ = std::make_unique<std::array<std::uint8_t, 16>[]>(65536);
  source_size_ = server.address().is_v4() ? 4 : 16;
}

xdp_run::~xdp_run() = default;

xdp_worker* xdp_run::join(xdp_client_socket& client, readiness_set& set, syscall_counter& syscalls,
                          const std::optional<boost::asio::ip::address>& source,
                          frame_addresses& addresses) {
  std::vector<unsigned> to_read;
  xdp_worker* worker = nullptr;
  {
    const std::lock_guard lock(mutex_);
    if (source && source->is_v4() != addresses_.destination.is_v4()) return nullptr;
    worker = worker_of(set, syscalls, to_read);
    if (worker == nullptr || !assign_port(*worker, source, addresses)) return nullptr;
    worker->join(client, addresses.source_port);
  }
  // Its thread is this one: the queues given to it above are watched now (start_reading
  // asks reads(), which locks).
  for (const unsigned q : to_read) worker->start_reading(q);
  return worker;
}

xdp_worker* xdp_run::worker(readiness_set& set, syscall_counter& syscalls) {
  std::vector<unsigned> to_read;
  xdp_worker* worker = nullptr;
  {
    const std::lock_guard lock(mutex_);
    worker = worker_of(set, syscalls, to_read);
  }
  if (worker != nullptr) {
    for (const unsigned q : to_read) worker->start_reading(q);
  }
  return worker;
}

std::optional<std::uint16_t> xdp_run::new_port(xdp_worker& worker,
                                               const boost::asio::ip::address& source) {
  const std::lock_guard lock(mutex_);
  frame_addresses addresses;
  if (!assign_port(worker, source, addresses)) return std::nullopt;
  return addresses.source_port;
}

void xdp_run::set_source(std::uint16_t port, const boost::asio::ip::address& source) noexcept {
  auto& own = sources_[port];
  if (source.is_v4()) {
    const auto bytes = source.to_v4().to_bytes();
    std::memcpy(own.data(), bytes.data(), bytes.size());
  } else {
    own = source.to_v6().to_bytes();
  }
}

xdp_worker* xdp_run::worker_of(readiness_set& set, syscall_counter& syscalls,
                               std::vector<unsigned>& to_read) {
  for (const auto& w : workers_) {
    if (&w->readiness() == &set) return w.get();
  }
  if (workers_.size() >= threads_) return nullptr;
  const auto index = static_cast<unsigned>(workers_.size());
  workers_.push_back(std::make_unique<xdp_worker>(*this, index, set, syscalls));
  xdp_worker* worker = workers_.back().get();
  // The queues no one reads, and those of its index, are its to read from now on; a worker
  // that read one of these stops when its thread gets to it.
  for (unsigned q = 0; q < queues(); ++q) {
    xdp_worker* before = readers_[q];
    if (before != nullptr && q % threads_ != index) continue;
    readers_[q] = worker;
    to_read.push_back(q);
    if (before != nullptr && before != worker) {
      boost::asio::post(before->readiness().io(), [run = weak_from_this(), before, q] {
        if (const auto alive = run.lock()) before->stop_reading(q);
      });
    }
  }
  return worker;
}

bool xdp_run::assign_port(xdp_worker& worker, const std::optional<boost::asio::ip::address>& source,
                          frame_addresses& addresses) {
  if (next_port_ > 65535) return false;
  if (source && source->is_v4() != addresses_.destination.is_v4()) return false;
  addresses = addresses_;
  if (source) addresses.source = *source;
  addresses.source_port = static_cast<std::uint16_t>(next_port_++);
  set_source(addresses.source_port, addresses.source);
  owners_[addresses.source_port].store(&worker, std::memory_order_release);
  return true;
}

void xdp_run::leave(std::uint16_t port) noexcept {
  xdp_worker* worker = owners_[port].exchange(nullptr, std::memory_order_acq_rel);
  if (worker != nullptr) worker->leave(port);
}

void xdp_run::retire(xdp_worker& worker) {
  const std::lock_guard lock(mutex_);
  // Those still running: not retired, and not this one.
  std::vector<xdp_worker*> running;
  for (const auto& w : workers_) {
    if (w.get() != &worker && w->running()) running.push_back(w.get());
  }
  worker.mark_stopped();
  std::size_t next = 0;
  for (unsigned q = 0; q < queues(); ++q) {
    if (readers_[q] != &worker) continue;
    xdp_worker* after = running.empty() ? nullptr : running[next++ % running.size()];
    readers_[q] = after;
    if (after != nullptr) {
      boost::asio::post(after->readiness().io(), [run = weak_from_this(), after, q] {
        if (const auto alive = run.lock()) after->start_reading(q);
      });
    }
  }
}

bool xdp_run::reads(const xdp_worker& worker, unsigned queue) {
  const std::lock_guard lock(mutex_);
  return readers_[queue] == &worker;
}

}  // namespace dnstransport::detail
