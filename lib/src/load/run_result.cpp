// The public result of one process's load: made from the workers' counters and timeline
// rows once they end, with the warnings about the run itself; what run_result derives.
#include <dnstransport/error.hpp>
#include <dnstransport/load.hpp>
#include <dnstransport/text.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <tuple>

#include <fmt/format.h>

#include "load/load_steps.hpp"

namespace dnstransport {

double run_result::answered_percent() const noexcept {
  const std::uint64_t scheduled = queries_scheduled();
  if (scheduled == 0) return 100;
  return 100.0 * static_cast<double>(responses_received) / static_cast<double>(scheduled);
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

live_figures figures_of(const run_result& result) {
  live_figures f;
  f.seconds = result.elapsed_seconds;
  f.finished = true;
  f.queries = result;
  f.connections_opened = result.connections.opened;
  f.handshakes_full = result.handshakes_full;
  f.handshakes_resumed = result.handshakes_resumed;
  f.latency = result.latency;
  f.generator_cpu_seconds = result.client_cpu_seconds;
  if (result.server_usage.monitored()) f.server_cpu_seconds = result.server_usage.cpu_seconds();
  if (!result.timeline.empty()) {
    f.connections_open = result.timeline.back().connections_open;
    f.server_rss_bytes = result.timeline.back().server_rss_bytes;
  }
  return f;
}

namespace detail {

// The workers' counters, summed, into the public result.
void fill_result(run_result& r, const counters& total) {
  const query_counters& q = total.queries;
  static_cast<query_counts&>(r) = q;
  r.http_failures = q.http_failures;
  r.quic_failures = q.quic_failures;
  r.rcodes = q.rcodes;
  r.latency = q.latency;
  r.send_lag = q.send_lag;
  r.in_flight_max = q.in_flight_max;
  r.edns.keepalive_answers = q.keepalive_answers;
  if (q.keepalive_answers > 0) {
    r.edns.keepalive_min_seconds = q.keepalive_min / 10.0;
    r.edns.keepalive_max_seconds = q.keepalive_max / 10.0;
  }
  r.edns.padded_answers = q.padded_answers;
  r.edns.padded_sizes = q.padded_sizes;
  r.client_subnet.echoed = q.client_subnet_echoed;
  for (unsigned scope = 0; scope < q.client_subnet_scopes.size(); ++scope) {
    if (q.client_subnet_scopes[scope] > 0) {
      r.client_subnet.scope_prefixes[scope] = q.client_subnet_scopes[scope];
    }
  }
  const connection_counters& c = total.connections;
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
  r.generator.reads_delayed = total.generator.reads_delayed;
  r.early_data = total.early_data;
  const quic_counters& u = total.quic;
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
void fill_timeline(run_result& result, const std::vector<std::unique_ptr<worker>>& workers,
                   const run_plan& plan, double seconds_until_end) {
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
      add_worker_row(result.timeline[row.index], latency[row.index], row);
    }
  }
  for (std::size_t k = 0; k < rows; ++k) finish_row(result.timeline[k], latency[k]);
}

void add_worker_row(timeline_row& t, latency_histogram& latency, const worker::row& row) {
  t.sent += row.sent;
  t.answered += row.answered;
  t.lost += row.lost;
  t.failed += row.failed;
  t.not_sent += row.not_sent;
  t.connections_open += row.connections_open;
  t.connections_opened += row.connections_opened;
  t.handshakes += row.handshakes;
  if (row.latency.empty()) return;
  latency_histogram h;
  for (const auto& [lowest, n] : row.latency) h.restore(lowest, n);
  h.restore_stats(row.latency_min, row.latency_max, row.latency_sum);
  latency.merge(h);
}

void finish_row(timeline_row& t, const latency_histogram& latency) {
  if (t.duration_seconds > 0) t.qps = static_cast<double>(t.answered) / t.duration_seconds;
  t.p50_ms = static_cast<double>(latency.percentile(50)) / 1e6;
  t.p99_ms = static_cast<double>(latency.percentile(99)) / 1e6;
}

void add_warning(run_result& r, const load_spec& spec, std::string_view marked) {
  r.warnings.push_back(naming_settings(marked, spec.output.setting_name));
}

// Persistent connections in a closed loop are meant to be open before the window: when some
// were set up inside it (not replacing ones the server closed), their set-up is in the
// figures. Under mpirun, the ranks' connection storms then overlap the window.
void add_warmup_warning(run_result& r, const load_spec& spec) {
  if (spec.traffic.warmup_seconds <= 0 || r.open_loop() ||
      !traits_of(spec.target.transport).has_connections ||
      spec.connections.queries_per_connection != 0 || spec.connections.idle_seconds > 0 ||
      spec.connections.honour_keepalive) {
    return;
  }
  const auto& c = r.connections;
  const std::uint64_t replaced = c.closed_by_server + c.reset_by_server + c.goaway;
  if (c.opened <= replaced) return;
  const std::string warmup = setting("load_spec::traffic.warmup_seconds");
  add_warning(r, spec,
              fmt::format("{} set up inside the measured window: the warm-up ({} {:g} s) ended "
                          "before every client's connection was open, so set-up costs are in the "
                          "figures; give a longer {}",
                          counted(c.opened - replaced, "connection") +
                              (c.opened - replaced == 1 ? " was" : " were"),
                          warmup, spec.traffic.warmup_seconds, warmup));
}

void add_case_warning(run_result& r, const load_spec& spec) {
  if (r.case_not_echoed == 0) return;
  const std::string outstanding = setting("load_spec::traffic.outstanding");
  add_warning(
      r, spec,
      fmt::format("the server did not echo the letter case of the question: {} of {} answers came "
                  "back in another case than sent and were counted mismatched, not answered. With "
                  "fewer distinct questions in the query list than {} {}, a client tells its "
                  "queries of one question apart by the letter case of the name (DNS 0x20, RFC "
                  "4343), which servers echo; this one does not (or it answered with other "
                  "queries' ids). Give a query list with at least {} distinct questions, or a "
                  "lower {}",
                  r.case_not_echoed, r.case_not_echoed + r.responses_received, outstanding,
                  r.outstanding, r.outstanding, outstanding));
}

void add_distinct_sources_warning(run_result& r, const load_spec& spec) {
  const std::uint64_t wanted = spec.connections.distinct_sources;
  if (wanted <= spec.traffic.clients || !traits_of(r.transport).over_tcp) return;
  // Each connection carries one address: fewer connections, fewer addresses seen.
  const std::uint64_t made = r.connections.opened + r.connections.failed;
  if (made >= wanted) return;
  std::uint64_t& told = r.proxy_protocol.empty() ? r.source_addresses : r.proxy_addresses;
  told = std::min(told, made);
  add_warning(
      r, spec,
      fmt::format("{} {}: the server saw at most {} of them: each connection carries "
                  "one client address, and the run made {}; give {} a value that turns "
                  "the connections over (at least {} connections in the run)",
                  setting("load_spec::connections.distinct_sources"), wanted, with_commas(made),
                  counted(made, "connection"),
                  setting("load_spec::connections.queries_per_connection"), with_commas(wanted)));
}

void add_proxy_warning(run_result& r, const load_spec& spec) {
  constexpr unsigned rcode_refused = 5;
  const std::uint64_t refused_connections = r.connections.proxy_refused;
  const std::uint64_t refused_answers = r.rcodes[rcode_refused];
  if (r.proxy_protocol.empty() || (r.queries_sent == 0 && refused_connections == 0)) return;
  if (r.responses_received > 0 && refused_connections == 0 &&
      refused_answers * 2 <= r.responses_received) {
    return;
  }
  std::string what = r.responses_received == 0 ? std::string("no query was answered")
                                               : fmt::format("{} of {} answers were REFUSED",
                                                             refused_answers, r.responses_received);
  if (refused_connections > 0) {
    what = fmt::format("{}the server ended {} after its PROXY header, before any answer",
                       r.responses_received == 0 ? "no query was answered and " : "",
                       counted(refused_connections, "connection"));
  }
  add_warning(r, spec,
              fmt::format("{}: the queries carried PROXY protocol headers ({} {}), which a server "
                          "drops, closes or refuses unless it trusts headers from this machine "
                          "(dnsdist: setProxyProtocolACL; unbound: proxy-protocol-port; Knot DNS: "
                          "proxy-allowlist; Knot Resolver: net.proxy_allowed; PowerDNS "
                          "Recursor: proxy-protocol-from), and whose client "
                          "addresses ({}) its own ACLs then judge{}",
                          what, setting("load_spec::connections.proxy.version"), r.proxy_protocol,
                          setting("load_spec::connections.proxy.sources"),
                          traits_of(r.transport).has_tls && !spec.connections.proxy.inside_tls
                              ? fmt::format("; over TLS, unbound and dnsdist read the header "
                                            "inside the TLS session ({})",
                                            setting("load_spec::connections.proxy.inside_tls"))
                              : ""));
}

void add_open_loop_warnings(run_result& r, const load_spec& spec) {
  if (!r.open_loop()) return;
  const std::string outstanding = setting("load_spec::traffic.outstanding");
  const std::string clients = setting("load_spec::traffic.clients");
  const std::string threads = setting("load_spec::generator.threads");
  if (r.not_sent_outstanding > 0) {
    add_warning(r, spec,
                fmt::format("the generator fell behind its schedule: {} scheduled queries were "
                            "not sent because their client already had {} {} queries in flight "
                            "or waiting (the server answers slower than {} asks, or raise {} or "
                            "{})",
                            r.not_sent_outstanding, outstanding, r.outstanding,
                            setting("load_spec::traffic.rate"), outstanding, clients));
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
    add_warning(
        r, spec,
        fmt::format("the generator sent late: 99 % of queries left within {:.2f} ms of their "
                    "scheduled time (latency includes this; {})",
                    static_cast<double>(r.send_lag.percentile(99)) / 1e6,
                    reconnects
                        ? fmt::format("queries that open a new connection ({}, {}) wait for "
                                      "its set-up, or the generator is short of CPU ({})",
                                      setting("load_spec::connections.queries_per_connection"),
                                      setting("load_spec::connections.idle_seconds"), threads)
                        : fmt::format("use more {} or fewer {} per thread", threads, clients)));
  }
}

std::uint64_t add_workers(run_result& result, const std::vector<std::unique_ptr<worker>>& workers,
                          const run_plan& plan, const load_spec& spec, const run_ends& ends) {
  counters total;
  std::uint64_t last_answer = 0;
  for (const auto& w : workers) {
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
      plan.transport->certificate_checks();
  result.interrupted = ends.stop_ns != 0;
  if (rusage usage{}; getrusage(RUSAGE_SELF, &usage) == 0) {
    result.client_rss_bytes = static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;
  }
  // The measured window runs from the end of the warm-up to the end of sending (or the
  // interruption), stretched to the last counted answer so that answers to queries sent in
  // the window count against the time they took. In count mode it ends with the last answer.
  const std::uint64_t sending_end =
      std::min(result.interrupted ? ends.stop_ns : ends.end_ns, plan.send_end_ns);
  std::uint64_t window_end = result.interrupted ? ends.stop_ns : sending_end;
  if (spec.traffic.count != 0 && last_answer != 0 && !result.interrupted) window_end = last_answer;
  window_end = std::max(window_end, last_answer);
  result.elapsed_seconds = window_end > plan.measure_start_ns
                               ? static_cast<double>(window_end - plan.measure_start_ns) / 1e9
                               : 0;
  result.qps = result.elapsed_seconds > 0
                   ? static_cast<double>(result.responses_received) / result.elapsed_seconds
                   : 0;
  // The workers sum open connections over the window up to the end of sending.
  if (sending_end > plan.measure_start_ns) {
    result.connections.concurrent_mean = static_cast<double>(total.connections.open_ns) /
                                         static_cast<double>(sending_end - plan.measure_start_ns);
  }
  if (plan.connections_gauge != nullptr) {
    result.connections.concurrent_max = plan.connections_gauge->max.load();
  }
  return window_end;
}

}  // namespace detail

}  // namespace dnstransport
