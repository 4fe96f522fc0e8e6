#include <dnstransport/server.hpp>

#include <charconv>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>
#include <boost/asio/ip/address.hpp>

#include <dnstransport/error.hpp>

#include "server/rate_limiter.hpp"
#include "server/server_thread.hpp"
#include "transport/tls/tls_backend.hpp"
#ifdef DNSTRANSPORT_HAVE_DOQ
#include "server/server_doq.hpp"
#include "server/server_doq_context.hpp"
#endif

namespace dnstransport {

std::string_view answer_mode_name(answer_mode mode) noexcept {
  return mode == answer_mode::echo ? "echo" : "answer";
}

std::optional<answer_mode> parse_answer_mode(std::string_view name) noexcept {
  if (name == "echo") return answer_mode::echo;
  if (name == "answer") return answer_mode::answer;
  return std::nullopt;
}

namespace {

void check_address(std::string_view address, std::string_view whole, std::string_view what) {
  boost::system::error_code ec;
  boost::asio::ip::make_address(std::string(address), ec);
  if (ec) {
    throw setup_error(
        fmt::format("{}: \"{}\" is not an IP address (expected ADDR:PORT)", what, whole));
  }
}

}  // namespace

struct server::impl {
  server_options options;
  certificate_files certificate;
  std::unique_ptr<detail::tls_server_context> tls;
  std::unique_ptr<detail::tls_server_context> doh;  // the same certificate, ALPN "h2"
#ifdef DNSTRANSPORT_HAVE_DOQ
  std::unique_ptr<detail::doq_context> doq;  // the same certificate, GnuTLS, ALPN "doq"
#endif
  std::unique_ptr<detail::rate_limiter> limiter;  // shared by the threads; null: no limit
  std::vector<std::unique_ptr<detail::server_thread>> threads;
  std::uint16_t udp_port = 0;
  std::uint16_t tcp_port = 0;
  std::uint16_t tls_port = 0;
  std::uint16_t doh_port = 0;
  std::uint16_t doq_port = 0;
};

server::server(server_options options) : impl_(std::make_unique<impl>()) {
  impl& s = *impl_;
  s.options = std::move(options);
  const server_options& o = s.options;
  if (o.threads == 0) throw setup_error("--threads must be at least 1");
  if (!o.udp && !o.tcp && !o.tls && !o.doh && !o.doq) {
    throw setup_error("the responder needs at least one listener");
  }
#ifndef DNSTRANSPORT_HAVE_DOQ
  if (o.doq) {
    throw setup_error(
        "--doq: DNS over QUIC needs ngtcp2's GnuTLS helper, and this build has no GnuTLS "
        "(DNSTRANSPORT_WITH_GNUTLS=OFF)");
  }
#endif
  if (o.doq && o.doq_max_streams == 0) throw setup_error("--doq-max-streams must be at least 1");
  if (!std::isfinite(o.rate_limit) || o.rate_limit < 0) {
    throw setup_error(
        fmt::format("--rate-limit: {} is not a rate (queries per second, at least 0; 0: no limit)",
                    o.rate_limit));
  }
  if (o.rate_limit > 0) s.limiter = std::make_unique<detail::rate_limiter>(o.rate_limit);
  if (o.doh) {
    if (o.doh_path.empty() || o.doh_path.front() != '/' ||
        o.doh_path.find_first_of("?# ") != std::string::npos) {
      throw setup_error(
          fmt::format("--doh-path: \"{}\" is not an absolute path without query (e.g. /dns-query)",
                      o.doh_path));
    }
    if (o.doh_max_streams == 0) throw setup_error("--doh-max-streams must be at least 1");
  }
  if (o.tls || o.doh || o.doq) {
    tls_server_options tls_options = o.tls_options;
    if (tls_options.certificate_file.empty() != tls_options.key_file.empty()) {
      throw setup_error("give both a TLS certificate and its key, or neither");
    }
    if (tls_options.certificate_file.empty()) {
      const std::filesystem::path directory =
          o.certificate_directory.empty()
              ? std::filesystem::temp_directory_path() / fmt::format("dnstransport-{}", getpid())
              : std::filesystem::path(o.certificate_directory);
      s.certificate = generate_self_signed_certificate(directory);
      tls_options.certificate_file = s.certificate.certificate_file;
      tls_options.key_file = s.certificate.key_file;
    } else {
      s.certificate = {tls_options.certificate_file, tls_options.key_file};
    }
    if (o.tls) s.tls = detail::make_tls_server_context(tls_options);
#ifdef DNSTRANSPORT_HAVE_DOQ
    if (o.doq) s.doq = std::make_unique<detail::doq_context>(tls_options, o.doq_early_data);
#endif
    if (o.doh) {
      tls_options.alpn = {"h2"};
      s.doh = detail::make_tls_server_context(tls_options);
    }
  }

  auto address_of = [](const endpoint& e, std::string_view what) {
    check_address(e.address, to_string(e), what);
    return boost::asio::ip::make_address(e.address);
  };
  for (unsigned i = 0; i < o.threads; ++i) {
    auto t = std::make_unique<detail::server_thread>(s.options, s.tls.get(), s.doh.get(),
                                                     s.limiter.get());
    if (o.udp) {
      s.udp_port = t->open_udp({address_of(*o.udp, "--listen"), i == 0 ? o.udp->port : s.udp_port});
    }
    if (o.tcp) {
      s.tcp_port = t->open_tcp({address_of(*o.tcp, "--tcp"), i == 0 ? o.tcp->port : s.tcp_port});
    }
    if (o.tls) {
      s.tls_port = t->open_tls({address_of(*o.tls, "--tls"), i == 0 ? o.tls->port : s.tls_port});
    }
    if (o.doh) {
      s.doh_port = t->open_doh({address_of(*o.doh, "--doh"), i == 0 ? o.doh->port : s.doh_port});
    }
#ifdef DNSTRANSPORT_HAVE_DOQ
    if (o.doq) {
      // One socket per thread on the same port (SO_REUSEPORT): the kernel keeps each
      // client's 4-tuple, so each QUIC connection, on one thread.
      auto listener = std::make_unique<detail::doq_listener>(*t, *s.doq);
      s.doq_port = listener->open({address_of(*o.doq, "--doq"), i == 0 ? o.doq->port : s.doq_port});
      t->add_listener(std::move(listener));
    }
#endif
    s.threads.push_back(std::move(t));
  }
  for (unsigned i = 0; i < o.threads; ++i) {
    std::optional<int> cpu;
    if (!o.cpus.empty()) cpu = o.cpus[i % o.cpus.size()];
    s.threads[i]->start(cpu);
  }
}

server::~server() {
  stop();
}

std::uint16_t server::udp_port() const noexcept {
  return impl_->udp_port;
}
std::uint16_t server::tcp_port() const noexcept {
  return impl_->tcp_port;
}
std::uint16_t server::port(transport_kind transport) const noexcept {
  switch (transport) {
    case transport_kind::udp:
      return udp_port();
    case transport_kind::tcp:
      return tcp_port();
    case transport_kind::tls:
      return tls_port();
    case transport_kind::doh:
      return doh_port();
    case transport_kind::doq:
      return doq_port();
  }
  return 0;
}

std::uint16_t server::tls_port() const noexcept {
  return impl_->tls_port;
}
std::uint16_t server::doh_port() const noexcept {
  return impl_->doh_port;
}
std::uint16_t server::doq_port() const noexcept {
  return impl_->doq_port;
}
const certificate_files& server::certificate() const noexcept {
  return impl_->certificate;
}

void server::stop() {
  for (auto& t : impl_->threads) t->stop();
}

server_stats server::stats() const {
  server_stats total;
  for (const auto& t : impl_->threads) {
    const auto& c = t->counters;
    total.udp_queries += c.udp_queries.load(std::memory_order_relaxed);
    total.tcp_queries += c.tcp_queries.load(std::memory_order_relaxed);
    total.tls_queries += c.tls_queries.load(std::memory_order_relaxed);
    total.doh_queries += c.doh_queries.load(std::memory_order_relaxed);
    total.doq_queries += c.doq_queries.load(std::memory_order_relaxed);
    total.doq_early_data += c.doq_early_data.load(std::memory_order_relaxed);
    total.doq_packets_dropped += c.doq_packets_dropped.load(std::memory_order_relaxed);
    total.doq_stateless_resets += c.doq_stateless_resets.load(std::memory_order_relaxed);
    total.doq_retries += c.doq_retries.load(std::memory_order_relaxed);
    total.connections_accepted += c.connections_accepted.load(std::memory_order_relaxed);
    total.tls_handshakes_failed += c.tls_handshakes_failed.load(std::memory_order_relaxed);
    total.tls_resumed += c.tls_resumed.load(std::memory_order_relaxed);
    total.tls_early_data += c.tls_early_data.load(std::memory_order_relaxed);
    total.malformed_queries += c.malformed_queries.load(std::memory_order_relaxed);
    total.rate_limited_dropped += c.rate_limited_dropped.load(std::memory_order_relaxed);
    total.rate_limited_delayed += c.rate_limited_delayed.load(std::memory_order_relaxed);
  }
  return total;
}

}  // namespace dnstransport
