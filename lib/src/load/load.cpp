#include <dnstransport/load.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <functional>
#include <limits>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>
#include <boost/asio/ip/tcp.hpp>

#include <dnstransport/cpus.hpp>
#include <dnstransport/error.hpp>
#include <dnstransport/group.hpp>

#include "engine/engine.hpp"
#include "load/transports.hpp"
#include "monitor/server_monitor.hpp"
#include "transport/tls/tls_backend.hpp"
#include "util/clock.hpp"
#include "util/cpu_pinning.hpp"

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

double run_result::answered_percent() const noexcept {
  const std::uint64_t scheduled = queries_scheduled();
  if (scheduled == 0) return 100;
  return 100.0 * static_cast<double>(responses_received) / static_cast<double>(scheduled);
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

double run_result::queries_per_connection_achieved() const noexcept {
  if (connections.opened == 0) return 0;
  return static_cast<double>(connections.answered) / static_cast<double>(connections.opened);
}

double run_result::connections_per_second() const noexcept {
  if (!(elapsed_seconds > 0)) return 0;
  return static_cast<double>(connections.opened) / elapsed_seconds;
}

double run_result::handshakes_per_query() const noexcept {
  if (queries_sent == 0) return 0;
  return static_cast<double>(handshakes_full + handshakes_resumed) /
         static_cast<double>(queries_sent);
}

double run_result::wakeups_per_answer() const noexcept {
  if (responses_received == 0) return 0;
  return static_cast<double>(generator.wakeups) / static_cast<double>(responses_received);
}

double run_result::sleeps_per_answer() const noexcept {
  if (responses_received == 0) return 0;
  return static_cast<double>(generator.sleeps) / static_cast<double>(responses_received);
}

double run_result::syscalls_per_answer() const noexcept {
  if (responses_received == 0) return 0;
  return static_cast<double>(generator.syscalls) / static_cast<double>(responses_received);
}

double total_rate(const load_spec& spec) noexcept {
  if (spec.rate > 0) return spec.rate;
  if (spec.client_rate > 0) return spec.client_rate * spec.clients;
  return 0;
}

namespace {

using detail::monotonic_ns;
using detail::seconds_to_ns;

// Seconds between readings of the monitored server processes, for their maxima (the CPU
// figures come from the window's first and last readings): about ten per run, within
// these bounds (a reading of many TCP connections parses /proc/PID/net/tcp).
constexpr double monitor_interval_min = 0.05;
constexpr double monitor_interval_max = 1.0;

// --coalesce-us: a delay past a few milliseconds would only hold slots and the next sends
// back; 10 ms is already far past what gathers answers.
constexpr unsigned max_coalesce_us = 10000;

// Each client holds one socket; leave room for the responder and files.
constexpr rlim_t descriptor_reserve = 64;

void ensure_descriptors(unsigned clients) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  const rlim_t wanted = clients + descriptor_reserve;
  if (limit.rlim_cur >= wanted) return;
  rlimit raised = limit;
  raised.rlim_cur = std::min(wanted, limit.rlim_max);
  setrlimit(RLIMIT_NOFILE, &raised);
  if (raised.rlim_cur < wanted) {
    throw setup_error(fmt::format(
        "--clients {} needs about {} file descriptors but the limit is {} (hard limit {}); "
        "raise it with `ulimit -n {}` (as root, or in /etc/security/limits.conf)",
        clients, wanted, limit.rlim_cur, limit.rlim_max, wanted));
  }
}

// Every client holds one socket, so one local port per source address, at a time (TCP
// connections to one server share ports across source addresses with
// IP_BIND_ADDRESS_NO_PORT; UDP sockets each take a port of their address). More clients than
// that cannot all get a socket: say so now, not as EADDRNOTAVAIL halfway through the run.
void ensure_ports(unsigned clients, std::size_t source_count) {
  std::ifstream range_file("/proc/sys/net/ipv4/ip_local_port_range");
  std::uint64_t low = 0;
  std::uint64_t high = 0;
  if (!(range_file >> low >> high) || high < low) return;
  const std::uint64_t ports = high - low + 1;
  const std::uint64_t sources = std::max<std::size_t>(source_count, 1);
  if (clients <= ports * sources) return;
  throw setup_error(fmt::format(
      "--clients {}: every client holds a local port, but the ephemeral port range "
      "(net.ipv4.ip_local_port_range = {} {}) gives {} ports x {} source address{} = {}; widen "
      "it (e.g. sysctl -w net.ipv4.ip_local_port_range=\"1024 65535\") or give more --source "
      "addresses",
      clients, low, high, ports, sources, sources == 1 ? "" : "es", ports * sources));
}

boost::asio::ip::address resolve(const std::string& host) {
  boost::system::error_code ec;
  auto address = boost::asio::ip::make_address(host, ec);
  if (!ec) return address;
  boost::asio::io_context io;
  boost::asio::ip::tcp::resolver resolver(io);
  auto results = resolver.resolve(host, "", ec);
  if (ec || results.empty()) {
    throw setup_error(
        fmt::format("--server: cannot resolve \"{}\": {}", host, ec ? ec.message() : "no address"));
  }
  return results.begin()->endpoint().address();
}

std::vector<boost::asio::ip::address> source_addresses(const load_spec& spec,
                                                       const boost::asio::ip::address& server) {
  std::vector<boost::asio::ip::address> sources;
  for (const auto& text : spec.sources) {
    boost::system::error_code ec;
    auto address = boost::asio::ip::make_address(text, ec);
    if (ec) throw setup_error(fmt::format("--source: \"{}\" is not an IP address", text));
    if (address.is_v4() != server.is_v4()) {
      throw setup_error(fmt::format("--source {} is not of the same family as the server {}", text,
                                    server.to_string()));
    }
    sources.push_back(address);
  }
  // Towards IPv4 loopback, 16 source addresses give 16 times the ephemeral ports, so a run
  // at one query per connection does not stall on TIME_WAIT.
  if (sources.empty() && traits_of(spec.transport).has_connections && server.is_v4() &&
      server.is_loopback()) {
    for (unsigned i = 1; i <= 16; ++i) {
      sources.push_back(boost::asio::ip::address_v4(0x7f000000u + i));
    }
  }
  return sources;
}

// Numbers the questions of the query set: queries asking the same name (ASCII
// case-insensitively), type and class share a number. A query with no question to check
// gets a number of its own, since no answer could fail to echo it anyway.
std::uint32_t number_questions(const query_set& queries, std::vector<std::uint32_t>& question_of) {
  std::unordered_map<std::string, std::uint32_t> numbers;
  std::uint32_t next = 0;
  question_of.resize(queries.size());
  for (std::size_t i = 0; i < queries.size(); ++i) {
    const auto query = queries[i];
    std::optional<std::size_t> name_end;
    if (query.size() >= dns_header_size && ((query[4] << 8) | query[5]) >= 1) {
      name_end = skip_name(query, dns_header_size);
    }
    if (!name_end || query.size() - *name_end < 4) {
      question_of[i] = next++;
      continue;
    }
    std::string key(query.begin() + dns_header_size,
                    query.begin() + static_cast<std::ptrdiff_t>(*name_end + 4));
    for (std::size_t k = 0; k + 4 < key.size(); ++k) {
      if (key[k] >= 'A' && key[k] <= 'Z') key[k] = static_cast<char>(key[k] - 'A' + 'a');
    }
    const auto [it, added] = numbers.try_emplace(std::move(key), next);
    if (added) ++next;
    question_of[i] = it->second;
  }
  return next;
}

// The query set with the run's EDNS options (keepalive, padding) added to every query.
std::shared_ptr<const query_set> with_edns_options(const query_set& queries,
                                                   const load_spec& spec) {
  edns_config edns;
  edns.enabled = true;
  edns.padding_block = spec.edns_padding_block;
  if (spec.edns_keepalive) edns.options.push_back({edns_option_code::tcp_keepalive, {}});
  auto out = std::make_shared<query_set>();
  for (std::size_t i = 0; i < queries.size(); ++i) {
    try {
      out->add(add_edns_options(queries[i], edns));
    } catch (const std::invalid_argument& e) {
      throw setup_error(
          fmt::format("{}: query {} of {} cannot take the option: {}",
                      spec.edns_padding_block != 0 ? "--edns-padding" : "--edns-keepalive", i + 1,
                      queries.origin(), e.what()));
    }
  }
  out->set_origin(queries.origin());
  return out;
}

// The workers' counters, summed, into the public result.
void fill_result(run_result& r, const detail::counters& total) {
  const detail::query_counters& q = total.queries;
  static_cast<query_counts&>(r) = q;
  r.http_failures = q.http_failures;
  r.quic_failures = q.quic_failures;
  r.rcodes = q.rcodes;
  r.latency = q.latency;
  r.send_lag = q.send_lag;
  r.edns.keepalive_answers = q.keepalive_answers;
  if (q.keepalive_answers > 0) {
    r.edns.keepalive_min_seconds = q.keepalive_min / 10.0;
    r.edns.keepalive_max_seconds = q.keepalive_max / 10.0;
  }
  r.edns.padded_answers = q.padded_answers;
  r.edns.padded_sizes = q.padded_sizes;
  const detail::connection_counters& c = total.connections;
  static_cast<connection_counts&>(r.connections) = c;
  r.connections.failures = c.failures;
  r.connections.first_failure = c.first_failure;
  r.handshakes_full = c.handshakes_full;
  r.handshakes_resumed = c.handshakes_resumed;
  r.first_query_latency = c.first_query_latency;
  r.connect_latency = c.connect_latency;
  r.handshake_latency = c.handshake_latency;
  r.generator.wakeups = total.generator.wakeups;
  r.generator.syscalls = total.generator.syscalls.calls;
  r.generator.syscalls_would_block = total.generator.syscalls.would_block;
  r.generator.sleeps = total.generator.sleeps;
  r.early_data = total.early_data;
  const detail::quic_counters& u = total.quic;
  quic_stats& out = r.quic;
  static_cast<quic_counts&>(out) = u;
  out.closes = u.closes;
  if (u.rtt_samples > 0) {
    out.smoothed_rtt_ms =
        static_cast<double>(u.smoothed_rtt_ns_sum) / 1e6 / static_cast<double>(u.rtt_samples);
    out.mean_cwnd_bytes = static_cast<double>(u.cwnd_sum) / static_cast<double>(u.rtt_samples);
  }
  out.min_rtt_ms = static_cast<double>(u.min_rtt_ns) / 1e6;
}

// Merges the workers' timeline rows (by interval) into the result's timeline.
void fill_timeline(run_result& result, const std::vector<std::unique_ptr<detail::worker>>& workers,
                   const detail::run_plan& plan, double seconds_until_end) {
  if (plan.interval_ns == 0) return;
  std::size_t rows = 0;
  for (const auto& w : workers) {
    for (const auto& row : w->timeline()) rows = std::max<std::size_t>(rows, row.index + 1);
  }
  const double interval = static_cast<double>(plan.interval_ns) / 1e9;
  std::vector<latency_histogram> latency(rows);
  result.timeline.assign(rows, timeline_row{});
  for (std::size_t k = 0; k < rows; ++k) {
    result.timeline[k].start_seconds = static_cast<double>(k) * interval;
    result.timeline[k].duration_seconds =
        std::clamp(seconds_until_end - result.timeline[k].start_seconds, 0.0, interval);
  }
  for (const auto& w : workers) {
    for (const auto& row : w->timeline()) {
      timeline_row& t = result.timeline[row.index];
      t.sent += row.sent;
      t.answered += row.answered;
      t.lost += row.lost;
      t.failed += row.failed;
      t.not_sent += row.not_sent;
      t.connections_open += row.connections_open;
      t.connections_opened += row.connections_opened;
      t.handshakes += row.handshakes;
      if (row.latency.empty()) continue;
      latency_histogram h;
      for (const auto& [lowest, n] : row.latency) h.restore(lowest, n);
      h.restore_stats(row.latency_min, row.latency_max, row.latency_sum);
      latency[row.index].merge(h);
    }
  }
  for (std::size_t k = 0; k < rows; ++k) {
    timeline_row& t = result.timeline[k];
    if (t.duration_seconds > 0) t.qps = static_cast<double>(t.answered) / t.duration_seconds;
    t.p50_ms = static_cast<double>(latency[k].percentile(50)) / 1e6;
    t.p99_ms = static_cast<double>(latency[k].percentile(99)) / 1e6;
  }
}

// Open loop: says when the generator did not keep to its schedule.
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

// The capture's queries per client (its source address), in capture time order, with their
// offsets from the capture's first query divided by the speed.
void plan_replay(const pcap_capture& capture, double speed, detail::run_plan& plan) {
  const std::size_t n = capture.queries.size();
  std::vector<std::uint32_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = static_cast<std::uint32_t>(i);
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    return std::pair(capture.clients[a], capture.times_ns[a]) <
           std::pair(capture.clients[b], capture.times_ns[b]);
  });
  const std::uint64_t first = *std::min_element(capture.times_ns.begin(), capture.times_ns.end());
  plan.replay_first.assign(capture.sources.size() + 1, 0);
  for (const std::uint32_t c : capture.clients) ++plan.replay_first[c + 1];
  for (std::size_t c = 1; c < plan.replay_first.size(); ++c) {
    plan.replay_first[c] += plan.replay_first[c - 1];
  }
  plan.replay_query = order;
  plan.replay_offset_ns.reserve(n);
  for (const std::uint32_t i : order) {
    plan.replay_offset_ns.push_back(
        static_cast<std::uint64_t>(static_cast<double>(capture.times_ns[i] - first) / speed));
  }
}

capture_summary summarize(const load_spec& spec) {
  const pcap_capture& c = *spec.capture;
  capture_summary s;
  s.counts = c.counts;
  s.clients = c.sources.size();
  if (!c.times_ns.empty()) {
    const auto [first, last] = std::minmax_element(c.times_ns.begin(), c.times_ns.end());
    s.span_seconds = static_cast<double>(*last - *first) / 1e9;
  }
  s.replay = spec.replay;
  s.speed = spec.replay == replay_mode::timing ? spec.replay_speed : 1;
  return s;
}

// Persistent connections in a closed loop are meant to be open before the window: when some
// were set up inside it (not replacing ones the server closed), their set-up is in the
// figures. Under mpirun, the ranks' connection storms then overlap the window.
void add_warmup_warning(run_result& r, const load_spec& spec) {
  if (spec.warmup_seconds <= 0 || r.open_loop() || !traits_of(spec.transport).has_connections ||
      spec.queries_per_connection != 0 || spec.idle_seconds > 0 || spec.honour_keepalive) {
    return;
  }
  const auto& c = r.connections;
  const std::uint64_t replaced = c.closed_by_server + c.reset_by_server + c.goaway;
  if (c.opened <= replaced) return;
  r.warnings.push_back(fmt::format(
      "{} connection{} set up inside the measured window: the warm-up (--warmup {:g} s) ended "
      "before every client's connection was open, so set-up costs are in the figures; give a "
      "longer --warmup",
      c.opened - replaced, c.opened - replaced == 1 ? " was" : "s were", spec.warmup_seconds));
}

void add_open_loop_warnings(run_result& r) {
  if (!r.open_loop()) return;
  if (r.not_sent_outstanding > 0) {
    r.warnings.push_back(fmt::format(
        "the generator fell behind its schedule: {} scheduled queries were not sent because "
        "their client already had --outstanding {} queries in flight or waiting (the server "
        "answers slower than --rate asks, or raise --outstanding or --clients)",
        r.not_sent_outstanding, r.outstanding));
  }
  if (r.not_sent_timeout > 0) {
    r.warnings.push_back(fmt::format(
        "{} scheduled queries were not sent: they waited longer than the timeout for their "
        "client to be able to send (no connection)",
        r.not_sent_timeout));
  }
  // A generator late by more than a millisecond at the 99th percentile distorts latency.
  if (r.send_lag.count() > 0 && r.send_lag.percentile(99) > 1'000'000) {
    // A query that waits for its client's new connection leaves late too.
    const bool reconnects = r.queries_per_connection != 0 || r.idle_seconds > 0;
    r.warnings.push_back(fmt::format(
        "the generator sent late: 99 % of queries left within {:.2f} ms of their scheduled "
        "time (latency includes this; {})",
        static_cast<double>(r.send_lag.percentile(99)) / 1e6,
        reconnects ? "queries that open a new connection (--queries-per-connection, --idle) "
                     "wait for its set-up, or the generator is short of CPU (--threads)"
                   : "use more --threads or fewer --clients per thread"));
  }
}

}  // namespace

void validate(const load_spec& spec) {
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
  const transport_traits& traits = traits_of(spec.transport);
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
  if (!spec.tls.ca_file.empty() && !spec.tls.verify) {
    throw setup_error("--ca-file is only used with --verify");
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

namespace {

// One process's load. `ready`, when given, is called once the set-up is done, just before
// the first query: false means "do not send" (the result is then an interrupted, empty run).
run_result run_alone(const load_spec& spec, const std::function<bool()>& ready) {
  validate(spec);
  const auto server_address = resolve(spec.server);
  const auto sources = source_addresses(spec, server_address);
  ensure_ports(spec.clients, sources.size());
  ensure_descriptors(spec.clients);
  std::shared_ptr<const query_set> queries = spec.queries;
  if (!queries) queries = std::make_shared<const query_set>(default_queries());
  if (spec.edns_keepalive || spec.edns_padding_block != 0)
    queries = with_edns_options(*queries, spec);

  run_result result;
  result.label = spec.label;
  result.server = spec.server;
  result.port = spec.port;
  result.transport = spec.transport;
  if (traits_of(spec.transport).has_tls) {
    result.tls_backend = std::string(tls_backend_name(spec.tls.backend));
  }
  result.clients = spec.clients;
  result.outstanding = spec.outstanding;
  result.queries_per_connection = spec.queries_per_connection;
  result.idle_seconds = spec.idle_seconds;
  result.coalesce_us = spec.coalesce_us;
  result.query_origin = queries->origin();
  result.query_count_in_set = queries->size();
  if (spec.capture) result.capture = summarize(spec);
  result.edns.keepalive_sent = spec.edns_keepalive;
  result.edns.padding_block = spec.edns_padding_block;
  if (spec.edns_padding_block != 0 && !traits_of(spec.transport).has_tls) {
    result.warnings.push_back(fmt::format(
        "--edns-padding over {}: the queries travel in clear, so padding hides nothing (RFC "
        "8467 pads encrypted messages), and servers need not pad their answers",
        traits_of(spec.transport).name));
  }

  const unsigned threads = std::min(spec.threads, spec.clients);
  if (threads < spec.threads) {
    result.warnings.push_back(fmt::format(
        "--threads {} reduced to {}: a thread needs at least one client", spec.threads, threads));
  }
  result.threads = threads;

  const auto transport = detail::registered_transport(spec.transport).make(spec);

  detail::run_plan plan;
  plan.transport = transport.get();
  plan.queries = queries.get();
  plan.clients = spec.clients;
  plan.outstanding = spec.outstanding;
  plan.gather_writes = spec.gather_writes;
  plan.coalesce_ns = std::uint64_t{spec.coalesce_us} * 1000;
  plan.server_address = server_address;
  plan.server_port = spec.port;
  plan.sources = sources;
  plan.timeout_ns = seconds_to_ns(spec.timeout_seconds);
  const double rate = total_rate(spec);
  plan.rate_per_client = spec.rate > 0 ? spec.rate / spec.clients : spec.client_rate;
  if (rate > 0) {
    plan.arrivals = spec.arrivals == arrival_mode::constant  ? detail::run_plan::schedule::constant
                    : spec.arrivals == arrival_mode::poisson ? detail::run_plan::schedule::poisson
                                                             : detail::run_plan::schedule::closed;
    result.rate = rate;
    result.client_rate = spec.client_rate;
    result.arrivals = spec.arrivals;
  }
  if (spec.capture && spec.replay == replay_mode::timing) {
    plan.arrivals = detail::run_plan::schedule::replay;
    result.arrivals = arrival_mode::replay;
    plan_replay(*spec.capture, spec.replay_speed, plan);
  }
  // What the run is planned to last, for progress and the monitor's readings: a timing
  // replay without a duration lasts as long as its capture, at its speed.
  const double duration =
      spec.duration_seconds > 0 || !result.capture
          ? spec.duration_seconds
          : result.capture->span_seconds / spec.replay_speed + spec.timeout_seconds;
  plan.interval_ns = seconds_to_ns(spec.interval_seconds);
  detail::run_plan::connection_gauge connections_gauge;
  plan.connections_gauge = &connections_gauge;
  result.interval_seconds = spec.interval_seconds;
  plan.distinct_questions = number_questions(*queries, plan.question_of);
  // A replayed client sends what its source sent; it has no choice of questions to widen.
  if (plan.distinct_questions < spec.outstanding &&
      plan.arrivals != detail::run_plan::schedule::replay) {
    result.warnings.push_back(fmt::format(
        "at most {} queries in flight per client, not --outstanding {}: the query list has {} "
        "distinct question{}, and a client never has two queries with the same question in "
        "flight (so that an answer carrying another query's id cannot pass the question check)",
        plan.distinct_questions, spec.outstanding, plan.distinct_questions,
        plan.distinct_questions == 1 ? "" : "s"));
  }
  plan.read_edns_options = result.edns.requested();
  if (!traits_of(spec.transport).has_connections) {
    plan.udp_answer_limits.reserve(queries->size());
    for (std::size_t i = 0; i < queries->size(); ++i) {
      plan.udp_answer_limits.push_back(udp_answer_limit((*queries)[i]));
    }
  }

  // Before the workers: a monitor command that fails ends the run before anything is sent.
  const auto& traits = traits_of(spec.transport);
  detail::server_monitor monitor(spec.monitor_pids, spec.monitor_cgroups, spec.monitor_command,
                                 traits.over_tcp ? spec.port : 0);

  std::vector<std::unique_ptr<detail::worker>> workers;
  for (unsigned w = 0; w < threads; ++w) {
    std::vector<unsigned> indices;
    std::vector<std::uint64_t> quotas;
    for (unsigned c = w; c < spec.clients; c += threads) {
      indices.push_back(c);
      quotas.push_back(spec.count == 0
                           ? UINT64_MAX
                           : spec.count / spec.clients + (c < spec.count % spec.clients ? 1 : 0));
    }
    workers.push_back(
        std::make_unique<detail::worker>(plan, std::move(indices), std::move(quotas)));
  }

  if (ready && !ready()) {
    result.interrupted = true;
    return result;
  }
  plan.start_ns = monotonic_ns();
  plan.measure_start_ns = plan.start_ns + seconds_to_ns(spec.warmup_seconds);
  plan.send_end_ns = spec.count == 0 && spec.duration_seconds > 0
                         ? plan.measure_start_ns + seconds_to_ns(spec.duration_seconds)
                         : UINT64_MAX;

  const double monitor_interval = std::clamp(spec.count == 0 ? duration / 10 : monitor_interval_max,
                                             monitor_interval_min, monitor_interval_max);
  if (monitor.active() && spec.warmup_seconds <= 0) monitor.sample();
  std::uint64_t next_monitor_sample = plan.measure_start_ns + seconds_to_ns(monitor_interval);
  // With a timeline, the server is also read at each row's end: (row, CPU so far, RSS).
  struct server_reading {
    std::uint64_t row;
    double cpu_seconds;
    std::uint64_t rss_bytes;
  };
  std::vector<server_reading> server_readings;
  std::uint64_t next_row_reading = 0;  // rows read so far

  std::atomic<unsigned> finished{0};
  std::vector<std::thread> pool;
  for (unsigned w = 0; w < threads; ++w) {
    pool.emplace_back([&, w] {
      if (!spec.cpus.empty()) detail::pin_current_thread(spec.cpus[w % spec.cpus.size()]);
      workers[w]->run();
      finished.fetch_add(1, std::memory_order_release);
    });
  }

  const double planned = spec.count == 0 ? spec.warmup_seconds + duration : 0;
  const auto progress_period = seconds_to_ns(std::max(0.05, spec.progress_interval_seconds));
  std::uint64_t next_progress = plan.start_ns + progress_period;
  std::uint64_t previous_received = 0;
  std::uint64_t previous_progress = plan.start_ns;
  std::uint64_t stop_ns = 0;
  while (finished.load(std::memory_order_acquire) < threads) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const std::uint64_t now = monotonic_ns();
    if (stop_ns == 0 && spec.stop != nullptr && spec.stop->load(std::memory_order_relaxed)) {
      stop_ns = now;
      for (auto& w : workers) w->request_stop();
    }
    if (monitor.active() && now >= plan.measure_start_ns) {
      const bool row_ended =
          plan.interval_ns > 0 &&
          now >= plan.measure_start_ns + (next_row_reading + 1) * plan.interval_ns;
      if (!monitor.started() || now >= next_monitor_sample || row_ended) {
        monitor.sample();
        next_monitor_sample = now + seconds_to_ns(monitor_interval);
      }
      if (row_ended) {
        next_row_reading = (now - plan.measure_start_ns) / plan.interval_ns;
        server_readings.push_back(
            {next_row_reading, monitor.cpu_seconds_so_far(), monitor.last_rss_bytes()});
      }
    }
    if (spec.on_progress && now >= next_progress) {
      load_progress p;
      p.elapsed_seconds = static_cast<double>(now - plan.start_ns) / 1e9;
      p.planned_seconds = planned;
      for (auto& w : workers) {
        p.queries_sent += w->published_sent();
        p.responses_received += w->published_received();
        p.lost += w->published_lost();
      }
      p.recent_qps = static_cast<double>(p.responses_received - previous_received) /
                     (static_cast<double>(now - previous_progress) / 1e9);
      previous_received = p.responses_received;
      previous_progress = now;
      next_progress = now + progress_period;
      spec.on_progress(p);
    }
  }
  for (auto& t : pool) t.join();
  const std::uint64_t end_ns = monotonic_ns();

  detail::counters total;
  std::uint64_t last_answer = 0;
  for (auto& w : workers) {
    total.merge(w->shard());
    last_answer = std::max(last_answer, w->last_answer_ns);
    result.client_cpu_seconds += w->thread_cpu_seconds;
    if (w->wall_seconds > 0) {
      result.max_thread_cpu_share =
          std::max(result.max_thread_cpu_share, w->thread_cpu_seconds / w->wall_seconds);
    }
  }
  fill_result(result, total);
  std::tie(result.connections.certificates_verified, result.connections.certificates_reused) =
      transport->certificate_checks();
  result.interrupted = stop_ns != 0;
  if (rusage usage{}; getrusage(RUSAGE_SELF, &usage) == 0) {
    result.client_rss_bytes = static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;
  }
  // The measured window runs from the end of the warm-up to the end of sending (or the
  // interruption), stretched to the last counted answer so that answers to queries sent in
  // the window count against the time they took. In count mode it ends with the last answer.
  std::uint64_t window_end = result.interrupted ? stop_ns : std::min(end_ns, plan.send_end_ns);
  if (spec.count != 0 && last_answer != 0 && !result.interrupted) window_end = last_answer;
  window_end = std::max(window_end, last_answer);
  result.elapsed_seconds = window_end > plan.measure_start_ns
                               ? static_cast<double>(window_end - plan.measure_start_ns) / 1e9
                               : 0;
  result.qps = result.elapsed_seconds > 0
                   ? static_cast<double>(result.responses_received) / result.elapsed_seconds
                   : 0;
  // The workers sum open connections over the window up to the end of sending.
  const std::uint64_t sending_end =
      result.interrupted ? std::min(stop_ns, plan.send_end_ns) : std::min(end_ns, plan.send_end_ns);
  if (sending_end > plan.measure_start_ns) {
    result.connections.concurrent_mean = static_cast<double>(total.connections.open_ns) /
                                         static_cast<double>(sending_end - plan.measure_start_ns);
  }
  result.connections.concurrent_max = connections_gauge.max.load();
  if (monitor.active()) {
    monitor.close_window(window_end);
    monitor.sample();
  }
  fill_timeline(result, workers, plan, static_cast<double>(end_ns - plan.measure_start_ns) / 1e9);
  if (monitor.active()) {
    // Row k's server CPU: from the reading at its start (the window's first reading for row
    // 0) to the reading at its end (the last reading for the last row).
    double cpu_before = 0;
    std::uint64_t reading_row = 0;  // rows [reading_row, r.row) end at the next reading
    server_readings.push_back(
        {result.timeline.size(), monitor.cpu_seconds_so_far(), monitor.last_rss_bytes()});
    for (const auto& r : server_readings) {
      // A reading taken late (after several rows ended) is spread over none of them.
      if (r.row == reading_row + 1 && reading_row < result.timeline.size()) {
        result.timeline[reading_row].server_cpu_seconds = r.cpu_seconds - cpu_before;
        result.timeline[reading_row].server_rss_bytes = r.rss_bytes;
      }
      reading_row = r.row;
      cpu_before = r.cpu_seconds;
    }
    result.server_usage = monitor.finish(result.responses_received, result.elapsed_seconds);
    for (const auto& warning : monitor.warnings()) result.warnings.push_back(warning);
    for (const auto& cgroup : result.server_usage.exited_cgroups) {
      result.warnings.push_back(fmt::format(
          "monitored cgroup {} went away during the run: its figures stop at its last reading",
          cgroup));
    }
    for (int pid : result.server_usage.exited) {
      result.warnings.push_back(fmt::format(
          "monitored server process {} exited during the run: its figures stop at its last "
          "reading",
          pid));
    }
  }
  // In a group, the merged result gets them once, from every member's counts.
  if (!ready) {
    add_open_loop_warnings(result);
    add_warmup_warning(result, spec);
  }
  return result;
}

// How long a member waits for the others at the start, and for their results after its own
// load: the start waits for set-up (reading captures, resolving, TLS contexts), the results
// for the timeout of the last queries and the members' drift.
constexpr double group_start_wait_seconds = 120;
constexpr double group_result_margin_seconds = 10;
// Interrupted (SIGINT, or mpirun ending the job because a member died, which sends SIGTERM
// and SIGKILL a second later), a member waits only briefly, so member 0 can still write.
constexpr double group_interrupted_wait_seconds = 0.3;

run_result run_in_group(const load_spec& spec) {
  load_group& group = *spec.group;
  bool told = false;
  const auto ready = [&] {
    told = true;
    const bool stopping = spec.stop != nullptr && spec.stop->load(std::memory_order_relaxed);
    return group.start_together({}, stopping, group_start_wait_seconds);
  };
  run_result own;
  try {
    load_spec mine = share_of(spec, group.rank(), group.size());
    mine.group = nullptr;
    own = run_alone(mine, ready);
  } catch (const std::exception& e) {
    // A member that cannot run tells the others, so none waits for it.
    if (!told) group.start_together(e.what(), false, group_start_wait_seconds);
    throw;
  }
  const double wait =
      own.interrupted
          ? group_interrupted_wait_seconds
          : spec.timeout_seconds + group_result_margin_seconds +
                (spec.count > 0 || spec.duration_seconds == 0 ? own.elapsed_seconds : 0);
  run_result merged = merge_results(group.gather(own, wait), group.hosts());
  add_open_loop_warnings(merged);
  add_warmup_warning(merged, spec);
  return merged;
}

}  // namespace

run_result run_load(const load_spec& spec) {
  if (spec.group) return run_in_group(spec);
  return run_alone(spec, {});
}

}  // namespace dnstransport
