// UDP client: one connected socket per client, so each has its own source port and the
// kernel drops datagrams from anyone but the server. Sends and receives are batched with
// sendmmsg/recvmmsg after a readiness wait (engine/readiness.hpp), through the client's
// datagram_socket (a scripted peer in tests); a query goes out as two iovecs (the patched id,
// then the pre-encoded rest), so nothing is copied per query. Answers take the kernel's
// receive time; with coalescing (engine/read_coalescing.hpp) a read that brought answers
// while many are in flight is followed by a short delay instead of a readiness wait, so the
// next read finds more.

#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <optional>

#include <boost/asio/ip/udp.hpp>

#include "transport/stream/stream_transport.hpp"
#include "transport/udp/datagram_socket.hpp"
#include "transport/udp/udp_transport.hpp"
#include "util/clock.hpp"
#include "util/receive_time.hpp"

namespace dnstransport::detail {

namespace {

constexpr unsigned batch_size = 32;
static_assert(batch_size <= client_base::case_pieces, "a scratch piece for each query of a batch");

class udp_client final : public client_base {
 public:
  udp_client(worker& owner, unsigned index, std::uint64_t quota, const stream_transport* tc_retry,
             const datagram_socket_factory& sockets)
      : client_base(owner, index, quota),
        socket_(sockets(
            owner.readiness(),
            [this](bool readable, std::uint64_t, bool ok) {
              if (readable) {
                read_ready(ok);
              } else {
                write_ready(ok);
              }
            },
            owner.syscalls())) {
    if (tc_retry != nullptr) tc_retry_ = tc_retry->make_retry_client(owner, index, *this);
  }

  bool finished(std::uint64_t now) const noexcept override {
    return client_base::finished(now) && (!tc_retry_ || tc_retry_->finished(now));
  }

  void start() override {
    const run_plan& p = plan();
    const boost::asio::ip::udp::endpoint server(p.server_address, p.server_port);
    std::optional<boost::asio::ip::address> source;
    if (!p.sources.empty()) source = p.sources[index_ % p.sources.size()];
    if (const int error = socket_->open(server, source); error != 0) {
      connections().record_socket_error("udp socket", error);
      failed_ = true;
      // Nothing can ever be sent: the client is done (a count would otherwise never be
      // reached and the run would not end).
      quota_ = 0;
      return;
    }
    stamped_ = socket_->stamped();
    fill(monotonic_ns());
    wait_readable();
  }

  void tick(std::uint64_t now) override {
    if (tc_retry_) tc_retry_->tick(now);
    if (!failed_) {
      expire(now);
      if (!waiting_write_) fill(now);
    }
    // The worker stops at the tick at which all its clients are finished: said before.
    if (!finished_told_ && finished(now)) {
      finished_told_ = true;
      socket_->client_finished();
    }
  }

  void abandon() override {
    if (tc_retry_) tc_retry_->abandon();
    fail_in_flight(true);
    socket_->close();
  }

 private:
  void wait_readable() { socket_->async_wait(true, 0); }

  void read_ready(bool ok) {
    if (!ok) return;
    count_wakeup();
    on_readable();
  }

  void wait_writable() {
    waiting_write_ = true;
    socket_->async_wait(false, 0);
  }

  void write_ready(bool ok) {
    waiting_write_ = false;
    if (!ok) return;
    count_wakeup();
    fill(monotonic_ns());
  }

  void read_delayed() override {
    if (socket_->is_open()) on_readable();
  }

  void on_readable() {
    read_answers();
    if (!waiting_write_) fill(monotonic_ns());
    if (delay_next_read()) return;
    wait_readable();
  }

  // Reads until the socket is drained; returns how many datagrams came.
  unsigned read_answers() {
    std::array<mmsghdr, batch_size> msgs{};
    std::array<iovec, batch_size> iov{};
    std::array<receive_stamp_space, batch_size> stamps;
    for (unsigned i = 0; i < batch_size; ++i) {
      const auto buffer = owner_.scratch(i);
      iov[i] = {buffer.data(), buffer.size()};
      msgs[i].msg_hdr.msg_iov = &iov[i];
      msgs[i].msg_hdr.msg_iovlen = 1;
    }
    unsigned read = 0;
    for (;;) {
      if (stamped_) {
        // recvmmsg leaves each length at what it wrote.
        for (unsigned i = 0; i < batch_size; ++i) {
          msgs[i].msg_hdr.msg_control = stamps[i].data;
          msgs[i].msg_hdr.msg_controllen = sizeof stamps[i].data;
        }
      }
      const int n = socket_->receive(msgs);
      if (n < 0) {
        const int error = -n;
        if (error == EINTR) continue;
        if (error == EAGAIN || error == EWOULDBLOCK) break;
        // A pending ICMP error (ECONNREFUSED: nothing listens) is reported once; keep going.
        connections().record_socket_error("udp receive", error);
        if (error == ECONNREFUSED) continue;
        break;
      }
      read += static_cast<unsigned>(n);
      if (stamped_) {
        const receive_clock clock = receive_clock::read();
        for (int i = 0; i < n; ++i) {
          const auto* data = static_cast<const std::uint8_t*>(iov[i].iov_base);
          on_message({data, msgs[i].msg_len}, clock.monotonic_now, true,
                     clock.received(msgs[i].msg_hdr));
        }
      } else {
        const std::uint64_t now = monotonic_ns();
        for (int i = 0; i < n; ++i) {
          const auto* data = static_cast<const std::uint8_t*>(iov[i].iov_base);
          on_message({data, msgs[i].msg_len}, now, true);
        }
      }
      if (n < static_cast<int>(batch_size)) break;
    }
    return read;
  }

  // Sends as many queries as the budget allows, in batches.
  void fill(std::uint64_t now) {
    std::uint32_t allowance = send_allowance(now);
    if (allowance == 0) return;
    // Zeroed once per fill: each round sets only the iovecs, sendmmsg only the lengths.
    std::array<mmsghdr, batch_size> msgs{};
    std::array<std::array<iovec, 3>, batch_size> iov{};
    std::array<slot_table::slot*, batch_size> taken{};
    const unsigned most = plan().gather_writes ? batch_size : 1u;
    // PROXY protocol: the client's header before each datagram (with more distinct sources
    // than clients, the next of its share each time).
    const run_plan& p = plan();
    const bool proxy = p.proxy_header(index_) != nullptr;
    const unsigned first = proxy ? 1 : 0;
    while (allowance > 0) {
      const unsigned batch = allowance < most ? allowance : most;
      for (unsigned i = 0; i < batch; ++i) {
        slot_table::slot& s = take_slot(now);
        taken[i] = &s;
        const auto query = query_to_send(s, i);
        patch_id(id_bytes_[i].data(), s.id);
        if (proxy) {
          const std::vector<std::uint8_t>& header = *p.proxy_header(index_, headers_sent_++);
          iov[i][0] = {const_cast<std::uint8_t*>(header.data()), header.size()};
        }
        iov[i][first] = {id_bytes_[i].data(), 2};
        iov[i][first + 1] = {const_cast<std::uint8_t*>(query.data() + 2), query.size() - 2};
        msgs[i].msg_hdr.msg_iov = iov[i].data();
        msgs[i].msg_hdr.msg_iovlen = first + 2;
      }
      int sent = socket_->send({msgs.data(), batch});
      int error = 0;  // of a failed call; a partial send sets none
      if (sent < 0) {
        error = -sent;
        sent = 0;
        if (error != EAGAIN && error != EWOULDBLOCK && error != EINTR) {
          connections().record_socket_error("udp send", error);
        }
      }
      for (unsigned i = batch; i-- > static_cast<unsigned>(sent);) return_slot(*taken[i]);
      if (sent < static_cast<int>(batch)) {
        // Socket buffer full or an error: retry when writable; a refused port (an ICMP
        // error, the socket stays writable) retries on the tick.
        if (error != ECONNREFUSED) wait_writable();
        return;
      }
      allowance -= batch;
    }
  }

  // Hands a truncated answer's query to the TCP client, as a stub resolver would.
  bool retry_truncated(const slot_table::slot& s) override {
    if (!tc_retry_) return false;
    tc_retry_->take_retry({s.query_index, s.sent_ns, s.counted});
    tc_retry_->tick(monotonic_ns());
    return true;
  }

  std::unique_ptr<datagram_socket> socket_;
  std::unique_ptr<client_base> tc_retry_;  // with --tc-retry tcp
  std::array<std::array<std::uint8_t, 2>, batch_size> id_bytes_{};
  bool waiting_write_ = false;
  bool failed_ = false;
  bool finished_told_ = false;      // socket_->client_finished() called
  bool stamped_ = false;            // the kernel stamps the datagrams this socket receives
  std::uint64_t headers_sent_ = 0;  // PROXY headers written (run_plan::proxy_header's use)
};

}  // namespace

std::unique_ptr<client_transport> make_udp_transport(std::unique_ptr<stream_transport> tc_retry,
                                                     datagram_socket_factory sockets) {
  class udp_transport final : public client_transport {
   public:
    udp_transport(std::unique_ptr<stream_transport> tc_retry, datagram_socket_factory sockets)
        : tc_retry_(std::move(tc_retry)), sockets_(std::move(sockets)) {}
    std::unique_ptr<client_base> make_client(worker& owner, unsigned index,
                                             std::uint64_t quota) const override {
      return std::make_unique<udp_client>(owner, index, quota, tc_retry_.get(), sockets_);
    }

   private:
    std::unique_ptr<stream_transport> tc_retry_;
    datagram_socket_factory sockets_;
  };
  return std::make_unique<udp_transport>(std::move(tc_retry), std::move(sockets));
}

}  // namespace dnstransport::detail
