// The responder's UDP listener: a SO_REUSEPORT socket per thread, drained on readiness with
// recvmmsg, every answer of a batch sent with one sendmmsg.
#include "transport/udp/udp_listener.hpp"

#include <sys/socket.h>

#include <array>
#include <cerrno>

#include <fmt/format.h>
#include <boost/asio/ip/udp.hpp>

#include <dnstransport/error.hpp>

#include "message/proxy_header.hpp"
#include "responder/rate_limiter.hpp"
#include "responder/responder.hpp"
#include "util/clock.hpp"
#include "util/socket_util.hpp"

namespace dnstransport::detail {

namespace {

constexpr unsigned udp_batch = 32;
constexpr std::size_t datagram_max = 65536;

class udp_listener final : public thread_listener {
 public:
  explicit udp_listener(server_thread& thread) : thread_(thread), socket_(thread.io()) {}

  std::uint16_t open(const boost::asio::ip::address& address, std::uint16_t port) override {
    const boost::asio::ip::udp::endpoint where(address, port);
    boost::system::error_code ec;
    open_shared_port(socket_, where, true, ec);
    if (!ec) socket_.non_blocking(true, ec);
    if (ec) {
      throw setup_error(fmt::format("cannot listen on UDP {}: {}", describe_endpoint(address, port),
                                    ec.message()));
    }
    enlarge_socket_buffers(socket_.native_handle());
    in_.resize(udp_batch * datagram_max);
    out_.resize(udp_batch * (datagram_max + answer_overhead));
    return socket_.local_endpoint().port();
  }

  void start() override { wait(); }

 private:
  void wait() {
    socket_.async_wait(boost::asio::socket_base::wait_read,
                       [this](const boost::system::error_code& ec) {
                         if (!ec) on_readable();
                       });
  }

  void on_readable();

  server_thread& thread_;
  boost::asio::ip::udp::socket socket_;
  std::vector<std::uint8_t> in_;
  std::vector<std::uint8_t> out_;
};

void udp_listener::on_readable() {
  server_counters& counters = thread_.counters;
  const answer_mode mode = thread_.options().mode;
  const proxy_policy proxy = thread_.options().proxy_protocol[transport_kind::udp];
  const answer_edns& edns = thread_.edns(transport_kind::udp);
  rate_limiter* const limiter = thread_.limiter();
  const int fd = socket_.native_handle();
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
  // Each answer's client (server_thread::client); consecutive datagrams from one client
  // look it up once.
  std::array<client_record*, udp_batch> clients{};
  boost::asio::ip::address last_client;
  client_record* last_record = nullptr;
  for (int round = 0; round < 64; ++round) {
    for (auto& m : in_msgs) m.msg_hdr.msg_namelen = sizeof(sockaddr_storage);
    const int n = recvmmsg(fd, in_msgs.data(), udp_batch, MSG_DONTWAIT, nullptr);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      break;
    }
    unsigned replies = 0;
    std::uint64_t now = 0;  // read once per batch, when a limit per client needs it
    for (int i = 0; i < n; ++i) {
      std::span<const std::uint8_t> query(&in_[i * datagram_max], in_msgs[i].msg_len);
      boost::asio::ip::address client = address_of(peers[i]);
      if (proxy != proxy_policy::off) {
        const auto header = read_proxy_header(query);
        if (header.result == proxy_header_read::outcome::complete) {
          counters.proxy_headers.fetch_add(1, std::memory_order_relaxed);
          query = query.subspan(header.length);
          if (!header.local) client = header.connection.source;
        } else if (proxy == proxy_policy::required ||
                   header.result != proxy_header_read::outcome::none) {
          counters.proxy_refused.fetch_add(1, std::memory_order_relaxed);
          continue;
        }  // optional, and no header: a query of the peer's own
      }
      std::uint8_t* out = &out_[i * (datagram_max + answer_overhead)];
      const std::size_t size =
          build_answer(query, mode, {out, datagram_max + answer_overhead}, edns);
      if (size == 0) {
        counters.malformed_queries.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      if (last_record == nullptr || client != last_client) {
        last_client = client;
        last_record = &thread_.client(client);
      }
      if (last_record->limit != nullptr) {
        // Over its client's limit: not sent.
        if (now == 0) now = monotonic_ns();
        if (last_record->limit->take(1, now) == 0) {
          counters.rate_limited_dropped.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
      }
      out_iov[replies] = {out, size};
      out_msgs[replies].msg_hdr = {};
      out_msgs[replies].msg_hdr.msg_iov = &out_iov[replies];
      out_msgs[replies].msg_hdr.msg_iovlen = 1;
      out_msgs[replies].msg_hdr.msg_name = &peers[i];
      out_msgs[replies].msg_hdr.msg_namelen = in_msgs[i].msg_hdr.msg_namelen;
      clients[replies] = last_record;
      ++replies;
    }
    if (limiter != nullptr && replies > 0) {
      // Over the limit: the answers past the tokens granted are not sent.
      const unsigned granted = limiter->take(replies, now != 0 ? now : monotonic_ns());
      counters.rate_limited_dropped.fetch_add(replies - granted, std::memory_order_relaxed);
      replies = granted;
    }
    counters.queries[transport_kind::udp].fetch_add(replies, std::memory_order_relaxed);
    for (unsigned r = 0; r < replies; ++r) ++clients[r]->answers;
    thread_.spend_answer_cost(replies);
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
  wait();
}

}  // namespace

std::unique_ptr<thread_listener> make_udp_listener(server_thread& thread,
                                                   transport_kind /*transport*/,
                                                   const listener_shared* /*shared*/) {
  return std::make_unique<udp_listener>(thread);
}

}  // namespace dnstransport::detail
