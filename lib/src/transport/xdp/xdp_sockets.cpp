// DNS over UDP from AF_XDP sockets (xdp_sockets.hpp): the run's set-up (the interface, its
// queues and MAC address, the server's MAC address, the source address, the program, one
// port per worker thread) and each client's datagram_socket.
#include "transport/xdp/xdp_sockets.hpp"

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <mutex>

#include <fmt/format.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/post.hpp>

#include <dnstransport/error.hpp>

#include "engine/readiness.hpp"
#include "transport/xdp/xdp_client_socket.hpp"
#include "transport/xdp/xdp_neighbours.hpp"
#include "transport/xdp/xdp_port.hpp"
#include "transport/xdp/xdp_program.hpp"
#include "util/receive_time.hpp"

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

// What a run over AF_XDP shares: the program attached to the interface and one port per
// receive queue of it, all read by the run's one worker thread (an answer comes in on the
// queue the server or the NIC's hash picks, so every queue is read).
class xdp_run {
 public:
  explicit xdp_run(const xdp_settings& settings);

  // A new client, on the worker whose readiness set this is: every port watched by it from
  // the first client on, and the client known to each by its source port. Returns the port
  // it sends through (the clients take them in turn) and its addresses with a source port
  // of its own; null when no source port is left or a second worker asks.
  xdp_port* join(xdp_client_socket& client, readiness_set& set, syscall_counter& syscalls,
                 frame_addresses& addresses);
  void leave(std::uint16_t port) noexcept;

 private:
  std::unique_ptr<xdp_program> program_;  // outlives the ports
  std::vector<std::unique_ptr<xdp_port>> ports_;
  readiness_set* owner_ = nullptr;
  frame_addresses addresses_;
  std::mutex mutex_;
  std::uint32_t next_port_ = 10000;
};

xdp_run::xdp_run(const xdp_settings& settings) {
  const std::string named = fmt::format("{} {}", settings.setting, settings.interface);
  const unsigned ifindex = if_nametoindex(settings.interface.c_str());
  if (ifindex == 0) throw setup_error(fmt::format("{}: no such network interface", named));
  if (settings.threads > 1) {
    throw setup_error(fmt::format(
        "{}: AF_XDP runs one worker thread for now ({} 1), which reads every queue of the "
        "interface",
        named, settings.threads_setting));
  }
  const unsigned queues = std::max(receive_queues(settings.interface), 1u);
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
  if (settings.source) {
    addresses_.source = *settings.source;
  } else if (const auto kernel = kernel_source(server)) {
    addresses_.source = *kernel;
  } else {
    throw setup_error(fmt::format("{}: no route to {}", named, server.address().to_string()));
  }
  if (addresses_.source.is_v4() != server.address().is_v4()) {
    throw setup_error(fmt::format("{}: the source address {} and the server {} differ in family",
                                  named, addresses_.source.to_string(),
                                  server.address().to_string()));
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
  program_ = std::make_unique<xdp_program>(named, static_cast<int>(ifindex), server);
  for (unsigned q = 0; q < queues; ++q) {
    ports_.push_back(
        std::make_unique<xdp_port>(settings.interface, named, q, program_->sockets_map()));
    ports_.back()->expect(addresses_);
  }
}

xdp_port* xdp_run::join(xdp_client_socket& client, readiness_set& set, syscall_counter& syscalls,
                        frame_addresses& addresses) {
  const std::lock_guard lock(mutex_);
  if (owner_ != nullptr && owner_ != &set) return nullptr;
  if (next_port_ > 65535) return nullptr;
  if (owner_ == nullptr) {
    owner_ = &set;
    for (const auto& p : ports_) p->watch(set, syscalls);
  }
  addresses = addresses_;
  addresses.source_port = static_cast<std::uint16_t>(next_port_);
  for (const auto& p : ports_) p->join(client, addresses.source_port);
  return ports_[next_port_++ % ports_.size()].get();
}

void xdp_run::leave(std::uint16_t port) noexcept {
  for (const auto& p : ports_) p->leave(port);
}

xdp_client_socket::xdp_client_socket(std::shared_ptr<xdp_run> run, readiness_set& readiness,
                                     ready_callback on_ready, syscall_counter& syscalls)
    : run_(std::move(run)),
      readiness_(readiness),
      on_ready_(std::move(on_ready)),
      syscalls_(syscalls) {}

xdp_client_socket::~xdp_client_socket() {
  if (port_ != nullptr) run_->leave(to_.source_port);
}

int xdp_client_socket::open(const boost::asio::ip::udp::endpoint&,
                            const std::optional<boost::asio::ip::address>&) {
  port_ = run_->join(*this, readiness_, syscalls_, to_);
  return port_ != nullptr ? 0 : EADDRINUSE;
}

socklen_t xdp_client_socket::local_address(sockaddr_storage& address) {
  const boost::asio::ip::udp::endpoint local(to_.source, to_.source_port);
  std::memcpy(&address, local.data(), local.size());
  return static_cast<socklen_t>(local.size());
}

void xdp_client_socket::call_later(bool readable, std::uint64_t token, bool ok) {
  boost::asio::post(readiness_.io(),
                    [this, readable, token, ok] { on_ready_(readable, token, ok); });
}

void xdp_client_socket::async_wait(bool readable, std::uint64_t token) {
  if (readable) {
    if (!answers_.empty()) {
      call_later(true, token, true);
      return;
    }
    waiting_read_ = true;
    read_token_ = token;
    return;
  }
  waiting_write_ = true;
  write_token_ = token;
  if (port_ != nullptr) port_->wait_writable(*this);
}

void xdp_client_socket::cancel() {
  if (waiting_read_) {
    waiting_read_ = false;
    call_later(true, read_token_, false);
  }
  if (waiting_write_) {
    waiting_write_ = false;
    call_later(false, write_token_, false);
  }
}

void xdp_client_socket::close() {
  cancel();
  if (port_ != nullptr) run_->leave(to_.source_port);
  port_ = nullptr;
  answers_.clear();
}

bool xdp_client_socket::deliver(std::span<const std::uint8_t> payload, std::uint64_t received_ns) {
  try {
    answers_.push_back({received_ns, {payload.begin(), payload.end()}});
  } catch (...) {  // out of memory: the answer is lost, as a full socket buffer loses one
    return false;
  }
  if (!waiting_read_) return false;
  waiting_read_ = false;
  return true;
}

void xdp_client_socket::wake_readable() {
  on_ready_(true, read_token_, true);
}

void xdp_client_socket::wake_writable() {
  if (!waiting_write_) return;
  waiting_write_ = false;
  on_ready_(false, write_token_, true);
}

int xdp_client_socket::receive(std::span<mmsghdr> messages) {
  if (port_ == nullptr) return -EBADF;
  int n = 0;
  const receive_clock clock = receive_clock::read();
  for (mmsghdr& m : messages) {
    if (answers_.empty()) break;
    const answer& a = answers_.front();
    const iovec& into = m.msg_hdr.msg_iov[0];
    const std::size_t size = std::min(a.message.size(), into.iov_len);
    std::memcpy(into.iov_base, a.message.data(), size);
    m.msg_len = static_cast<unsigned>(size);
    // Its receive time as the kernel's SO_TIMESTAMPNS stamp would carry it (CLOCK_REALTIME).
    msghdr& h = m.msg_hdr;
    if (h.msg_control != nullptr && h.msg_controllen >= CMSG_SPACE(sizeof(timespec))) {
      cmsghdr* c = CMSG_FIRSTHDR(&h);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_TIMESTAMPNS;
      c->cmsg_len = CMSG_LEN(sizeof(timespec));
      const std::uint64_t real = a.received_ns + clock.realtime_ahead;
      const timespec stamp{static_cast<time_t>(real / 1'000'000'000),
                           static_cast<long>(real % 1'000'000'000)};
      std::memcpy(CMSG_DATA(c), &stamp, sizeof stamp);
      h.msg_controllen = CMSG_SPACE(sizeof(timespec));
    } else {
      h.msg_controllen = 0;
    }
    answers_.pop_front();
    ++n;
  }
  return n == 0 ? -EAGAIN : n;
}

int xdp_client_socket::send(std::span<mmsghdr> messages) {
  if (port_ == nullptr) return -EBADF;
  return port_->send(to_, messages);
}

datagram_socket_factory make_xdp_sockets(const xdp_settings& settings) {
  auto run = std::make_shared<xdp_run>(settings);
  return [run](readiness_set& readiness, datagram_socket::ready_callback on_ready,
               syscall_counter& syscalls) -> std::unique_ptr<datagram_socket> {
    return std::make_unique<xdp_client_socket>(run, readiness, std::move(on_ready), syscalls);
  };
}

}  // namespace dnstransport::detail
