#include <dnstransport/server.hpp>

#include <charconv>
#include <filesystem>

#include <fmt/format.h>
#include <boost/asio/ip/address.hpp>

#include <dnstransport/error.hpp>

#include "server_thread.hpp"
#include "tls/tls_engine.hpp"

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

std::uint16_t parse_port(std::string_view text, std::string_view whole, std::string_view what) {
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || value > 65535 || text.empty()) {
    throw setup_error(fmt::format("{}: bad port in \"{}\" (expected 0-65535)", what, whole));
  }
  return static_cast<std::uint16_t>(value);
}

void check_address(std::string_view address, std::string_view whole, std::string_view what) {
  boost::system::error_code ec;
  boost::asio::ip::make_address(std::string(address), ec);
  if (ec) {
    throw setup_error(
        fmt::format("{}: \"{}\" is not an IP address (expected ADDR:PORT)", what, whole));
  }
}

}  // namespace

endpoint parse_endpoint(std::string_view text, std::uint16_t default_port, std::string_view what) {
  endpoint result;
  result.port = default_port;
  if (text.empty()) throw setup_error(fmt::format("{}: empty address", what));
  if (text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos) {
      throw setup_error(fmt::format("{}: missing ']' in \"{}\"", what, text));
    }
    result.address = std::string(text.substr(1, close - 1));
    const auto rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') throw setup_error(fmt::format("{}: bad address \"{}\"", what, text));
      result.port = parse_port(rest.substr(1), text, what);
    }
  } else if (std::count(text.begin(), text.end(), ':') == 1) {
    const auto colon = text.find(':');
    result.address = std::string(text.substr(0, colon));
    result.port = parse_port(text.substr(colon + 1), text, what);
  } else {
    result.address = std::string(text);  // bare IPv4, IPv6 or host name
  }
  return result;
}

std::string to_string(const endpoint& where) {
  if (where.address.find(':') != std::string::npos) {
    return fmt::format("[{}]:{}", where.address, where.port);
  }
  return fmt::format("{}:{}", where.address, where.port);
}

struct server::impl {
  server_options options;
  certificate_files certificate;
  std::unique_ptr<detail::tls_server_context> tls;
  std::vector<std::unique_ptr<detail::server_thread>> threads;
  std::uint16_t udp_port = 0;
  std::uint16_t tcp_port = 0;
  std::uint16_t tls_port = 0;
};

server::server(server_options options) : impl_(std::make_unique<impl>()) {
  impl& s = *impl_;
  s.options = std::move(options);
  const server_options& o = s.options;
  if (o.threads == 0) throw setup_error("--threads must be at least 1");
  if (!o.udp && !o.tcp && !o.tls) throw setup_error("the responder needs at least one listener");
  if (o.tls) {
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
    s.tls = detail::make_tls_server_context(tls_options);
  }

  auto address_of = [](const endpoint& e, std::string_view what) {
    check_address(e.address, to_string(e), what);
    return boost::asio::ip::make_address(e.address);
  };
  for (unsigned i = 0; i < o.threads; ++i) {
    auto t = std::make_unique<detail::server_thread>(s.options, s.tls.get());
    if (o.udp) {
      s.udp_port = t->open_udp({address_of(*o.udp, "--listen"), i == 0 ? o.udp->port : s.udp_port});
    }
    if (o.tcp) {
      s.tcp_port = t->open_tcp({address_of(*o.tcp, "--tcp"), i == 0 ? o.tcp->port : s.tcp_port});
    }
    if (o.tls) {
      s.tls_port = t->open_tls({address_of(*o.tls, "--tls"), i == 0 ? o.tls->port : s.tls_port});
    }
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
std::uint16_t server::tls_port() const noexcept {
  return impl_->tls_port;
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
    total.connections_accepted += c.connections_accepted.load(std::memory_order_relaxed);
    total.tls_handshakes_failed += c.tls_handshakes_failed.load(std::memory_order_relaxed);
    total.tls_resumed += c.tls_resumed.load(std::memory_order_relaxed);
    total.malformed_queries += c.malformed_queries.load(std::memory_order_relaxed);
  }
  return total;
}

}  // namespace dnstransport
