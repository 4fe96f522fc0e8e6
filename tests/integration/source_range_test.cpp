// Source ranges (connection_settings::sources, --source): clients bind the hosts of a range
// of 127.0.0.0/8 (all of it is loopback), one each or in turn, and a server that records its
// peers sees exactly those addresses.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include <dnstransport/error.hpp>
#include <dnstransport/load.hpp>
#include <dnstransport/report.hpp>

#include "child_process.hpp"
#include "cli_runs.hpp"
#include "in_ci.hpp"
#include "scratch_dir.hpp"

namespace dnstransport {
namespace {

// A DNS echo (the query back with QR set) over UDP and TCP on 127.0.0.1 that records the
// address of each datagram's sender and of each connection it accepts.
class recording_echo {
 public:
  recording_echo() {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    udp_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    tcp_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int one = 1;
    ::setsockopt(tcp_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(udp_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::bind(tcp_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(tcp_, 256) != 0) {
      ADD_FAILURE() << "cannot bind the echo";
    }
    udp_port_ = port_of(udp_);
    tcp_port_ = port_of(tcp_);
    thread_ = std::thread([this] { serve(); });
  }

  ~recording_echo() {
    const std::uint64_t one = 1;
    if (::write(stop_, &one, sizeof one) < 0) ADD_FAILURE() << "cannot stop the echo";
    thread_.join();
    for (const auto& [fd, buffer] : connections_) ::close(fd);
    ::close(udp_);
    ::close(tcp_);
    ::close(stop_);
  }

  std::uint16_t udp_port() const { return udp_port_; }
  std::uint16_t tcp_port() const { return tcp_port_; }
  // Address -> datagrams (UDP) or connections (TCP) from it.
  std::map<std::string, std::uint64_t> udp_peers() const {
    const std::lock_guard lock(mutex_);
    return udp_peers_;
  }
  std::map<std::string, std::uint64_t> tcp_peers() const {
    const std::lock_guard lock(mutex_);
    return tcp_peers_;
  }

 private:
  static std::uint16_t port_of(int fd) {
    sockaddr_in a{};
    socklen_t size = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &size);
    return ntohs(a.sin_port);
  }

  static std::string address_of(const sockaddr_in& a) {
    char text[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &a.sin_addr, text, sizeof text);
    return text;
  }

  void serve() {
    for (;;) {
      std::vector<pollfd> fds{{stop_, POLLIN, 0}, {udp_, POLLIN, 0}, {tcp_, POLLIN, 0}};
      for (const auto& [fd, buffer] : connections_) fds.push_back({fd, POLLIN, 0});
      if (::poll(fds.data(), fds.size(), -1) < 0) continue;
      if (fds[0].revents != 0) return;
      if (fds[1].revents != 0) echo_datagram();
      if (fds[2].revents != 0) accept_one();
      for (std::size_t i = 3; i < fds.size(); ++i) {
        if (fds[i].revents != 0) read_from(fds[i].fd);
      }
    }
  }

  void echo_datagram() {
    std::uint8_t message[4096];
    sockaddr_in from{};
    socklen_t size = sizeof from;
    const ssize_t n =
        ::recvfrom(udp_, message, sizeof message, 0, reinterpret_cast<sockaddr*>(&from), &size);
    if (n < 12) return;
    message[2] |= 0x80;  // QR: the query back as its answer
    ::sendto(udp_, message, static_cast<std::size_t>(n), 0, reinterpret_cast<sockaddr*>(&from),
             size);
    const std::lock_guard lock(mutex_);
    ++udp_peers_[address_of(from)];
  }

  void accept_one() {
    sockaddr_in from{};
    socklen_t size = sizeof from;
    const int fd = ::accept4(tcp_, reinterpret_cast<sockaddr*>(&from), &size, SOCK_CLOEXEC);
    if (fd < 0) return;
    connections_[fd];
    const std::lock_guard lock(mutex_);
    ++tcp_peers_[address_of(from)];
  }

  // Answers every whole length-prefixed query read so far; closes on EOF.
  void read_from(int fd) {
    std::uint8_t chunk[4096];
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n <= 0) {
      ::close(fd);
      connections_.erase(fd);
      return;
    }
    auto& buffer = connections_[fd];
    buffer.insert(buffer.end(), chunk, chunk + n);
    while (buffer.size() >= 2) {
      const std::size_t length = (std::size_t{buffer[0]} << 8) | buffer[1];
      if (buffer.size() < 2 + length) break;
      std::vector<std::uint8_t> answer(buffer.begin(), buffer.begin() + 2 + length);
      if (length >= 12) answer[4] |= 0x80;
      if (::write(fd, answer.data(), answer.size()) < 0) break;
      buffer.erase(buffer.begin(), buffer.begin() + 2 + length);
    }
  }

  int udp_ = -1;
  int tcp_ = -1;
  int stop_ = ::eventfd(0, EFD_CLOEXEC);
  std::uint16_t udp_port_ = 0;
  std::uint16_t tcp_port_ = 0;
  std::map<int, std::vector<std::uint8_t>> connections_;  // the serving thread's own
  mutable std::mutex mutex_;
  std::map<std::string, std::uint64_t> udp_peers_;
  std::map<std::string, std::uint64_t> tcp_peers_;
  std::thread thread_;
};

std::set<std::string> keys(const std::map<std::string, std::uint64_t>& peers) {
  std::set<std::string> out;
  for (const auto& [address, n] : peers) out.insert(address);
  return out;
}

std::set<std::string> hosts(const std::string& prefix, unsigned first, unsigned last) {
  std::set<std::string> out;
  for (unsigned i = first; i <= last; ++i) out.insert(prefix + std::to_string(i));
  return out;
}

load_spec load_of(transport_kind transport, std::uint16_t port, unsigned clients,
                  std::uint64_t count) {
  load_spec spec;
  spec.target.transport = transport;
  spec.target.port = port;
  spec.traffic.clients = clients;
  spec.traffic.outstanding = 1;
  spec.traffic.count = count;
  spec.traffic.timeout_seconds = 20;
  return spec;
}

TEST(source_range_test, udp_clients_each_send_from_a_host_of_the_range) {
  recording_echo echo;
  load_spec spec = load_of(transport_kind::udp, echo.udp_port(), 20, 400);
  spec.traffic.outstanding = 5;
  spec.connections.sources = {"127.1.0.0/24"};
  const run_result r = run_load(spec);
  EXPECT_EQ(r.responses_received, 400u);
  EXPECT_EQ(r.source_addresses, 20u);
  EXPECT_TRUE(r.sources_per_client);  // 254 hosts for 20 clients: one each
  EXPECT_EQ(keys(echo.udp_peers()), hosts("127.1.0.", 1, 20));
}

TEST(source_range_test, a_tcp_client_keeps_its_address_for_every_connection) {
  recording_echo echo;
  load_spec spec = load_of(transport_kind::tcp, echo.tcp_port(), 4, 40);
  spec.connections.queries_per_connection = 1;
  spec.connections.sources = {"127.2.0.0/29"};  // 6 hosts
  spec.connections.source_mode = source_mode::per_client;
  const run_result r = run_load(spec);
  EXPECT_EQ(r.responses_received, 40u);
  EXPECT_TRUE(r.sources_per_client);
  EXPECT_EQ(r.source_addresses, 4u);
  const auto peers = echo.tcp_peers();
  EXPECT_EQ(keys(peers), hosts("127.2.0.", 1, 4));
  std::uint64_t connections = 0;
  for (const auto& [address, n] : peers) connections += n;
  EXPECT_EQ(connections, r.connections.opened);
}

TEST(source_range_test, taken_in_turn_tcp_connections_spread_over_the_whole_range) {
  recording_echo echo;
  load_spec spec = load_of(transport_kind::tcp, echo.tcp_port(), 2, 60);
  spec.connections.queries_per_connection = 1;
  spec.connections.sources = {"127.3.0.0/29"};
  spec.connections.source_mode = source_mode::round_robin;
  const run_result r = run_load(spec);
  EXPECT_EQ(r.responses_received, 60u);
  EXPECT_FALSE(r.sources_per_client);
  EXPECT_EQ(r.source_addresses, 6u);
  // Client i's k-th connection binds host (i + 2k) mod 6: each client three of them.
  EXPECT_EQ(keys(echo.tcp_peers()), hosts("127.3.0.", 1, 6));
}

TEST(source_range_test, fewer_addresses_than_clients_are_taken_in_turn_or_refused_per_client) {
  recording_echo echo;
  load_spec spec = load_of(transport_kind::udp, echo.udp_port(), 8, 80);
  spec.connections.sources = {"127.4.0.0/30"};  // 2 hosts
  const run_result r = run_load(spec);
  EXPECT_EQ(r.responses_received, 80u);
  EXPECT_FALSE(r.sources_per_client);
  EXPECT_EQ(r.source_addresses, 2u);
  EXPECT_EQ(keys(echo.udp_peers()), hosts("127.4.0.", 1, 2));

  spec.connections.source_mode = source_mode::per_client;
  try {
    run_load(spec);
    ADD_FAILURE() << "8 clients ran per client on 2 addresses";
  } catch (const setup_error& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find("load_spec::traffic.clients 8"), std::string::npos) << text;
    EXPECT_NE(text.find("127.4.0.0/30 holds 2"), std::string::npos) << text;
    EXPECT_NE(text.find("round-robin"), std::string::npos) << text;
  }
}

#ifdef DNSTRANSPORT_CLI_PATH
// An IPv6 range made local in a network namespace of its own (`ip -6 route add local`, and
// net.ipv6.ip_nonlocal_bind, without which IPv6 binds only assigned addresses): the
// clients' connections to a `serve` on ::1 leave from its first hosts, one per client, as the
// kernel's TIME_WAIT sockets (the client closes each connection) say after the run.
TEST(source_range_test, an_ipv6_range_made_local_in_a_namespace_is_bound_per_client) {
  const std::string unshare = "/usr/bin/unshare";
  if (::geteuid() != 0 || !std::filesystem::exists(unshare) ||
      hostile::run_process(unshare, {"-n", "true"}, std::chrono::seconds(10)).exit_code != 0) {
    if (hostile::in_ci()) FAIL() << "needs root and unshare -n; CI runs as root and has both";
    GTEST_SKIP() << "needs root and unshare -n for a network namespace of its own";
  }
  const hostile::scratch files("source-v6");
  const std::string json = files.path("run.json");
  const std::string sockets = files.path("time-wait");
  const std::string serve_out = files.path("serve.out");
  const std::string script = fmt::format(
      "ip link set lo up && ip -6 route add local fd00::/112 dev lo && "
      "sysctl -qw net.ipv6.ip_nonlocal_bind=1 || exit 99\n"
      "'{0}' serve --listen '[::1]:5300' --tcp '[::1]:5300' > '{1}' 2>&1 & serve=$!\n"
      "for i in $(seq 300); do grep -q '^tcp' '{1}' && break; sleep 0.1; done\n"
      "'{0}' run --server '[::1]:5300' --transport tcp --queries-per-connection 1 --clients 4 "
      "--outstanding 1 --count 100 --source fd00::/112 --quiet --json '{2}'; code=$?\n"
      "ss -Htan state time-wait > '{3}'\n"
      "kill -INT $serve; wait $serve; exit $code",
      hostile::cli, serve_out, json, sockets);
  const hostile::process_result r =
      hostile::run_process(unshare, {"-n", "sh", "-c", script}, std::chrono::seconds(60));
  ASSERT_FALSE(r.timed_out);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  std::ifstream in(json);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const run_result result = run_result_from_json(text, json);
  EXPECT_EQ(result.responses_received, 100u);
  EXPECT_EQ(result.source_addresses, 4u);
  EXPECT_TRUE(result.sources_per_client);
  // Local address of each TIME_WAIT socket: "[fd00::3]:40112" in the third column.
  std::set<std::string> local;
  std::ifstream listed(sockets);
  for (std::string line; std::getline(listed, line);) {
    std::istringstream fields(line);
    std::string recv_q, send_q, address;
    fields >> recv_q >> send_q >> address;
    if (address.rfind("[fd00::", 0) == 0) local.insert(address.substr(1, address.find(']') - 1));
  }
  EXPECT_EQ(local, (std::set<std::string>{"fd00::1", "fd00::2", "fd00::3", "fd00::4"}));
}

TEST(source_range_test, the_cli_takes_ranges_and_says_how_many_addresses_it_used) {
  const hostile::process_result r = hostile::run_process(
      hostile::cli, {"run", "--transport", "tcp", "--clients", "4", "--count", "200", "--source",
                     "127.6.0.0/24,127.7.0.1", "--source-mode", "per-client"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("source addresses        4, one per client"), std::string::npos) << r.out;
  hostile::expect_refused({"run", "--source-mode", "spread"}, "--source-mode");
  hostile::expect_refused({"run", "--source", "127.0.0.0/40"}, "--source: \"127.0.0.0/40\"");
}
#endif

}  // namespace
}  // namespace dnstransport
