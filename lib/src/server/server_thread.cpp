#include "server/server_thread.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>

#include <fmt/format.h>

#include <dnstransport/error.hpp>

#include "server/rate_limiter.hpp"
#include "server/responder.hpp"
#include "server/server_connection.hpp"
#include "server/server_doh_connection.hpp"
#include "transport/stream/byte_stream.hpp"
#include "util/clock.hpp"
#include "util/cpu_pinning.hpp"
#include "util/socket_util.hpp"

namespace dnstransport::detail {

namespace {

constexpr unsigned udp_batch = 32;
constexpr std::size_t datagram_max = 65536;

template <typename Endpoint>
std::string describe(const Endpoint& where) {
  const auto address = where.address().to_string();
  return where.address().is_v6() ? fmt::format("[{}]:{}", address, where.port())
                                 : fmt::format("{}:{}", address, where.port());
}

}  // namespace

server_thread::server_thread(const server_options& options, tls_server_context* tls,
                             tls_server_context* doh, rate_limiter* limiter)
    : options_(options),
      limiter_(limiter),
      tcp_edns_(answer_edns_for(options, transport_kind::tcp)),
      tls_edns_(answer_edns_for(options, transport_kind::tls)),
      doq_edns_(answer_edns_for(options, transport_kind::doq)),
      tcp_streams_(make_tcp_acceptor()),
      tls_streams_(tls != nullptr ? make_tls_acceptor(*tls) : nullptr),
      doh_streams_(doh != nullptr ? make_tls_acceptor(*doh) : nullptr),
      sweep_timer_(io_),
      answer_scratch_(65535 + answer_room(tls_edns_)) {}

server_thread::~server_thread() {
  stop();
}

std::uint16_t server_thread::open_udp(const boost::asio::ip::udp::endpoint& where) {
  boost::system::error_code ec;
  udp_.emplace(io_);
  udp_->open(where.protocol(), ec);
  if (!ec) udp_->set_option(boost::asio::socket_base::reuse_address(true), ec);
  if (!ec) {
    const int one = 1;
    setsockopt(udp_->native_handle(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
    udp_->bind(where, ec);
  }
  if (!ec) udp_->non_blocking(true, ec);
  if (ec)
    throw setup_error(fmt::format("cannot listen on UDP {}: {}", describe(where), ec.message()));
  enlarge_socket_buffers(udp_->native_handle());
  in_.resize(udp_batch * datagram_max);
  out_.resize(udp_batch * (datagram_max + answer_overhead));
  return udp_->local_endpoint().port();
}

static std::uint16_t open_acceptor(std::optional<boost::asio::ip::tcp::acceptor>& acceptor,
                                   boost::asio::io_context& io,
                                   const boost::asio::ip::tcp::endpoint& where, const char* what) {
  boost::system::error_code ec;
  acceptor.emplace(io);
  acceptor->open(where.protocol(), ec);
  if (!ec) acceptor->set_option(boost::asio::socket_base::reuse_address(true), ec);
  if (!ec) {
    const int one = 1;
    setsockopt(acceptor->native_handle(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
    acceptor->bind(where, ec);
  }
  if (!ec) {
    // Accept data in the SYN from clients using TCP Fast Open (--tcp-fastopen); refused
    // harmlessly where the kernel has it off.
    const int queue = 4096;
    setsockopt(acceptor->native_handle(), IPPROTO_TCP, TCP_FASTOPEN, &queue, sizeof queue);
    acceptor->listen(4096, ec);
  }
  if (ec) {
    throw setup_error(
        fmt::format("cannot listen on {} {}: {}", what, describe(where), ec.message()));
  }
  return acceptor->local_endpoint().port();
}

std::uint16_t server_thread::open_tcp(const boost::asio::ip::tcp::endpoint& where) {
  return open_acceptor(tcp_, io_, where, "TCP");
}

std::uint16_t server_thread::open_tls(const boost::asio::ip::tcp::endpoint& where) {
  return open_acceptor(tls_acceptor_, io_, where, "TLS");
}

std::uint16_t server_thread::open_doh(const boost::asio::ip::tcp::endpoint& where) {
  return open_acceptor(doh_acceptor_, io_, where, "DoH");
}

void server_thread::add_listener(std::unique_ptr<thread_listener> listener) {
  listeners_.push_back(std::move(listener));
}

void server_thread::start(std::optional<int> cpu) {
  if (udp_) wait_udp();
  for (auto& listener : listeners_) listener->start();
  if (tcp_) accept(*tcp_, *tcp_streams_, counters.tcp_queries, tcp_edns_);
  if (tls_acceptor_) accept(*tls_acceptor_, *tls_streams_, counters.tls_queries, tls_edns_);
  if (doh_acceptor_) accept_doh();
  if (options_.idle_timeout_seconds > 0) schedule_sweep();
  thread_ = std::thread([this, cpu] {
    if (cpu) pin_current_thread(*cpu);
    io_.run();
  });
}

void server_thread::stop() {
  if (!thread_.joinable()) return;
  io_.stop();
  thread_.join();
  connections_.clear();
}

void server_thread::forget(accepted_connection* connection) {
  connections_.erase(connection);
}

void server_thread::wait_udp() {
  udp_->async_wait(boost::asio::socket_base::wait_read,
                   [this](const boost::system::error_code& ec) {
                     if (!ec) on_udp_readable();
                   });
}

void server_thread::on_udp_readable() {
  const int fd = udp_->native_handle();
  std::array<mmsghdr, udp_batch> in_msgs{};
  std::array<iovec, udp_batch> in_iov{};
  std::array<sockaddr_storage, udp_batch> peers{};
  for (unsigned i = 0; i < udp_batch; ++i) {
    in_iov[i] = {&in_[i * datagram_max], datagram_max};
    in_msgs[i].msg_hdr.msg_iov = &in_iov[i];
    in_msgs[i].msg_hdr.msg_iovlen = 1;
    in_msgs[i].msg_hdr.msg_name = &peers[i];
    in_msgs[i].msg_hdr.msg_namelen = sizeof(sockaddr_storage);
  }
  std::array<mmsghdr, udp_batch> out_msgs{};
  std::array<iovec, udp_batch> out_iov{};
  for (int round = 0; round < 64; ++round) {
    for (auto& m : in_msgs) m.msg_hdr.msg_namelen = sizeof(sockaddr_storage);
    const int n = recvmmsg(fd, in_msgs.data(), udp_batch, MSG_DONTWAIT, nullptr);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      break;
    }
    unsigned replies = 0;
    for (int i = 0; i < n; ++i) {
      const std::span<const std::uint8_t> query(&in_[i * datagram_max], in_msgs[i].msg_len);
      std::uint8_t* out = &out_[i * (datagram_max + answer_overhead)];
      const std::size_t size =
          build_answer(query, options_.mode, {out, datagram_max + answer_overhead});
      if (size == 0) {
        counters.malformed_queries.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      out_iov[replies] = {out, size};
      out_msgs[replies].msg_hdr = {};
      out_msgs[replies].msg_hdr.msg_iov = &out_iov[replies];
      out_msgs[replies].msg_hdr.msg_iovlen = 1;
      out_msgs[replies].msg_hdr.msg_name = &peers[i];
      out_msgs[replies].msg_hdr.msg_namelen = in_msgs[i].msg_hdr.msg_namelen;
      ++replies;
    }
    if (limiter_ != nullptr && replies > 0) {
      // Over the limit: the answers past the tokens granted are not sent.
      const unsigned granted = limiter_->take(replies, monotonic_ns());
      counters.rate_limited_dropped.fetch_add(replies - granted, std::memory_order_relaxed);
      replies = granted;
    }
    counters.udp_queries.fetch_add(replies, std::memory_order_relaxed);
    unsigned done = 0;
    while (done < replies) {
      const int sent = sendmmsg(fd, &out_msgs[done], replies - done, 0);
      if (sent <= 0) {
        if (sent < 0 && errno == EINTR) continue;
        break;  // a full socket buffer drops answers, as a loaded server would
      }
      done += static_cast<unsigned>(sent);
    }
    if (n < static_cast<int>(udp_batch)) break;
  }
  wait_udp();
}

void server_thread::accept(boost::asio::ip::tcp::acceptor& acceptor, stream_acceptor& streams,
                           std::atomic<std::uint64_t>& queries, const answer_edns& edns) {
  acceptor.async_accept([this, &acceptor, &streams, &queries, &edns](
                            const boost::system::error_code& ec,
                            boost::asio::ip::tcp::socket socket) {
    if (ec == boost::asio::error::operation_aborted) return;
    if (!ec) {
      counters.connections_accepted.fetch_add(1, std::memory_order_relaxed);
      adopt(std::make_shared<server_connection>(*this, std::move(socket), streams, queries, edns));
    }
    accept(acceptor, streams, queries, edns);
  });
}

void server_thread::accept_doh() {
  doh_acceptor_->async_accept(
      [this](const boost::system::error_code& ec, boost::asio::ip::tcp::socket socket) {
        if (ec == boost::asio::error::operation_aborted) return;
        if (!ec) {
          counters.connections_accepted.fetch_add(1, std::memory_order_relaxed);
          adopt(std::make_shared<server_doh_connection>(*this, std::move(socket), *doh_streams_));
        }
        accept_doh();
      });
}

void server_thread::adopt(std::shared_ptr<accepted_connection> connection) {
  accepted_connection* key = connection.get();
  connections_.emplace(key, connection);
  connection->start();
}

void server_thread::schedule_sweep() {
  sweep_timer_.expires_after(std::chrono::milliseconds(50));
  sweep_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    const std::uint64_t now = monotonic_ns();
    std::vector<std::shared_ptr<accepted_connection>> open;
    open.reserve(connections_.size());
    for (auto& [key, connection] : connections_) open.push_back(connection);
    for (auto& connection : open) connection->check_idle(now);
    schedule_sweep();
  });
}

}  // namespace dnstransport::detail
