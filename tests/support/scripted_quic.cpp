#include "scripted_quic.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <chrono>
#include <cstring>

#include <boost/asio/steady_timer.hpp>

#include "test_certificates.hpp"
#include "transport/doq/server_doq.hpp"
#include "transport/doq/server_doq_context.hpp"

namespace dnstransport::scripted {

namespace {

// Where the clients' datagrams go: the address of the responder's socket, had
// it one.
sockaddr_storage responder_address() {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(853);
  sockaddr_storage storage{};
  std::memcpy(&storage, &address, sizeof address);
  return storage;
}

server_options with_certificate(server_options o) {
  const certificate_files files = hostile::test_certificate();
  o.tls_options.certificate_file = files.certificate_file;
  o.tls_options.key_file = files.key_file;
  return o;
}

// Every N-th of a count is lost (N = 0: none).
bool lost(std::uint64_t& count, std::uint64_t every) {
  ++count;
  return every != 0 && count % every == 0;
}

}  // namespace

class quic_responder::impl {
 public:
  // The far end of one client socket: its datagrams to the listener, the
  // listener's to it, and the timer that runs the listener's timers from the
  // client's event loop.
  class client_end final : public datagram_peer {
   public:
    client_end(impl& responder, datagram_link& link)
        : responder_(responder), link_(link), poll_timer_(link.io()) {
      const sockaddr_in own = link.client_address();
      std::memcpy(&address_, &own, sizeof own);
      port_ = ntohs(own.sin_port);
      responder_.ends_[port_] = this;
      poll_later();
    }

    ~client_end() override { responder_.ends_.erase(port_); }

    void from_client(std::span<const std::vector<std::uint8_t>> datagrams) override {
      const quic_script& script = responder_.script_;
      for (const std::vector<std::uint8_t>& datagram : datagrams) {
        if (lost(to_server_, script.lose_every_to_server)) {
          ++responder_.log_.lost;
          continue;
        }
        ++responder_.log_.datagrams_to_server;
        responder_.listener_.on_datagram(datagram, responder_.address_, sizeof(sockaddr_in),
                                         address_, sizeof(sockaddr_in));
      }
      responder_.listener_.flush();
    }

    void to_client(std::span<const std::uint8_t> datagram) {
      if (lost(to_client_, responder_.script_.lose_every_to_client)) {
        ++responder_.log_.lost;
        return;
      }
      ++responder_.log_.datagrams_to_client;
      link_.to_client(datagram);
    }

   private:
    void poll_later() {
      poll_timer_.expires_after(std::chrono::milliseconds(1));
      poll_timer_.async_wait([this](const boost::system::error_code& ec) {
        if (ec) return;
        responder_.poll();
        poll_later();
      });
    }

    impl& responder_;
    datagram_link& link_;
    boost::asio::steady_timer poll_timer_;
    sockaddr_storage address_{};
    std::uint16_t port_ = 0;
    std::uint64_t to_server_ = 0;
    std::uint64_t to_client_ = 0;
  };

  explicit impl(const quic_script& script)
      : script_(script),
        options_(with_certificate(script.server)),
        context_(options_.tls_options, options_.doq_early_data),
        thread_(options_, nullptr, nullptr),
        listener_(thread_, context_),
        address_(responder_address()) {
    listener_.send_to([this](std::span<const detail::doq_packet> packets) {
      for (const detail::doq_packet& p : packets) {
        sockaddr_in to{};
        std::memcpy(&to, &p.remote, sizeof to);
        const auto end = ends_.find(ntohs(to.sin_port));
        if (end != ends_.end()) end->second->to_client(p.bytes);
      }
    });
  }

  // Runs the listener's handlers that are due (its connections' timers).
  void poll() {
    thread_.io().restart();
    thread_.io().poll();
  }

  const quic_script& script_;
  const server_options options_;
  const detail::doq_context context_;
  detail::server_thread thread_;
  detail::doq_listener listener_;
  const sockaddr_storage address_;
  std::map<std::uint16_t, client_end*> ends_;  // by the client's port
  quic_log log_;
};

quic_responder::quic_responder(const quic_script& script) : impl_(std::make_unique<impl>(script)) {}

quic_responder::~quic_responder() = default;

datagram_peer_maker quic_responder::peers() {
  return [this](datagram_link& link, unsigned /*index*/) {
    return std::make_unique<impl::client_end>(*impl_, link);
  };
}

tls_client_options quic_responder::client_tls() const {
  tls_client_options o;
  o.backend = tls_backend::gnutls;
  o.server_name = "localhost";
  o.verify = true;
  o.ca_file = impl_->options_.tls_options.certificate_file;
  return o;
}

const detail::server_counters& quic_responder::counters() const {
  return impl_->thread_.counters;
}

const quic_log& quic_responder::log() const noexcept {
  return impl_->log_;
}

}  // namespace dnstransport::scripted
