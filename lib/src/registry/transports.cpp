#include "registry/transports.hpp"

#include <algorithm>
#include <array>
#include <string>

#include <fmt/format.h>

#include <dnstransport/error.hpp>

#include "transport/doh/doh_listener.hpp"
#include "transport/doh/doh_transport.hpp"
#if DNSTRANSPORT_HAVE_DOQ
#include "transport/doq/doq_listener.hpp"
#include "transport/doq/doq_transport.hpp"
#endif
#include "transport/stream/stream_listener.hpp"
#include "transport/stream/stream_transport.hpp"
#include "transport/tls/tls_backend.hpp"
#include "transport/udp/udp_listener.hpp"
#include "transport/udp/udp_transport.hpp"
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

std::unique_ptr<client_transport> make_udp(const load_spec& spec) {
  std::unique_ptr<stream_transport> tc_retry;
  if (spec.traffic.tc_retry_tcp) {
    // One TCP connection per UDP client, kept while the client may still need it.
    tc_retry = std::make_unique<stream_transport>(stream_settings_of(spec), make_tcp_connector());
  }
  return make_udp_transport(std::move(tc_retry));
}

std::unique_ptr<client_transport> make_tcp(const load_spec& spec) {
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
constexpr std::array<transport_entry, transport_count> registry{{
    {{.kind = transport_kind::udp,
      .name = "udp",
      .long_name = "UDP",
      .short_name = "UDP",
      .default_port = 53},
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
      .over_tcp = true},
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
  for (std::size_t i = 0; i < registry.size(); ++i) {
    if (static_cast<std::size_t>(registry[i].traits.kind) != i) return false;
  }
  return true;
}());

const std::array<transport_traits, registry.size()> traits_table = [] {
  std::array<transport_traits, registry.size()> traits;
  std::transform(registry.begin(), registry.end(), traits.begin(),
                 [](const transport_entry& e) { return e.traits; });
  return traits;
}();

}  // namespace

const transport_entry& registered_transport(transport_kind transport) noexcept {
  return registry[static_cast<std::size_t>(transport)];
}

}  // namespace dnstransport::detail

namespace dnstransport {

const transport_traits& traits_of(transport_kind transport) noexcept {
  return detail::traits_table[static_cast<std::size_t>(transport)];
}

std::span<const transport_traits> all_transports() noexcept {
  return detail::traits_table;
}

per_transport<std::uint16_t> default_ports() noexcept {
  per_transport<std::uint16_t> ports;
  for (const auto& traits : detail::traits_table) ports[traits.kind] = traits.default_port;
  return ports;
}

std::string transport_names_where(bool transport_traits::*trait) {
  std::string names;
  for (const auto& traits : detail::traits_table) {
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
  for (const auto& entry : detail::registry) {
    if (name == entry.traits.name || (!entry.alias.empty() && name == entry.alias)) {
      return entry.traits.kind;
    }
  }
  return std::nullopt;
}

}  // namespace dnstransport
