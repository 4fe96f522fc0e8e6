// What a load is asked to do: the names of its modes, the parsers of its values, and the
// rules its settings must follow (validate), each checked once.
#include <dnstransport/load.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include <dnstransport/cpus.hpp>
#include <dnstransport/error.hpp>

#include "load/source_ranges.hpp"
#include "registry/transports.hpp"
#include "transport/tls/tls_backend.hpp"

namespace dnstransport {

std::uint64_t parse_queries_per_connection(std::string_view text) {
  if (text == "unlimited" || text == "0") return 0;
  std::uint64_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || n == 0) {
    throw setup_error(fmt::format("{}: \"{}\" is not a positive number or 'unlimited'",
                                  setting("load_spec::connections.queries_per_connection"), text));
  }
  return n;
}

std::uint16_t parse_edns_padding(std::string_view text) {
  if (text == "none") return 0;
  constexpr std::string_view prefix = "block:";
  unsigned n = 0;
  const std::string_view digits =
      text.substr(0, prefix.size()) == prefix ? text.substr(prefix.size()) : std::string_view{};
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (digits.empty() || ec != std::errc{} || end != digits.data() + digits.size() || n == 0 ||
      n > 65535) {
    throw setup_error(fmt::format(
        "{}: \"{}\" is not block:N with N from 1 to 65535 octets (e.g. block:128, RFC 8467's "
        "choice for queries), or none",
        setting("load_spec::traffic.edns_padding_block"), text));
  }
  return static_cast<std::uint16_t>(n);
}

std::string_view arrival_mode_name(arrival_mode mode) noexcept {
  switch (mode) {
    case arrival_mode::constant:
      return "constant";
    case arrival_mode::poisson:
      return "poisson";
    case arrival_mode::replay:
      return "replay";
    case arrival_mode::closed:
      break;
  }
  return "closed";
}

std::optional<arrival_mode> parse_arrival_mode(std::string_view name) noexcept {
  for (auto mode : {arrival_mode::constant, arrival_mode::poisson, arrival_mode::closed,
                    arrival_mode::replay}) {
    if (name == arrival_mode_name(mode)) return mode;
  }
  return std::nullopt;
}

std::string_view replay_mode_name(replay_mode mode) noexcept {
  return mode == replay_mode::timing ? "timing" : "fast";
}

std::optional<replay_mode> parse_replay_mode(std::string_view name) noexcept {
  if (name == "fast") return replay_mode::fast;
  if (name == "timing") return replay_mode::timing;
  return std::nullopt;
}

std::string_view source_mode_name(source_mode mode) noexcept {
  switch (mode) {
    case source_mode::per_client:
      return "per-client";
    case source_mode::round_robin:
      return "round-robin";
    case source_mode::automatic:
      break;
  }
  return "auto";
}

std::string_view client_subnet_mode_name(client_subnet_mode mode) noexcept {
  return mode == client_subnet_mode::per_query ? "per-query" : "per-client";
}

std::optional<client_subnet_mode> parse_client_subnet_mode(std::string_view name) noexcept {
  for (auto mode : {client_subnet_mode::per_client, client_subnet_mode::per_query}) {
    if (name == client_subnet_mode_name(mode)) return mode;
  }
  return std::nullopt;
}

std::optional<source_mode> parse_source_mode(std::string_view name) noexcept {
  for (auto mode : {source_mode::automatic, source_mode::per_client, source_mode::round_robin}) {
    if (name == source_mode_name(mode)) return mode;
  }
  return std::nullopt;
}

std::string_view proxy_protocol_name(proxy_protocol version) noexcept {
  switch (version) {
    case proxy_protocol::v1:
      return "v1";
    case proxy_protocol::v2:
      return "v2";
    case proxy_protocol::none:
      break;
  }
  return "none";
}

std::optional<proxy_protocol> parse_proxy_protocol(std::string_view name) noexcept {
  if (name == "1") return proxy_protocol::v1;
  if (name == "2") return proxy_protocol::v2;
  for (auto version : {proxy_protocol::none, proxy_protocol::v1, proxy_protocol::v2}) {
    if (name == proxy_protocol_name(version)) return version;
  }
  return std::nullopt;
}

double total_rate(const load_spec& spec) noexcept {
  if (spec.traffic.rate > 0) return spec.traffic.rate;
  if (spec.traffic.client_rate > 0) return spec.traffic.client_rate * spec.traffic.clients;
  return 0;
}

namespace {

// A setting of load_spec as a setup_error names it: load_setting("traffic.rate").
std::string load_setting(std::string_view path) {
  return setting(fmt::format("load_spec::{}", path));
}

// A delay past a few milliseconds would only hold slots and the next sends back; 10 ms is
// already far past what gathers answers.
constexpr unsigned max_coalesce_us = 10000;

// A capture's queries, and replaying them with their timing.
void validate_replay(const load_spec& spec) {
  const traffic_settings& t = spec.traffic;
  if (t.capture && t.queries.get() != &t.capture->queries) {
    throw setup_error(fmt::format("{} must be the capture's own when {} is given",
                                  load_setting("traffic.queries"),
                                  load_setting("traffic.capture")));
  }
  if (t.replay == replay_mode::fast) return;
  const std::string replay = load_setting("traffic.replay");
  if (!t.capture) {
    throw setup_error(fmt::format("{} timing needs a packet capture ({})", replay,
                                  load_setting("traffic.capture")));
  }
  if (t.rate > 0) {
    throw setup_error(fmt::format(
        "{} does not apply to {} timing: the capture's times are the schedule ({} scales them)",
        load_setting("traffic.rate"), replay, load_setting("traffic.replay_speed")));
  }
  if (t.count != 0) {
    throw setup_error(
        fmt::format("{} does not apply to {} timing: the capture's queries are sent once each",
                    load_setting("traffic.count"), replay));
  }
  if (!(t.replay_speed > 0) || !std::isfinite(t.replay_speed)) {
    throw setup_error(fmt::format("{} must be greater than 0 (got {})",
                                  load_setting("traffic.replay_speed"), t.replay_speed));
  }
  if (t.clients != t.capture->sources.size()) {
    throw setup_error(fmt::format(
        "{} {}: with {} timing each source address of the capture is one client ({} in {})",
        load_setting("traffic.clients"), t.clients, replay, t.capture->sources.size(),
        t.capture->queries.origin()));
  }
}

// How much load, for how long, and the monitored processes.
void validate_size(const load_spec& spec) {
  const traffic_settings& t = spec.traffic;
  if (t.clients == 0) throw setup_error(load_setting("traffic.clients") + " must be at least 1");
  if (t.outstanding == 0 || t.outstanding > 65536) {
    throw setup_error(fmt::format("{} must be between 1 and 65536 (got {})",
                                  load_setting("traffic.outstanding"), t.outstanding));
  }
  if (spec.generator.threads == 0) {
    throw setup_error(load_setting("generator.threads") + " must be at least 1");
  }
  for (const auto& cgroup : spec.monitor.cgroups) {
    if (!sample_cgroup(cgroup)) {
      throw setup_error(
          fmt::format("{} {}: not a readable cgroup v2 directory (no cpu.stat with user_usec)",
                      load_setting("monitor.cgroups"), cgroup));
    }
  }
  for (int pid : spec.monitor.pids) {
    if (!sample_process(pid)) {
      throw setup_error(
          fmt::format("{} {}: no such process on this machine", load_setting("monitor.pids"), pid));
    }
  }
  // A count this large is what a negative number becomes once read as unsigned.
  if (t.count > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    throw setup_error(fmt::format("{} must be a positive number of queries (got {})",
                                  load_setting("traffic.count"),
                                  static_cast<std::int64_t>(t.count)));
  }
  // A timing replay runs for its capture when no duration is given.
  const bool whole_capture = t.replay == replay_mode::timing && t.duration_seconds == 0;
  if (t.count == 0 && !(t.duration_seconds > 0) && !whole_capture) {
    throw setup_error(fmt::format("{} must be greater than 0 seconds (or give {})",
                                  load_setting("traffic.duration_seconds"),
                                  load_setting("traffic.count")));
  }
  if (!(t.timeout_seconds > 0)) {
    throw setup_error(load_setting("traffic.timeout_seconds") + " must be greater than 0 seconds");
  }
  if (t.warmup_seconds < 0) {
    throw setup_error(load_setting("traffic.warmup_seconds") + " cannot be negative");
  }
}

// The rate and how it is spread in time.
void validate_pace(const load_spec& spec) {
  const traffic_settings& t = spec.traffic;
  const std::string rate = load_setting("traffic.rate");
  const std::string client_rate = load_setting("traffic.client_rate");
  if (!(t.rate >= 0)) throw setup_error(rate + " cannot be negative");
  if (t.arrivals == arrival_mode::replay) {
    throw setup_error(fmt::format("{} replay is not chosen by {}: give a capture with {} timing",
                                  load_setting("traffic.arrivals"),
                                  load_setting("traffic.arrivals"),
                                  load_setting("traffic.replay")));
  }
  if (!(t.client_rate >= 0) || std::isinf(t.client_rate)) {
    throw setup_error(
        fmt::format("{} must be a positive number of queries per second per client (got {})",
                    client_rate, t.client_rate));
  }
  if (t.rate > 0 && t.client_rate > 0) {
    throw setup_error(
        fmt::format("{} and {} both set the load's rate (in total, or per client): give one", rate,
                    client_rate));
  }
  const double interval = spec.output.interval_seconds;
  if (!(interval == 0 || interval >= 0.01)) {
    throw setup_error(fmt::format("{} must be at least 0.01 seconds, or 0 for no timeline (got {})",
                                  load_setting("output.interval_seconds"), interval));
  }
  if (spec.target.port == 0) throw setup_error(load_setting("target.port") + " cannot be 0");
}

void validate_proxy(const proxy_settings& p, const transport_traits& traits) {
  if (p.version == proxy_protocol::none) {
    if (!p.sources.empty() || !p.tlvs.empty() || p.random || p.inside_tls) {
      throw setup_error(fmt::format("{} needs {}",
                                    load_setting(!p.sources.empty() ? "connections.proxy.sources"
                                                 : !p.tlvs.empty()  ? "connections.proxy.tlvs"
                                                 : p.random         ? "connections.proxy.random"
                                                            : "connections.proxy.inside_tls"),
                                    load_setting("connections.proxy.version")));
    }
    return;
  }
  const std::string version = load_setting("connections.proxy.version");
  if (traits.has_connections && !traits.over_tcp) {
    throw setup_error(
        fmt::format("{} {}: {} cannot carry a PROXY header (QUIC has no place for one before its "
                    "packets, and no DNS over QUIC server reads one); it applies to {}",
                    version, proxy_protocol_name(p.version), traits.name,
                    transport_names_where(&transport_traits::over_tcp) + " and udp"));
  }
  if (p.version == proxy_protocol::v1 && !traits.over_tcp) {
    throw setup_error(
        fmt::format("{} v1 has no {} (version 1 is for TCP only): use v2", version, traits.name));
  }
  if (p.sources.empty()) {
    throw setup_error(fmt::format("{} {} needs {}: the client addresses its headers carry", version,
                                  proxy_protocol_name(p.version),
                                  load_setting("connections.proxy.sources")));
  }
  if (p.version == proxy_protocol::v1 && !p.tlvs.empty()) {
    throw setup_error(fmt::format("{} are for version 2 (version 1 has none)",
                                  load_setting("connections.proxy.tlvs")));
  }
  std::size_t size = 0;
  for (const auto& [type, value] : p.tlvs) size += 3 + value.size();
  if (size > 65535 - 36) {
    throw setup_error(fmt::format("{} hold {} octets, more than a header can carry ({})",
                                  load_setting("connections.proxy.tlvs"), size, 65535 - 36));
  }
}

void validate_connections(const load_spec& spec, const transport_traits& traits) {
  const connection_settings& c = spec.connections;
  if (!traits.has_connections && c.queries_per_connection != 0) {
    throw setup_error(fmt::format("{} applies to transports with connections ({} has none)",
                                  load_setting("connections.queries_per_connection"), traits.name));
  }
  const std::string idle = load_setting("connections.idle_seconds");
  if (!(c.idle_seconds >= 0) || std::isinf(c.idle_seconds)) {
    throw setup_error(
        fmt::format("{} must be a positive number of seconds (got {})", idle, c.idle_seconds));
  }
  if (!traits.has_connections && c.idle_seconds > 0) {
    throw setup_error(fmt::format("{} applies to transports with connections ({}; {} has none)",
                                  idle, transport_names_where(&transport_traits::has_connections),
                                  traits.name));
  }
  if (spec.traffic.tc_retry_tcp && traits.has_connections) {
    throw setup_error(fmt::format("{} applies to udp only (truncation is a UDP matter)",
                                  load_setting("traffic.tc_retry_tcp")));
  }
  const std::string coalesce = load_setting("generator.coalesce_us");
  if (spec.generator.coalesce_us.value_or(0) > max_coalesce_us) {
    throw setup_error(fmt::format("{} must be at most {} (microseconds a read may wait; got {})",
                                  coalesce, max_coalesce_us, *spec.generator.coalesce_us));
  }
  check_cpus(spec.generator.cpus, load_setting("generator.cpus"));
  validate_proxy(c.proxy, traits);
  detail::validate_distinct_sources(spec);
  if (c.proxy.inside_tls && (!traits.has_tls || spec.tls.early_data)) {
    throw setup_error(fmt::format(
        "{}: {}", load_setting("connections.proxy.inside_tls"),
        !traits.has_tls ? fmt::format("{} has no TLS session to put the header in", traits.name)
                        : fmt::format("not with {}: the queries sent in 0-RTT would come before "
                                      "the header",
                                      load_setting("tls.early_data"))));
  }
  if (c.proxy.version != proxy_protocol::none && spec.traffic.tc_retry_tcp) {
    throw setup_error(fmt::format("{} with {}: a retry over TCP would carry a UDP header",
                                  load_setting("traffic.tc_retry_tcp"),
                                  load_setting("connections.proxy.version")));
  }
}

void validate_tls(const load_spec& spec, const transport_traits& traits) {
  const tls_client_options& tls = spec.tls;
  if (!tls.ca_file.empty() && !tls.verify) {
    throw setup_error(fmt::format("{} is only used with {}", load_setting("tls.ca_file"),
                                  load_setting("tls.verify")));
  }
  if (traits.has_tls) {
    detail::check_version_range(tls.min_version, tls.max_version, "load_spec::tls.min_version",
                                "load_spec::tls.max_version");
    const auto available = available_tls_backends();
    if (std::find(available.begin(), available.end(), tls.backend) == available.end()) {
      throw setup_error(fmt::format("{} {} is not compiled into this build",
                                    load_setting("tls.backend"), tls_backend_name(tls.backend)));
    }
  }
  if (traits.gnutls_only && tls.backend != tls_backend::gnutls) {
    throw setup_error(fmt::format(
        "{} {}: {} runs on GnuTLS only (ngtcp2's crypto helper; Debian's OpenSSL 3.0 has no "
        "QUIC API): leave it out or give gnutls",
        load_setting("tls.backend"), tls_backend_name(tls.backend), traits.name));
  }
  const std::string max_version = load_setting("tls.max_version");
  if (traits.tls13_only && tls.max_version == tls_version::v1_2) {
    throw setup_error(fmt::format("{} 1.2: {} carries TLS 1.3 only", max_version, traits.name));
  }
  const std::string early_data = load_setting("tls.early_data");
  if (tls.early_data && !traits.has_tls) {
    throw setup_error(fmt::format("{}: {} has no TLS (0-RTT applies to {})", early_data,
                                  traits.name, transport_names_where(&transport_traits::has_tls)));
  }
  if (tls.early_data && tls.max_version == tls_version::v1_2) {
    throw setup_error(
        fmt::format("{} needs TLS 1.3 ({} 1.2 has no 0-RTT)", early_data, max_version));
  }
  if (tls.early_data && !tls.resume) {
    throw setup_error(fmt::format("{} needs {} (0-RTT rides on a resumed session)", early_data,
                                  load_setting("tls.resume")));
  }
}

// The queries and the EDNS options added to them, and the transport's own rules.
void validate_queries(const load_spec& spec, const transport_traits& traits) {
  if (spec.traffic.queries && spec.traffic.queries->empty()) {
    throw setup_error(load_setting("traffic.queries") + ": the query set is empty");
  }
  validate_replay(spec);
  const std::string keepalive = load_setting("traffic.edns_keepalive");
  if (spec.traffic.edns_keepalive && !traits.over_tcp) {
    throw setup_error(fmt::format(
        "{} applies to {}, not {}: {}", keepalive,
        transport_names_where(&transport_traits::over_tcp), traits.name,
        traits.has_connections
            ? "RFC 9250 (section 5.5.2) forbids edns-tcp-keepalive over DNS over QUIC, whose "
              "idle timeout is QUIC's own"
            : "RFC 7828 forbids edns-tcp-keepalive over UDP"));
  }
  if (spec.connections.honour_keepalive && !spec.traffic.edns_keepalive) {
    throw setup_error(fmt::format(
        "{} needs {}: servers advertise an idle timeout only to queries that carry the option",
        load_setting("connections.honour_keepalive"), keepalive));
  }
  if (const auto check = detail::registered_transport(spec.target.transport).check) check(spec);
}

}  // namespace

void validate(const load_spec& spec) {
  if (static_cast<std::size_t>(spec.target.transport) >= all_transports().size()) {
    throw setup_error(fmt::format("{}: {} is not a registered transport",
                                  load_setting("target.transport"),
                                  static_cast<unsigned>(spec.target.transport)));
  }
  const transport_traits& traits = traits_of(spec.target.transport);
  if (!spec.generator.xdp_interface.empty() && !traits.xdp) {
    throw setup_error(fmt::format("{}: AF_XDP carries {} only, not {}",
                                  load_setting("generator.xdp_interface"),
                                  transport_names_where(&transport_traits::xdp), traits.name));
  }
  if (!spec.generator.xdp_gateway_mac.empty() && spec.generator.xdp_interface.empty()) {
    throw setup_error(fmt::format("{} needs {}", load_setting("generator.xdp_gateway_mac"),
                                  load_setting("generator.xdp_interface")));
  }
  validate_size(spec);
  validate_pace(spec);
  validate_connections(spec, traits);
  validate_tls(spec, traits);
  validate_queries(spec, traits);
}

std::string_view doh_method_name(doh_method method) noexcept {
  return method == doh_method::get ? "get" : "post";
}

std::optional<doh_method> parse_doh_method(std::string_view name) noexcept {
  const auto is = [name](std::string_view word) {
    return name.size() == word.size() &&
           std::equal(name.begin(), name.end(), word.begin(), [](char a, char b) {
             return std::tolower(static_cast<unsigned char>(a)) == b;
           });
  };
  if (is("post")) return doh_method::post;
  if (is("get")) return doh_method::get;
  return std::nullopt;
}

}  // namespace dnstransport
