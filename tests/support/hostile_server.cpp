#include "hostile_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <list>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "message/proxy_header.hpp"
#include "test_certificates.hpp"
#include "transport/tls/tls_backend.hpp"

namespace dnstransport::hostile {

namespace {

using clock = std::chrono::steady_clock;

// Replies waiting for their time, in the order they are due (ties: in the order given).
template <typename Target>
class reply_schedule {
 public:
  void add(clock::time_point due, Target target, reply r) {
    pending_.emplace(std::make_pair(due, order_++),
                     std::make_pair(std::move(target), std::move(r)));
  }
  bool empty() const noexcept { return pending_.empty(); }
  // How long until the first reply is due; `idle` when none is waiting. In microseconds: a
  // wait rounded up to a millisecond would send a reply up to a millisecond late whenever no
  // query comes in meanwhile.
  microseconds wait(microseconds idle) const {
    if (pending_.empty()) return idle;
    const auto left = pending_.begin()->first.first - clock::now();
    return std::max(microseconds::zero(), std::chrono::ceil<microseconds>(left));
  }
  // Calls `send(target, reply)` for every reply due by now; stops when it returns false.
  template <typename Send>
  bool send_due(Send&& send) {
    const auto now = clock::now();
    while (!pending_.empty() && pending_.begin()->first.first <= now) {
      auto node = pending_.extract(pending_.begin());
      if (!send(node.mapped().first, node.mapped().second)) return false;
    }
    return true;
  }

 private:
  std::map<std::pair<clock::time_point, std::uint64_t>, std::pair<Target, reply>> pending_;
  std::uint64_t order_ = 0;
};

struct no_target {};

void throw_errno(const char* what) {
  throw std::runtime_error(std::string(what) + ": " + std::strerror(errno));
}

int open_listener(transport_kind transport, std::uint16_t& port) {
  const bool udp = transport == transport_kind::udp;
  const int fd =
      ::socket(AF_INET, (udp ? SOCK_DGRAM : SOCK_STREAM) | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) throw_errno("hostile responder socket");
  // Bursts of a whole pipeline must not be dropped by a small default buffer.
  const int size = 4 << 20;
  // A listener may take a port that connections of earlier tests left in TIME_WAIT.
  const int one = 1;
  if (!udp) ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof size);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(port);
  socklen_t length = sizeof address;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
      (!udp && ::listen(fd, 1024) != 0) ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    ::close(fd);
    throw_errno("hostile responder bind");
  }
  port = ntohs(address.sin_port);
  return fd;
}

std::string ipv4_of(const sockaddr_storage& address) {
  if (address.ss_family != AF_INET) return "?";
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(address).sin_addr, text, sizeof text);
  return text;
}

bool wait_readable(int fd, microseconds wait) {
  pollfd p{fd, POLLIN, 0};
  const timespec limit = to_timespec(std::min<microseconds>(wait, milliseconds(10)));
  return ::ppoll(&p, 1, &limit, nullptr) > 0;
}

}  // namespace

struct hostile_server::impl {
  hostile_options options;
  message_script messages;
  connection_script connection;
  certificate_files certificate;
  std::unique_ptr<detail::tls_server_context> tls;
  int fd = -1;
  std::uint16_t port = 0;
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> connections{0};
  std::atomic<std::uint64_t> queries{0};
  mutable std::mutex sources_mutex;
  std::set<std::string> sources;
  std::vector<proxied_client> proxied;  // under sources_mutex
  std::atomic<std::uint64_t> proxy_refused{0};
  std::thread main;
  struct connection_thread {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::list<connection_thread> threads;  // touched by the accepting thread only

  void start() {
    if (traits_of(options.transport).has_tls) {
      if (options.tls.certificate_file.empty()) {
        certificate = test_certificate();
        options.tls.certificate_file = certificate.certificate_file;
        options.tls.key_file = certificate.key_file;
      } else {
        certificate = {options.tls.certificate_file, options.tls.key_file};
      }
      tls = detail::make_tls_server_context(options.tls);
    }
    port = options.port;
    fd = open_listener(options.transport, port);
    if (options.transport == transport_kind::udp) {
      main = std::thread([this] { run_udp(); });
    } else {
      main = std::thread([this] { run_accept(); });
    }
  }

  void run_udp() {
    reply_schedule<std::pair<sockaddr_storage, socklen_t>> schedule;
    bytes buffer(65536);
    while (!stop.load(std::memory_order_relaxed)) {
      if (wait_readable(fd, schedule.wait(milliseconds(10)))) {
        for (;;) {
          sockaddr_storage from{};
          socklen_t length = sizeof from;
          const ssize_t n = ::recvfrom(fd, buffer.data(), buffer.size(), MSG_DONTWAIT,
                                       reinterpret_cast<sockaddr*>(&from), &length);
          if (n < 0) break;
          note_source(from);
          const auto now = clock::now();
          std::span<const std::uint8_t> query(buffer.data(), static_cast<std::size_t>(n));
          if (options.proxy_protocol) {
            const std::size_t header = read_proxy(query);
            if (header == 0) continue;
            query = query.subspan(header);
          }
          for (reply& r : messages(query, queries.fetch_add(1, std::memory_order_relaxed))) {
            schedule.add(now + r.delay, {from, length}, std::move(r));
          }
        }
      }
      schedule.send_due([this](const std::pair<sockaddr_storage, socklen_t>& to, const reply& r) {
        ::sendto(fd, r.data.data(), r.data.size(), 0, reinterpret_cast<const sockaddr*>(&to.first),
                 to.second);
        return true;
      });
    }
  }

  void run_accept() {
    while (!stop.load(std::memory_order_relaxed)) {
      reap(false);
      if (!wait_readable(fd, milliseconds(10))) continue;
      for (;;) {
        sockaddr_storage from{};
        socklen_t length = sizeof from;
        const int client = ::accept4(fd, reinterpret_cast<sockaddr*>(&from), &length,
                                     SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (client < 0) break;
        note_source(from);
        connections.fetch_add(1, std::memory_order_relaxed);
        auto done = std::make_shared<std::atomic<bool>>(false);
        threads.push_back({std::thread([this, client, done] {
                             serve_connection(client);
                             done->store(true);
                           }),
                           done});
      }
    }
    reap(true);
  }

  void note_source(const sockaddr_storage& from) {
    const std::string address = ipv4_of(from);
    const std::lock_guard lock(sources_mutex);
    sources.insert(address);
  }

  // A PROXY header at the start of `data`: noted, and its length returned; 0 (counted in
  // proxy_refused) when there is none or it is invalid.
  std::size_t read_proxy(std::span<const std::uint8_t> data) {
    const auto r = detail::read_proxy_header(data);
    if (r.result != detail::proxy_header_read::outcome::complete) {
      proxy_refused.fetch_add(1, std::memory_order_relaxed);
      return 0;
    }
    proxied_client c;
    c.source = r.connection.source.to_string();
    c.source_port = r.connection.source_port;
    c.destination = r.connection.destination.to_string();
    c.destination_port = r.connection.destination_port;
    c.stream = r.connection.stream;
    c.version = data[0] == 'P' ? 1 : 2;
    for (const auto& [type, value] : r.tlvs) c.tlvs.emplace_back(type, bytes(value));
    const std::lock_guard lock(sources_mutex);
    proxied.push_back(std::move(c));
    return r.length;
  }

  // The PROXY header at the start of a TCP connection, read octet-exact (what follows is the
  // client's, TLS or DNS): peeked until complete, then taken. False: none came in 10 s, or
  // it was not one.
  bool read_connection_proxy(int client) {
    std::array<std::uint8_t, 256> peeked{};
    const auto deadline = clock::now() + std::chrono::seconds(10);
    while (!stop.load(std::memory_order_relaxed) && clock::now() < deadline) {
      const ssize_t n = ::recv(client, peeked.data(), peeked.size(), MSG_PEEK | MSG_DONTWAIT);
      if (n == 0) break;
      if (n > 0) {
        const auto r = detail::read_proxy_header({peeked.data(), static_cast<std::size_t>(n)});
        if (r.result == detail::proxy_header_read::outcome::complete) {
          const std::size_t length = read_proxy({peeked.data(), static_cast<std::size_t>(n)});
          return ::recv(client, peeked.data(), length, MSG_DONTWAIT) ==
                 static_cast<ssize_t>(length);
        }
        if (r.result != detail::proxy_header_read::outcome::incomplete) break;
      } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        break;
      }
      wait_readable(client, milliseconds(10));
    }
    proxy_refused.fetch_add(1, std::memory_order_relaxed);
    return false;
  }

  void serve_connection(int client) {
    if (options.proxy_protocol && !read_connection_proxy(client)) {
      ::close(client);
      return;
    }
    const bool handshake = tls && options.tls_handshake;
    stream_peer peer(client, stop, queries, handshake ? tls.get() : nullptr);
    if (handshake && !peer.handshake()) return;
    if (connection) {
      connection(peer);
    } else {
      serve_messages(peer, messages);
    }
  }

  // Joins finished connection threads (all of them at the end), so a client that
  // reconnects thousands of times does not pile up threads.
  void reap(bool all) {
    for (auto it = threads.begin(); it != threads.end();) {
      if (all || it->done->load()) {
        it->thread.join();
        it = threads.erase(it);
      } else {
        ++it;
      }
    }
  }

  ~impl() {
    stop.store(true);
    if (main.joinable()) main.join();
    if (fd >= 0) ::close(fd);
  }
};

hostile_server::hostile_server(hostile_options options, message_script script)
    : impl_(std::make_unique<impl>()) {
  impl_->options = std::move(options);
  impl_->messages = std::move(script);
  impl_->start();
}

hostile_server::hostile_server(hostile_options options, connection_script script)
    : impl_(std::make_unique<impl>()) {
  if (options.transport == transport_kind::udp) {
    throw std::invalid_argument("a connection script needs TCP or TLS");
  }
  impl_->options = std::move(options);
  impl_->connection = std::move(script);
  impl_->start();
}

hostile_server::~hostile_server() = default;

std::uint16_t hostile_server::port() const noexcept {
  return impl_->port;
}

std::uint64_t hostile_server::connections() const noexcept {
  return impl_->connections.load();
}

std::vector<proxied_client> hostile_server::proxied() const {
  const std::lock_guard lock(impl_->sources_mutex);
  return impl_->proxied;
}

std::uint64_t hostile_server::proxy_refused() const noexcept {
  return impl_->proxy_refused.load();
}

std::uint64_t hostile_server::queries() const noexcept {
  return impl_->queries.load();
}

std::set<std::string> hostile_server::sources() const {
  const std::lock_guard lock(impl_->sources_mutex);
  return impl_->sources;
}

void query_log::add(std::span<const std::uint8_t> query) {
  const std::lock_guard lock(mutex_);
  queries_.emplace_back(query.begin(), query.end());
}

std::vector<bytes> query_log::queries() const {
  const std::lock_guard lock(mutex_);
  return queries_;
}

message_script recorded(std::shared_ptr<query_log> log, message_script script) {
  return [log = std::move(log), script = std::move(script)](std::span<const std::uint8_t> query,
                                                            std::uint64_t number) {
    log->add(query);
    return script(query, number);
  };
}

const certificate_files& hostile_server::certificate() const noexcept {
  return impl_->certificate;
}

unlistened_tcp_port::unlistened_tcp_port() : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
      ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    if (fd_ >= 0) ::close(fd_);
    throw_errno("unlistened TCP port");
  }
  port_ = ntohs(address.sin_port);
}

unlistened_tcp_port::~unlistened_tcp_port() {
  ::close(fd_);
}

void serve_messages(stream_peer& peer, const message_script& script) {
  reply_schedule<no_target> schedule;
  while (!peer.gone()) {
    if (auto query = peer.read_message(schedule.wait(forever))) {
      const auto now = clock::now();
      for (reply& r : script(*query, peer.query_number())) {
        schedule.add(now + r.delay, {}, std::move(r));
      }
    }
    const bool sent = schedule.send_due([&peer](no_target, const reply& r) {
      return r.unframed ? peer.write(r.data) : peer.write_message(r.data);
    });
    if (!sent) return;
  }
}

}  // namespace dnstransport::hostile
