#include "registry/transports.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <boost/asio/ip/address.hpp>

#include <dnstransport/error.hpp>

#include "transport/doh/doh_listener.hpp"
#include "transport/doh/doh_transport.hpp"
#if DNSTRANSPORT_HAVE_DOQ
#include "transport/doq/doq_listener.hpp"
#include "transport/doq/doq_transport.hpp"
#endif
#include "transport/stream/server_dns_session.hpp"
#include "transport/stream/stream_listener.hpp"
#include "transport/stream/stream_transport.hpp"
#include "transport/stream/user_stream.hpp"
#include "transport/tls/tls_backend.hpp"
#include "transport/udp/udp_listener.hpp"
#include "transport/udp/udp_transport.hpp"
#include "transport/xdp/xdp_sockets.hpp"
#include "transport/xdp/xdp_tcp_socket.hpp"
#include "util/clock.hpp"

namespace dnstransport::detail {

namespace {

stream_settings stream_settings_of(const load_spec& spec) {
  stream_settings s;
  s.queries_per_connection = spec.connections.queries_per_connection;
  s.close_with_rst = spec.connections.close == close_mode::rst;
  s.tcp_nodelay = spec.connections.tcp_nodelay;
  s.tcp_fastopen = spec.connections.tcp_fastopen;
  s.resume = spec.tls.resume;
  s.honour_keepalive = spec.connections.honour_keepalive;
  s.idle_timeout_ns = seconds_to_ns(spec.connections.idle_seconds);
  return s;
}

// AF_XDP's settings (generator_settings::xdp_interface) for the sockets under UDP's and
// TCP's clients.
xdp_settings xdp_settings_of(const load_spec& spec) {
  xdp_settings x;
  x.setting = setting("load_spec::generator.xdp_interface");
  x.gateway_setting = setting("load_spec::generator.xdp_gateway_mac");
  x.threads_setting = setting("load_spec::generator.threads");
  x.interface = spec.generator.xdp_interface;
  x.server = spec.target.server;
  x.port = spec.target.port;
  x.gateway_mac = spec.generator.xdp_gateway_mac;
  x.threads = std::max(1u, std::min(spec.generator.threads, spec.traffic.clients));
  return x;
}

std::unique_ptr<client_transport> make_udp(const load_spec& spec) {
  std::unique_ptr<stream_transport> tc_retry;
  if (spec.traffic.tc_retry_tcp) {
    // One TCP connection per UDP client, kept while the client may still need it.
    tc_retry = std::make_unique<stream_transport>(stream_settings_of(spec), make_tcp_connector());
  }
  if (!spec.generator.xdp_interface.empty()) {
    return make_udp_transport(std::move(tc_retry), make_xdp_sockets(xdp_settings_of(spec)));
  }
  return make_udp_transport(std::move(tc_retry));
}

std::unique_ptr<client_transport> make_tcp(const load_spec& spec) {
  if (!spec.generator.xdp_interface.empty()) {
    if (spec.connections.tcp_fastopen) {
      throw setup_error(fmt::format("{}: TCP Fast Open is not sent over AF_XDP ({})",
                                    setting("load_spec::connections.tcp_fastopen"),
                                    setting("load_spec::generator.xdp_interface")));
    }
    return std::make_unique<stream_transport>(stream_settings_of(spec), make_tcp_connector(),
                                              make_xdp_tcp_sockets(xdp_settings_of(spec)));
  }
  return std::make_unique<stream_transport>(stream_settings_of(spec), make_tcp_connector());
}

std::unique_ptr<client_transport> make_tls(const load_spec& spec) {
  return std::make_unique<stream_transport>(stream_settings_of(spec),
                                            make_tls_connector(make_tls_client_context(spec.tls)));
}

// :authority names the server as the user gave it (or its SNI name); the port only when it
// is not 443.
std::string authority_of(const load_spec& spec) {
  const std::string& host =
      spec.tls.server_name.empty() ? spec.target.server : spec.tls.server_name;
  const bool bracket = host.find(':') != std::string::npos && host.front() != '[';
  const std::string port = spec.target.port == 443 ? "" : fmt::format(":{}", spec.target.port);
  return bracket ? fmt::format("[{}]{}", host, port) : fmt::format("{}{}", host, port);
}

void check_doh(const load_spec& spec) {
  if (spec.target.doh_path.empty() || spec.target.doh_path.front() != '/' ||
      spec.target.doh_path.find_first_of(" #\r\n") != std::string::npos) {
    throw setup_error(
        fmt::format("{}: \"{}\" is not a URI path (it starts with / and has no space or #)",
                    setting("load_spec::target.doh_path"), spec.target.doh_path));
  }
}

std::unique_ptr<client_transport> make_doh(const load_spec& spec) {
  tls_client_options tls = spec.tls;
  tls.alpn = {"h2"};
  doh_settings doh;
  doh.path = spec.target.doh_path;
  doh.use_get = spec.target.doh_request == doh_method::get;
  doh.authority = authority_of(spec);
  return std::make_unique<doh_transport>(stream_settings_of(spec), std::move(doh),
                                         make_tls_connector(make_tls_client_context(tls)));
}

#if DNSTRANSPORT_HAVE_DOQ
constexpr bool doq_compiled = true;
constexpr listener_factory doq_listener_factory{check_doq_listener, share_doq_context,
                                                make_doq_listener};
#else
constexpr bool doq_compiled = false;
constexpr listener_factory doq_listener_factory{};
#endif

std::unique_ptr<client_transport> make_doq(const load_spec& spec) {
#if DNSTRANSPORT_HAVE_DOQ
  doq_settings doq;
  doq.queries_per_connection = spec.connections.queries_per_connection;
  doq.resume = spec.tls.resume;
  doq.early_data = spec.tls.early_data;
  doq.idle_timeout_ns = seconds_to_ns(spec.connections.idle_seconds);
  return std::make_unique<doq_transport>(doq, spec.tls);
#else
  (void)spec;
  throw setup_error("DNS over QUIC is not compiled into this build (it needs GnuTLS and ngtcp2)");
#endif
}

// Register a transport here: its traits, another name it answers to, its client's factory
// and the rules of its own settings, and its listener's factory.
constexpr std::array<transport_entry, builtin_transport_count> builtin{{
    {{.kind = transport_kind::udp,
      .name = "udp",
      .long_name = "UDP",
      .short_name = "UDP",
      .default_port = 53,
      .xdp = true},
     "",
     make_udp,
     nullptr,
     {nullptr, nullptr, make_udp_listener}},
    {{.kind = transport_kind::tcp,
      .name = "tcp",
      .long_name = "DNS over TCP",
      .short_name = "TCP",
      .default_port = 53,
      .has_connections = true,
      .over_tcp = true,
      .xdp = true},
     "",
     make_tcp,
     nullptr,
     {nullptr, nullptr, make_tcp_listener}},
    {{.kind = transport_kind::tls,
      .name = "tls",
      .long_name = "DNS over TLS",
      .short_name = "DoT",
      .default_port = 853,
      .has_connections = true,
      .has_tls = true,
      .over_tcp = true},
     "dot",
     make_tls,
     nullptr,
     {nullptr, share_tls_context, make_tls_listener}},
    {{.kind = transport_kind::doh,
      .name = "doh",
      .long_name = "DNS over HTTPS",
      .short_name = "DoH",
      .default_port = 443,
      .has_connections = true,
      .has_tls = true,
      .over_tcp = true,
      .answers_on_own_stream = true,
      .url_scheme = "https"},
     "https",
     make_doh,
     check_doh,
     {check_doh_listener, share_doh_context, make_doh_listener}},
    {{.kind = transport_kind::doq,
      .name = "doq",
      .long_name = "DNS over QUIC",
      .short_name = "DoQ",
      .default_port = 853,
      .has_connections = true,
      .has_tls = true,
      .over_quic = true,
      .answers_on_own_stream = true,
      .tls13_only = true,
      .gnutls_only = true,
      .compiled = doq_compiled},
     "",
     make_doq,
     nullptr,
     doq_listener_factory},
}};

// per_transport and the lookups below index by the kind.
static_assert([] {
  for (std::size_t i = 0; i < builtin.size(); ++i) {
    if (static_cast<std::size_t>(builtin[i].traits.kind) != i) return false;
  }
  return true;
}());

// A program's own stream transport: a stream_client over its streams, as DNS over TCP is.
std::unique_ptr<client_transport> make_user(const load_spec& spec) {
  return std::make_unique<stream_transport>(
      stream_settings_of(spec),
      make_user_connector(*registered_transport(spec.target.transport).user));
}

// A transport known only from a result file (transport_of_record): it cannot be run.
std::unique_ptr<client_transport> make_recorded(const load_spec& spec) {
  throw setup_error(
      fmt::format("the transport {} is known here only from a result file: the program that ran it "
                  "registers it (register_transport) to run it again",
                  transport_name(spec.target.transport)));
}

std::unique_ptr<thread_listener> make_user_listener(server_thread& thread, transport_kind transport,
                                                    const listener_shared* /*shared*/) {
  return make_stream_listener(thread, transport,
                              make_user_acceptor(*registered_transport(transport).user),
                              make_server_dns_session);
}

// Every transport: the built-in ones, then the program's own as registered. Entries and
// traits past `count` are of kinds not registered (no name, not compiled).
struct transport_table {
  std::array<transport_entry, max_transports> entries{};
  std::array<transport_traits, max_transports> traits{};
  std::atomic<std::size_t> count{0};
  std::mutex registering;
  std::array<std::unique_ptr<const user_transport>, max_transports> users;
  std::vector<std::unique_ptr<const user_transport>> retired;  // replaced (see register)

  transport_table() {
    for (std::size_t i = 0; i < max_transports; ++i) {
      traits[i].kind = static_cast<transport_kind>(i);
      traits[i].compiled = false;
      entries[i].traits = traits[i];
    }
    for (std::size_t i = 0; i < builtin.size(); ++i) {
      entries[i] = builtin[i];
      traits[i] = builtin[i].traits;
    }
    count.store(builtin.size(), std::memory_order_release);
  }
};

// Never destroyed: a traits' names point into it, and a static server or load of the program
// may outlive a table destroyed at exit.
transport_table& table() noexcept {
  static transport_table* const transports = new transport_table;
  return *transports;
}

// `transport`'s place in the table; a value past it (a cast, not a kind) reads the last,
// never registered (register_transport stops one short of it).
std::size_t index_of(transport_kind transport) noexcept {
  return std::min<std::size_t>(static_cast<std::size_t>(transport), max_transports - 1);
}

std::span<const transport_entry> registered_entries() noexcept {
  transport_table& t = table();
  return {t.entries.data(), t.count.load(std::memory_order_acquire)};
}

// Throws setup_error for a name a transport cannot have. Lists (--transports udp,tls-gnutls)
// and targets (NAME=HOST,tls=PORT,pid=PID) hold names.
void check_transport_name(const std::string& name) {
  if (name.empty()) throw setup_error("a transport needs a name");
  const bool word = std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
  if (!word || name == "pid" || name == "cgroup") {
    throw setup_error(
        fmt::format("\"{}\" cannot name a transport: a name is lower-case letters, "
                    "digits and _, and not pid or cgroup",
                    name));
  }
}

transport_kind register_user_transport(user_transport transport, bool recorded = false) {
  check_transport_name(transport.name);
  if (!transport.client && !recorded) {
    throw setup_error(
        fmt::format("the transport {} has no client (user_transport::client)", transport.name));
  }
  if (transport.default_port == 0) {
    throw setup_error(fmt::format("the transport {} needs a default port", transport.name));
  }
  transport_table& t = table();
  const std::lock_guard lock(t.registering);
  std::size_t index = t.count.load(std::memory_order_relaxed);
  if (const auto known = parse_transport(transport.name)) {
    if (recorded) return *known;  // registered meanwhile
    // Known so far from a result file only: the program's registration takes its place.
    if (registered_transport(*known).make != make_recorded) {
      throw setup_error(fmt::format("a transport named {} is registered already", transport.name));
    }
    index = static_cast<std::size_t>(*known);
    // Names read before point into it: kept.
    t.retired.push_back(std::move(t.users[index]));
  } else if (index + 1 >= max_transports) {
    throw setup_error(
        fmt::format("no room for the transport {}: a program has at most {} "
                    "transports, {} built in",
                    transport.name, max_transports, builtin_transport_count));
  }
  if (transport.long_name.empty()) transport.long_name = transport.name;
  if (transport.short_name.empty()) transport.short_name = transport.name;
  t.users[index] = std::make_unique<const user_transport>(std::move(transport));
  const user_transport* user = t.users[index].get();
  transport_entry& entry = t.entries[index];
  entry.traits = transport_traits{.kind = static_cast<transport_kind>(index),
                                  .name = user->name,
                                  .long_name = user->long_name,
                                  .short_name = user->short_name,
                                  .default_port = user->default_port,
                                  .has_connections = true,
                                  .over_tcp = true};
  entry.alias = {};
  entry.make = recorded ? make_recorded : make_user;
  entry.check = nullptr;
  entry.listener = {nullptr, nullptr, user->server ? make_user_listener : nullptr};
  entry.user = user;
  // Known from a file alone, it cannot run here: presets and calibration leave it out.
  entry.traits.compiled = !recorded;
  t.traits[index] = entry.traits;
  if (index == t.count.load(std::memory_order_relaxed)) {
    t.count.store(index + 1, std::memory_order_release);
  }
  return entry.traits.kind;
}

}  // namespace

const transport_entry& registered_transport(transport_kind transport) noexcept {
  return table().entries[index_of(transport)];
}

}  // namespace dnstransport::detail

namespace dnstransport {

const transport_traits& traits_of(transport_kind transport) noexcept {
  return detail::table().traits[detail::index_of(transport)];
}

std::span<const transport_traits> all_transports() noexcept {
  detail::transport_table& t = detail::table();
  return {t.traits.data(), t.count.load(std::memory_order_acquire)};
}

transport_kind register_transport(user_transport transport) {
  return detail::register_user_transport(std::move(transport));
}

transport_kind transport_of_record(std::string_view name) {
  if (const auto known = parse_transport(name)) return *known;
  user_transport recorded;
  recorded.name = std::string(name);
  return detail::register_user_transport(std::move(recorded), true);
}

per_transport<std::uint16_t> default_ports() noexcept {
  per_transport<std::uint16_t> ports;
  for (const auto& traits : all_transports()) ports[traits.kind] = traits.default_port;
  return ports;
}

std::string transport_names_where(bool transport_traits::*trait) {
  std::string names;
  for (const auto& traits : all_transports()) {
    if (!(traits.*trait) || !traits.compiled) continue;
    if (!names.empty()) names += ", ";
    names += traits.name;
  }
  return names;
}

std::string_view transport_name(transport_kind transport) noexcept {
  return traits_of(transport).name;
}

std::optional<transport_kind> parse_transport(std::string_view name) noexcept {
  for (const auto& entry : detail::registered_entries()) {
    if (name == entry.traits.name || (!entry.alias.empty() && name == entry.alias)) {
      return entry.traits.kind;
    }
  }
  return std::nullopt;
}

}  // namespace dnstransport
