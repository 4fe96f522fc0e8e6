#include "scripted_datagram.hpp"

#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <dnstransport/message.hpp>

#include "engine/readiness.hpp"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103  // linux/udp.h, Linux 4.18
#endif

namespace dnstransport::scripted {

namespace {

// The segment size of a GSO message (udp_gso.hpp), 0 when it carries none.
std::size_t gso_segment(const msghdr& message) {
  if (message.msg_control == nullptr) return 0;
  for (const cmsghdr* c = CMSG_FIRSTHDR(&message); c != nullptr;
       c = CMSG_NXTHDR(const_cast<msghdr*>(&message), const_cast<cmsghdr*>(c))) {
    if (c->cmsg_level != SOL_UDP || c->cmsg_type != UDP_SEGMENT) continue;
    std::uint16_t segment = 0;
    std::memcpy(&segment, CMSG_DATA(c), sizeof segment);
    return segment;
  }
  return 0;
}

// The datagrams one sendmmsg message carries: its iovecs gathered, then cut
// into segments.
void datagrams_of(const msghdr& message, std::vector<std::vector<std::uint8_t>>& out) {
  std::vector<std::uint8_t> bytes;
  for (std::size_t i = 0; i < message.msg_iovlen; ++i) {
    const auto* data = static_cast<const std::uint8_t*>(message.msg_iov[i].iov_base);
    bytes.insert(bytes.end(), data, data + message.msg_iov[i].iov_len);
  }
  const std::size_t segment = gso_segment(message);
  if (segment == 0 || bytes.size() <= segment) {
    out.push_back(std::move(bytes));
    return;
  }
  for (std::size_t at = 0; at < bytes.size(); at += segment) {
    const std::size_t n = std::min(segment, bytes.size() - at);
    out.emplace_back(bytes.begin() + static_cast<std::ptrdiff_t>(at),
                     bytes.begin() + static_cast<std::ptrdiff_t>(at + n));
  }
}

class scripted_datagram_socket final : public detail::datagram_socket, private datagram_link {
 public:
  scripted_datagram_socket(boost::asio::io_context& io, ready_callback on_ready,
                           const socket_script& script, socket_log& log,
                           const datagram_peer_maker& make_peer, unsigned index)
      : io_(io),
        on_ready_(std::move(on_ready)),
        script_(script),
        log_(log),
        make_peer_(make_peer),
        index_(index) {}

  ~scripted_datagram_socket() override { peer_.reset(); }

  int open(const boost::asio::ip::udp::endpoint& /*server*/,
           const std::optional<boost::asio::ip::address>& /*source*/) override {
    if (script_.open_error != 0) return script_.open_error;
    peer_ = make_peer_(*this, index_);
    open_ = true;
    ++log_.sockets_opened;
    return 0;
  }

  bool is_open() const noexcept override { return open_; }
  bool stamped() const noexcept override { return false; }

  socklen_t local_address(sockaddr_storage& address) override {
    const sockaddr_in own = client_address();
    std::memcpy(&address, &own, sizeof own);
    return sizeof own;
  }

  // Writable at once; readable once the peer has sent something (or a receive
  // error is due). The callback always runs from the io_context, never inside
  // the call.
  void async_wait(bool readable, std::uint64_t token) override {
    if (readable && inbox_.empty() && errors_taken_ >= script_.receive_errors.size()) {
      read_pending_ = true;
      read_token_ = token;
      return;
    }
    post(readable, token, true);
  }

  void cancel() override {
    if (!read_pending_) return;
    read_pending_ = false;
    post(true, read_token_, false);
  }

  void close() override {
    cancel();
    if (!open_) return;
    open_ = false;
    ++log_.closes;
  }

  int receive(std::span<mmsghdr> messages) override {
    if (errors_taken_ < script_.receive_errors.size()) {
      return -script_.receive_errors[errors_taken_++];
    }
    if (inbox_.empty()) return -EAGAIN;
    int n = 0;
    for (mmsghdr& m : messages) {
      if (inbox_.empty()) break;
      const std::vector<std::uint8_t>& datagram = inbox_.front();
      const iovec& buffer = m.msg_hdr.msg_iov[0];
      const std::size_t size = std::min(datagram.size(), buffer.iov_len);
      std::memcpy(buffer.iov_base, datagram.data(), size);
      m.msg_len = static_cast<unsigned>(size);
      m.msg_hdr.msg_controllen = 0;  // no receive stamp
      m.msg_hdr.msg_flags = size < datagram.size() ? MSG_TRUNC : 0;
      inbox_.pop_front();
      ++n;
    }
    return n;
  }

  int send(std::span<mmsghdr> messages) override {
    const auto& limits = script_.send_limits;
    const std::size_t limit = limits[log_.send_calls++ % limits.size()];
    if (limit == 0) {
      ++log_.refused_sends;
      return -EAGAIN;
    }
    const std::size_t taken = std::min(limit, messages.size());
    if (taken < messages.size()) ++log_.partial_sends;
    std::vector<std::vector<std::uint8_t>> datagrams;
    for (std::size_t i = 0; i < taken; ++i) {
      const msghdr& m = messages[i].msg_hdr;
      std::size_t bytes = 0;
      for (std::size_t k = 0; k < m.msg_iovlen; ++k) bytes += m.msg_iov[k].iov_len;
      messages[i].msg_len = static_cast<unsigned>(bytes);
      datagrams_of(m, datagrams);
    }
    log_.datagrams_from_clients += datagrams.size();
    if (peer_) peer_->from_client(datagrams);
    return static_cast<int>(taken);
  }

 private:
  void to_client(std::span<const std::uint8_t> datagram) override {
    inbox_.emplace_back(datagram.begin(), datagram.end());
    ++log_.datagrams_to_clients;
    if (!read_pending_) return;
    read_pending_ = false;
    post(true, read_token_, true);
  }

  sockaddr_in client_address() const override {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(0x7f000002);  // 127.0.0.2
    address.sin_port = htons(static_cast<std::uint16_t>(10000 + index_));
    return address;
  }

  boost::asio::io_context& io() override { return io_; }

  void post(bool readable, std::uint64_t token, bool ok) {
    boost::asio::post(io_, [this, readable, token, ok] { on_ready_(readable, token, ok); });
  }

  boost::asio::io_context& io_;
  ready_callback on_ready_;
  const socket_script& script_;
  socket_log& log_;
  const datagram_peer_maker& make_peer_;
  const unsigned index_;
  std::unique_ptr<datagram_peer> peer_;
  std::deque<std::vector<std::uint8_t>> inbox_;
  std::size_t errors_taken_ = 0;
  bool open_ = false;
  bool read_pending_ = false;
  std::uint64_t read_token_ = 0;
};

class dns_responder final : public datagram_peer {
 public:
  dns_responder(const dns_script& script, dns_log& log, datagram_link& link)
      : script_(script), log_(log), link_(link) {}

  void from_client(std::span<const std::vector<std::uint8_t>> datagrams) override {
    for (const std::vector<std::uint8_t>& query : datagrams) {
      ++log_.queries_received;
      if (query.size() < 12) continue;
      const dns_reply reply = script_.replies[replied_++ % script_.replies.size()];
      if (reply == dns_reply::hold) {
        held_.push_back(answer_to(query));
        continue;
      }
      reply_to(query, reply);
      release_held();
    }
    release_held();
  }

 private:
  static std::vector<std::uint8_t> answer_to(const std::vector<std::uint8_t>& query) {
    std::vector<std::uint8_t> answer = query;
    answer[2] |= 0x80;  // QR: the echoed query is its own answer (NOERROR, no records)
    return answer;
  }

  void reply_to(const std::vector<std::uint8_t>& query, dns_reply reply) {
    std::vector<std::uint8_t> answer = answer_to(query);
    switch (reply) {
      case dns_reply::answer:
      case dns_reply::hold:
        break;
      case dns_reply::drop:
        return;
      case dns_reply::duplicate:
        send(answer);
        break;
      case dns_reply::truncated:
        answer[2] |= 0x02;  // TC
        break;
      case dns_reply::wrong_id:
        answer[0] ^= 0x80;
        break;
      case dns_reply::malformed:
        answer.resize(14);  // the header, then the question's name cut after one octet
        break;
      case dns_reply::mismatched:
        answer[13] ^= 0x01;  // the first letter of the name: another name
        break;
      case dns_reply::oversized:
        answer.resize(udp_answer_limit(query) + 1u,
                      0);  // octets after the records
        break;
    }
    send(answer);
  }

  void send(std::span<const std::uint8_t> answer) {
    ++log_.answers_sent;
    link_.to_client(answer);
  }

  void release_held() {
    for (const std::vector<std::uint8_t>& answer : held_) send(answer);
    held_.clear();
  }

  const dns_script& script_;
  dns_log& log_;
  datagram_link& link_;
  std::uint64_t replied_ = 0;
  std::vector<std::vector<std::uint8_t>> held_;
};

}  // namespace

detail::datagram_socket_factory make_datagram_socket_factory(const socket_script& script,
                                                             socket_log& log,
                                                             datagram_peer_maker make_peer) {
  auto shared_maker = std::make_shared<datagram_peer_maker>(std::move(make_peer));
  auto opened = std::make_shared<unsigned>(0);
  return [&script, &log, shared_maker, opened](detail::readiness_set& readiness,
                                               detail::datagram_socket::ready_callback on_ready,
                                               detail::syscall_counter& /*a script makes none*/) {
    return std::make_unique<scripted_datagram_socket>(readiness.io(), std::move(on_ready), script,
                                                      log, *shared_maker, (*opened)++);
  };
}

datagram_peer_maker dns_peer(const dns_script& script, dns_log& log) {
  return [&script, &log](datagram_link& link, unsigned /*index*/) {
    return std::make_unique<dns_responder>(script, log, link);
  };
}

}  // namespace dnstransport::scripted
