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

#include "registry/transports.hpp"
#include "transport/tls/tls_backend.hpp"

namespace dnstransport {

std::uint64_t parse_queries_per_connection(std::string_view text) {
  if (text == "unlimited" || text == "0") return 0;
  std::uint64_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || n == 0) {
    throw setup_error(fmt::format(
        "--queries-per-connection: \"{}\" is not a positive number or 'unlimited'", text));
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
        "--edns-padding: \"{}\" is not block:N with N from 1 to 65535 octets (e.g. block:128, "
        "RFC 8467's choice for queries), or none",
        text));
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

double total_rate(const load_spec& spec) noexcept {
  if (spec.rate > 0) return spec.rate;
  if (spec.client_rate > 0) return spec.client_rate * spec.clients;
  return 0;
}

namespace {

// --coalesce-us: a delay past a few milliseconds would only hold slots and the next sends
// back; 10 ms is already far past what gathers answers.
constexpr unsigned max_coalesce_us = 10000;

// A capture's queries, and replaying them with their timing.
void validate_replay(const load_spec& spec) {
  if (spec.capture && spec.queries.get() != &spec.capture->queries) {
    throw setup_error("load_spec: queries must be the capture's own when a capture is given");
  }
  if (spec.replay == replay_mode::fast) return;
  if (!spec.capture) throw setup_error("--replay timing needs a capture (--queries FILE.pcap)");
  if (spec.rate > 0) {
    throw setup_error(
        "--rate does not apply to --replay timing: the capture's times are the schedule (use "
        "--speed to scale them)");
  }
  if (spec.count != 0) {
    throw setup_error(
        "--count does not apply to --replay timing: the capture's queries are sent once each");
  }
  if (!(spec.replay_speed > 0) || !std::isfinite(spec.replay_speed)) {
    throw setup_error(fmt::format("--speed must be greater than 0 (got {})", spec.replay_speed));
  }
  if (spec.clients != spec.capture->sources.size()) {
    throw setup_error(fmt::format(
        "--clients {}: with --replay timing each source address of the capture is one client "
        "({} in {})",
        spec.clients, spec.capture->sources.size(), spec.capture->queries.origin()));
  }
}

}  // namespace

namespace {

// How much load, for how long, and the monitored processes.
void validate_size(const load_spec& spec) {
  if (spec.clients == 0) throw setup_error("--clients must be at least 1");
  if (spec.outstanding == 0 || spec.outstanding > 65536) {
    throw setup_error(
        fmt::format("--outstanding must be between 1 and 65536 (got {})", spec.outstanding));
  }
  if (spec.threads == 0) throw setup_error("--threads must be at least 1");
  for (const auto& cgroup : spec.monitor_cgroups) {
    if (!sample_cgroup(cgroup)) {
      throw setup_error(fmt::format(
          "--monitor-cgroup {}: not a readable cgroup v2 directory (no cpu.stat with user_usec)",
          cgroup));
    }
  }
  for (int pid : spec.monitor_pids) {
    if (!sample_process(pid)) {
      throw setup_error(fmt::format("--monitor-pid {}: no such process on this machine", pid));
    }
  }
  // A count this large is what a negative number becomes once read as unsigned.
  if (spec.count > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    throw setup_error(fmt::format("--count must be a positive number of queries (got {})",
                                  static_cast<std::int64_t>(spec.count)));
  }
  // A timing replay runs for its capture when no duration is given.
  const bool whole_capture = spec.replay == replay_mode::timing && spec.duration_seconds == 0;
  if (spec.count == 0 && !(spec.duration_seconds > 0) && !whole_capture) {
    throw setup_error("--duration must be greater than 0 seconds (or give --count)");
  }
  if (!(spec.timeout_seconds > 0)) throw setup_error("--timeout must be greater than 0 seconds");
  if (spec.warmup_seconds < 0) throw setup_error("--warmup cannot be negative");
}

// The rate and how it is spread in time.
void validate_pace(const load_spec& spec) {
  if (!(spec.rate >= 0)) throw setup_error("--rate cannot be negative");
  if (spec.arrivals == arrival_mode::replay) {
    throw setup_error(
        "--arrivals replay is not chosen by --arrivals: give a capture with --replay timing");
  }
  if (!(spec.client_rate >= 0) || std::isinf(spec.client_rate)) {
    throw setup_error(fmt::format(
        "--client-rate must be a positive number of queries per second per client (got {})",
        spec.client_rate));
  }
  if (spec.rate > 0 && spec.client_rate > 0) {
    throw setup_error(
        "--rate and --client-rate both set the load's rate (in total, or per client): give one");
  }
  if (!(spec.interval_seconds == 0 || spec.interval_seconds >= 0.01)) {
    throw setup_error(
        fmt::format("--interval must be at least 0.01 seconds, or 0 for no timeline (got {})",
                    spec.interval_seconds));
  }
  if (spec.port == 0) throw setup_error("the server port cannot be 0");
}

void validate_connections(const load_spec& spec, const transport_traits& traits) {
  if (!traits.has_connections && spec.queries_per_connection != 0) {
    throw setup_error(
        fmt::format("--queries-per-connection applies to transports with connections ({} has none)",
                    traits.name));
  }
  if (!(spec.idle_seconds >= 0) || std::isinf(spec.idle_seconds)) {
    throw setup_error(
        fmt::format("--idle must be a positive number of seconds (got {})", spec.idle_seconds));
  }
  if (!traits.has_connections && spec.idle_seconds > 0) {
    throw setup_error(fmt::format("--idle applies to transports with connections ({}; {} has none)",
                                  transport_names_where(&transport_traits::has_connections),
                                  traits.name));
  }
  if (spec.tc_retry_tcp && traits.has_connections) {
    throw setup_error(
        "--tc-retry tcp applies to --transport udp only (truncation is a UDP matter)");
  }
  if (spec.coalesce_us != 0 && !traits.coalescable) {
    throw setup_error(fmt::format("--coalesce-us applies to --transport {} only (not {})",
                                  transport_names_where(&transport_traits::coalescable),
                                  traits.name));
  }
  if (spec.coalesce_us > max_coalesce_us) {
    throw setup_error(
        fmt::format("--coalesce-us must be at most {} (microseconds a read may wait; got {})",
                    max_coalesce_us, spec.coalesce_us));
  }
  check_cpus(spec.cpus, "--cpus");
}

void validate_tls(const load_spec& spec, const transport_traits& traits) {
  if (!spec.tls.ca_file.empty() && !spec.tls.verify) {
    throw setup_error("--ca-file is only used with --verify");
  }
  if (traits.has_tls) {
    detail::check_version_range(spec.tls.min_version, spec.tls.max_version);
    const auto available = available_tls_backends();
    if (std::find(available.begin(), available.end(), spec.tls.backend) == available.end()) {
      throw setup_error(fmt::format("TLS backend {} is not compiled into this build",
                                    tls_backend_name(spec.tls.backend)));
    }
  }
  if (traits.gnutls_only && spec.tls.backend != tls_backend::gnutls) {
    throw setup_error(fmt::format(
        "--tls-backend {}: {} runs on GnuTLS only (ngtcp2's crypto helper; Debian's OpenSSL 3.0 "
        "has no QUIC API): leave --tls-backend out or give gnutls",
        tls_backend_name(spec.tls.backend), traits.name));
  }
  if (traits.tls13_only && spec.tls.max_version == tls_version::v1_2) {
    throw setup_error(
        fmt::format("--tls-version/--tls-max-version 1.2: {} carries TLS 1.3 only", traits.name));
  }
  if (spec.tls.early_data && !traits.has_tls) {
    throw setup_error(
        fmt::format("--early-data: {} has no TLS (0-RTT applies to tls, doh, doq)", traits.name));
  }
  if (spec.tls.early_data && spec.tls.max_version == tls_version::v1_2) {
    throw setup_error("--early-data needs TLS 1.3 (--tls-max-version 1.2 has no 0-RTT)");
  }
  if (spec.tls.early_data && !spec.tls.resume) {
    throw setup_error("--early-data needs --tls-resume (0-RTT rides on a resumed session)");
  }
}

// The queries and the EDNS options added to them, and the transport's own rules.
void validate_queries(const load_spec& spec, const transport_traits& traits) {
  if (spec.queries && spec.queries->empty()) throw setup_error("the query set is empty");
  validate_replay(spec);
  if (spec.edns_keepalive && !traits.over_tcp) {
    throw setup_error(fmt::format(
        "--edns-keepalive applies to {}, not {}: {}",
        transport_names_where(&transport_traits::over_tcp), traits.name,
        traits.has_connections
            ? "RFC 9250 (section 5.5.2) forbids edns-tcp-keepalive over DNS over QUIC, whose "
              "idle timeout is QUIC's own"
            : "RFC 7828 forbids edns-tcp-keepalive over UDP"));
  }
  if (spec.honour_keepalive && !spec.edns_keepalive) {
    throw setup_error(
        "--honour-keepalive needs --edns-keepalive: servers advertise an idle timeout only "
        "to queries that carry the option");
  }
  if (const auto check = detail::registered_transport(spec.transport).check) check(spec);
}

}  // namespace

void validate(const load_spec& spec) {
  const transport_traits& traits = traits_of(spec.transport);
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
