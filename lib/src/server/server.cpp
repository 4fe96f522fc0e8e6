#include <dnstransport/server.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>
#include <boost/asio/ip/address.hpp>

#include <dnstransport/error.hpp>

#include "responder/rate_limiter.hpp"
#include "responder/server_thread.hpp"
#include "server/listeners.hpp"

namespace dnstransport {

std::string_view answer_mode_name(answer_mode mode) noexcept {
  return mode == answer_mode::echo ? "echo" : "answer";
}

std::optional<answer_mode> parse_answer_mode(std::string_view name) noexcept {
  if (name == "echo") return answer_mode::echo;
  if (name == "answer") return answer_mode::answer;
  return std::nullopt;
}

std::string_view proxy_policy_name(proxy_policy policy) noexcept {
  switch (policy) {
    case proxy_policy::optional:
      return "optional";
    case proxy_policy::required:
      return "required";
    case proxy_policy::off:
      break;
  }
  return "off";
}

std::optional<proxy_policy> parse_proxy_policy(std::string_view name) noexcept {
  for (const auto policy : {proxy_policy::off, proxy_policy::optional, proxy_policy::required}) {
    if (name == proxy_policy_name(policy)) return policy;
  }
  return std::nullopt;
}

void server_options::set_proxy_protocol(proxy_policy policy) noexcept {
  for (const auto& t : all_transports()) {
    proxy_protocol[t.kind] = t.over_tcp || !t.has_connections ? policy : proxy_policy::off;
  }
}

bool server_options::reads_proxy_headers() const noexcept {
  return std::any_of(proxy_protocol.begin(), proxy_protocol.end(),
                     [](proxy_policy p) { return p != proxy_policy::off; });
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
  detail::listener_contexts contexts;
  std::unique_ptr<detail::rate_limiter> limiter;           // shared by the threads; null: no limit
  std::unique_ptr<detail::client_rate_limits> per_client;  // the same, per client address
  std::vector<std::unique_ptr<detail::server_thread>> threads;
  per_transport<std::uint16_t> ports;
};

server::server(server_options options) : impl_(std::make_unique<impl>()) {
  impl& s = *impl_;
  s.options = std::move(options);
  const server_options& o = s.options;
  if (o.threads == 0) throw setup_error(setting("server_options::threads") + " must be at least 1");
  if (std::none_of(o.listen.begin(), o.listen.end(),
                   [](const std::optional<endpoint>& where) { return where.has_value(); })) {
    throw setup_error("the responder needs at least one listener");
  }
  for (const auto& [rate, name] :
       {std::pair{o.rate_limit, "server_options::rate_limit"},
        {o.rate_limit_per_client, "server_options::rate_limit_per_client"}}) {
    if (!std::isfinite(rate) || rate < 0) {
      throw setup_error(
          fmt::format("{}: {} is not a rate (queries per second, at least 0; 0: no limit)",
                      setting(name), rate));
    }
  }
  if (o.keepalive_timeout_seconds >= 0 &&
      !(std::isfinite(o.keepalive_timeout_seconds) && o.keepalive_timeout_seconds <= 6553.5)) {
    throw setup_error(fmt::format(
        "{}: {} is not an edns-tcp-keepalive timeout (0 to 6553.5 seconds)",
        setting("server_options::keepalive_timeout_seconds"), o.keepalive_timeout_seconds));
  }
  for (const auto& [cost, name] : {std::pair{o.cost_answer_us, "server_options::cost_answer_us"},
                                   {o.cost_handshake_us, "server_options::cost_handshake_us"}}) {
    if (!(cost >= 0 && cost <= 1e6)) {
      throw setup_error(fmt::format("{}: {} is not a cost (0 to 1,000,000 microseconds of CPU)",
                                    setting(name), cost));
    }
  }
  for (const auto& traits : all_transports()) {
    if (o.proxy_protocol[traits.kind] != proxy_policy::off && traits.has_connections &&
        !traits.over_tcp) {
      throw setup_error(
          fmt::format("{}: the {} listener cannot read PROXY headers (QUIC has no "
                      "place for one)",
                      setting("server_options::proxy_protocol"), traits.name));
    }
  }
  std::vector<std::pair<transport_kind, boost::asio::ip::address>> listening;
  for (const auto& traits : all_transports()) {
    const std::optional<endpoint>& where = o.listen[traits.kind];
    if (!where) continue;
    check_address(where->address, to_string(*where), fmt::format("the {} listener", traits.name));
    listening.emplace_back(traits.kind, boost::asio::ip::make_address(where->address));
  }
  if (!(o.rate_limit_burst_seconds >= 0 && o.rate_limit_burst_seconds <= 1)) {
    throw setup_error(fmt::format(
        "rate_limit_burst_seconds: {} is not a burst (0 to 1 seconds' worth of queries)",
        o.rate_limit_burst_seconds));
  }
  if (o.rate_limit > 0) {
    s.limiter = std::make_unique<detail::rate_limiter>(o.rate_limit, o.rate_limit_burst_seconds);
  }
  if (o.rate_limit_per_client > 0) {
    s.per_client = std::make_unique<detail::client_rate_limits>(o.rate_limit_per_client,
                                                                o.rate_limit_burst_seconds);
  }
  s.contexts = detail::make_listener_contexts(o);

  for (unsigned i = 0; i < o.threads; ++i) {
    auto t =
        std::make_unique<detail::server_thread>(s.options, s.limiter.get(), s.per_client.get());
    for (const auto& [transport, address] : listening) {
      auto listener = detail::make_listener(transport, *t, s.contexts);
      // The first thread binds the port asked for (0: a free one), the others the same.
      const std::uint16_t port = i == 0 ? o.listen[transport]->port : s.ports[transport];
      s.ports[transport] = listener->open(address, port);
      t->add_listener(std::move(listener));
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

std::uint16_t server::port(transport_kind transport) const noexcept {
  return impl_->ports[transport];
}

const per_transport<std::uint16_t>& server::ports() const noexcept {
  return impl_->ports;
}

const certificate_files& server::certificate() const noexcept {
  return impl_->contexts.certificate;
}

void server::stop() {
  for (auto& t : impl_->threads) t->stop();
}

namespace {

// The threads' clients, once every thread has stopped: how many, and the ones answered most.
void add_clients(server_stats& total,
                 const std::vector<std::unique_ptr<detail::server_thread>>& threads) {
  std::unordered_map<boost::asio::ip::address, std::uint64_t> all;
  for (const auto& t : threads) {
    if (!t->stopped()) return;
    for (const auto& [address, client] : t->clients()) {
      if (client.answers > 0) all[address] += client.answers;
    }
  }
  total.client_addresses = all.size();
  std::vector<std::pair<boost::asio::ip::address, std::uint64_t>> most(all.begin(), all.end());
  const std::size_t shown = std::min(most.size(), server_stats::top_client_count);
  std::partial_sort(most.begin(), most.begin() + static_cast<std::ptrdiff_t>(shown), most.end(),
                    [](const auto& a, const auto& b) {
                      return a.second != b.second ? a.second > b.second : a.first < b.first;
                    });
  for (std::size_t i = 0; i < shown; ++i) {
    total.top_clients.push_back({most[i].first.to_string(), most[i].second});
  }
}

}  // namespace

server_stats server::stats() const {
  server_stats total;
  for (const auto& t : impl_->threads) {
    const auto& c = t->counters;
    for (const auto& traits : all_transports()) {
      total.queries[traits.kind] += c.queries[traits.kind].load(std::memory_order_relaxed);
    }
    total.doq_early_data += c.doq_early_data.load(std::memory_order_relaxed);
    total.doq_packets_dropped += c.doq_packets_dropped.load(std::memory_order_relaxed);
    total.doq_stateless_resets += c.doq_stateless_resets.load(std::memory_order_relaxed);
    total.doq_retries += c.doq_retries.load(std::memory_order_relaxed);
    total.doq_connections_ended += c.doq_connections_ended.load(std::memory_order_relaxed);
    total.connections_accepted += c.connections_accepted.load(std::memory_order_relaxed);
    total.tls_handshakes_failed += c.tls_handshakes_failed.load(std::memory_order_relaxed);
    total.tls_resumed += c.tls_resumed.load(std::memory_order_relaxed);
    total.tls_early_data += c.tls_early_data.load(std::memory_order_relaxed);
    total.malformed_queries += c.malformed_queries.load(std::memory_order_relaxed);
    total.proxy_headers += c.proxy_headers.load(std::memory_order_relaxed);
    total.proxy_refused += c.proxy_refused.load(std::memory_order_relaxed);
    total.rate_limited_dropped += c.rate_limited_dropped.load(std::memory_order_relaxed);
    total.rate_limited_delayed += c.rate_limited_delayed.load(std::memory_order_relaxed);
  }
  add_clients(total, impl_->threads);
  return total;
}

}  // namespace dnstransport
