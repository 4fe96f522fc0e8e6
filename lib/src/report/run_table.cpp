// The table printed after a run, one section per concern: what was run, where the queries
// went, throughput and the client's cost, the server's usage, connections, EDNS, 0-RTT,
// QUIC, errors, ranks. Each section prints only what applies to the run.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <string>
#include <string_view>

#include <dnstransport/error.hpp>
#include <dnstransport/message.hpp>
#include <dnstransport/report.hpp>
#include <dnstransport/text.hpp>

namespace dnstransport {

namespace {

// The table being written: a label column, then the value.
struct table_writer {
  std::string out;
  void line(std::string_view label, const std::string& value) {
    out += fmt::format("  {:<24}{}\n", label, value);
  }
  void note(std::string_view text) { out += fmt::format("  {}\n", text); }
};

std::string share(std::uint64_t part, std::uint64_t whole) {
  if (whole == 0) return "";
  return fmt::format("  ({:.2f} %)",
                     100.0 * static_cast<double>(part) / static_cast<double>(whole));
}

std::string rounded(double value) {
  return with_commas(static_cast<std::uint64_t>(value + 0.5));
}

std::string percentiles(const latency_histogram& h) {
  if (h.count() == 0) return "none";
  auto at = [&h](double p) { return format_duration(static_cast<double>(h.percentile(p))); };
  return fmt::format("min {}  mean {}  p50 {}  p90 {}  p99 {}  p99.9 {}  max {}",
                     format_duration(static_cast<double>(h.min())), format_duration(h.mean()),
                     at(50), at(90), at(99), at(99.9),
                     format_duration(static_cast<double>(h.max())));
}

// "cause 12, other 3": a map of causes to counts, each cause in words from `name`.
template <typename Map, typename Name>
std::string causes_text(const Map& causes, Name name) {
  std::string out;
  for (const auto& [cause, n] : causes) {
    if (!out.empty()) out += ", ";
    out += fmt::format("{} {}", name(cause), with_commas(n));
  }
  return out;
}
template <typename Map>
std::string causes_text(const Map& causes) {
  return causes_text(causes, [](const auto& cause) { return cause; });
}

// "status_404" -> "HTTP 404"; the other causes in words.
std::string http_failure_text(std::string_view cause) {
  if (cause.starts_with("status_")) return fmt::format("HTTP {}", cause.substr(7));
  if (cause == "content_type") return "wrong content type";
  if (cause == "empty_body") return "empty body";
  if (cause == "stream_reset") return "stream reset by server (RST_STREAM)";
  if (cause == "stream_error") return "stream closed before the response ended";
  if (cause == "content_length") return "body length is not its content-length";
  if (cause == "no_status") return "no valid :status";
  if (cause == "body_too_large") return "body over 65535 octets";
  if (cause == "refused_stream") return "refused (REFUSED_STREAM) on every try";
  if (cause == "goaway_unprocessed") return "left unprocessed by GOAWAY on every try";
  return std::string(cause);
}

bool has_connections(const run_result& r) {
  return traits_of(r.transport).has_connections;
}

// "udp to 127.0.0.1:53, 4 clients x 100 outstanding, ..., 1.00 s"
void what_ran(const run_result& r, table_writer& t) {
  std::string transport(transport_name(r.transport));
  if (!r.tls_backend.empty()) transport += " (" + r.tls_backend + ")";
  const std::string per_connection =
      !has_connections(r) ? ""
      : r.queries_per_connection == 0
          ? ", unlimited queries per connection"
          : fmt::format(", {} per connection",
                        counted(r.queries_per_connection, "query", "queries"));
  if (!r.label.empty()) t.out += r.label + ": ";
  t.out += fmt::format("{} to {}:{}, {} x {} outstanding{}, {}, {:.2f} s{}\n", transport, r.server,
                       r.port, counted(r.clients, "client"), r.outstanding, per_connection,
                       counted(r.threads, "thread"), r.elapsed_seconds,
                       r.interrupted ? " (interrupted)" : "");
}

void capture(const run_result& r, table_writer& t) {
  if (!r.capture) return;
  const capture_summary& c = *r.capture;
  t.line("capture",
         fmt::format("{}: {} from {} over {:.3f} s, replayed {}", r.query_origin,
                     counted(c.counts.queries, "query", "queries"), counted(c.clients, "client"),
                     c.span_seconds, replay_mode_name(c.replay)));
  const auto& n = c.counts;
  t.line(
      "capture skipped",
      fmt::format("{} packets: {} responses, {} other DNS, {} not DNS, {} TCP without data, "
                  "{} fragments, {} malformed, {} incomplete TCP messages",
                  with_commas(n.packets), with_commas(n.responses), with_commas(n.other_dns),
                  with_commas(n.not_dns), with_commas(n.tcp_without_data), with_commas(n.fragments),
                  with_commas(n.malformed), with_commas(n.tcp_incomplete)));
}

void schedule(const run_result& r, table_writer& t) {
  const std::string per_client =
      r.client_rate > 0 ? fmt::format(" ({:g} per client)", r.client_rate) : "";
  if (r.arrivals == arrival_mode::replay) {
    t.line("schedule",
           fmt::format("the capture's timing{} (open loop: latency from each query's time "
                       "in the capture)",
                       r.capture && r.capture->speed != 1
                           ? fmt::format(", {:g} times as fast", r.capture->speed)
                           : std::string()));
  } else if (r.open_loop()) {
    t.line("schedule", fmt::format("{} queries/s{}, {} arrivals (open loop: latency from each "
                                   "query's scheduled time)",
                                   rounded(r.rate), per_client, arrival_mode_name(r.arrivals)));
  } else if (r.rate > 0) {
    t.line("schedule", fmt::format("at most {} queries/s{}, closed loop (sent when a slot is "
                                   "free; latency from the send)",
                                   rounded(r.rate), per_client));
  }
  if (!r.open_loop()) return;
  const std::uint64_t scheduled = r.queries_scheduled();
  t.line("queries scheduled", with_commas(scheduled));
  if (r.not_sent_outstanding) {
    t.line("not sent: outstanding", with_commas(r.not_sent_outstanding) +
                                        share(r.not_sent_outstanding, scheduled) +
                                        ": the generator fell behind its schedule");
  }
  if (r.not_sent_timeout) {
    t.line("not sent: timeout",
           with_commas(r.not_sent_timeout) + share(r.not_sent_timeout, scheduled));
  }
}

// Where every query sent went: answered, lost, or a named failure that is not an answer.
void outcomes(const run_result& r, table_writer& t) {
  const std::uint64_t sent = r.queries_sent;
  t.line("queries sent", with_commas(sent));
  t.line("answered", with_commas(r.responses_received) + share(r.responses_received, sent));
  if (r.open_loop() && r.queries_scheduled() != sent) {
    t.line("answered of scheduled", fmt::format("{:.2f} %", r.answered_percent()));
  }
  t.line("lost (timed out)", with_commas(r.lost) + share(r.lost, sent));
  if (has_connections(r))
    t.line("lost on close", with_commas(r.lost_on_close) + share(r.lost_on_close, sent));
  if (const std::uint64_t tc = r.truncated + r.tc_retried; tc != 0) {
    t.line("truncated (TC=1)",
           with_commas(tc) + share(tc, sent) +
               (r.tc_retried ? ""
                             : fmt::format(", not answers ({} retries them)",
                                           setting("load_spec::traffic.tc_retry_tcp"))));
  }
  if (r.tc_retried) {
    t.line("retried over TCP", fmt::format("{}, {} answered", with_commas(r.tc_retried),
                                           with_commas(r.tc_retry_answered)));
  }
  if (r.oversized) {
    t.line("oversized (UDP)", with_commas(r.oversized) + share(r.oversized, sent) +
                                  ", larger than the query allowed: not answers");
  }
  if (r.http_failed) {
    t.line("HTTP failures", with_commas(r.http_failed) + share(r.http_failed, sent) + ": " +
                                causes_text(r.http_failures, http_failure_text) + "; not answers");
  }
  if (r.quic_failed) {
    t.line("DoQ stream failures", with_commas(r.quic_failed) + share(r.quic_failed, sent) + ": " +
                                      causes_text(r.quic_failures) + "; not answers");
  }
  for (const auto& d : query_count_descriptions) {
    if (!d.label.empty() && r.*d.member != 0)
      t.line(d.label, with_commas(r.*d.member) + std::string(d.note));
  }
  if (r.late || r.unexpected || r.duplicates) {
    t.line("stray packets", fmt::format("{} late, {} duplicate, {} unexpected", with_commas(r.late),
                                        with_commas(r.duplicates), with_commas(r.unexpected)));
  }
  std::string rcodes;
  for (unsigned i = 0; i < r.rcodes.size(); ++i) {
    if (r.rcodes[i] == 0) continue;
    if (!rcodes.empty()) rcodes += ", ";
    rcodes += fmt::format("{} {}", rcode_name(i), with_commas(r.rcodes[i]));
  }
  if (!rcodes.empty()) t.line("response codes", rcodes);
}

// Which receiving mode ran, and how often it delayed a read.
std::string coalescing_text(const run_result& r) {
  if (r.coalesce_us == 0) {
    return r.open_loop() ? "; coalescing off"
                         : "; coalescing off (a closed loop reads each answer as it comes)";
  }
  if (r.generator.reads_delayed == 0) {
    return "; coalescing on, no read delayed (too few queries in flight or answers too fast)";
  }
  return fmt::format(
      "; {:.2f} reads per answer delayed by coalescing (up to {} us and 1/20 "
      "of the latency)",
      static_cast<double>(r.generator.reads_delayed) / static_cast<double>(r.responses_received),
      r.coalesce_us);
}

// Throughput, latency and what the generator cost.
void throughput_and_client(const run_result& r, table_writer& t) {
  t.line("throughput", fmt::format("{} queries/s", rounded(r.qps)));
  t.line("latency", percentiles(r.latency));
  if (r.open_loop()) t.line("send lag", percentiles(r.send_lag));
  const double per_million =
      r.responses_received ? r.client_cpu_seconds * 1e6 / static_cast<double>(r.responses_received)
                           : 0;
  t.line("client CPU",
         fmt::format("{:.2f} s, {:.2f} s per million answers, busiest thread {:.0f} %",
                     r.client_cpu_seconds, per_million, r.max_thread_cpu_share * 100));
  if (r.client_rss_bytes != 0) {
    const double mib = static_cast<double>(r.client_rss_bytes) / (1024.0 * 1024.0);
    const std::uint64_t open = r.connections.concurrent_max;
    const std::string per_connection = open >= 1000
                                           ? fmt::format(", {:.1f} KiB per connection open at once",
                                                         static_cast<double>(r.client_rss_bytes) /
                                                             1024.0 / static_cast<double>(open))
                                           : "";
    t.line("client memory",
           fmt::format("peak RSS {:.1f} MiB{}{}", mib,
                       r.ranks.empty() ? "" : " (sum over the ranks)", per_connection));
  }
  const generator_stats& g = r.generator;
  if (r.responses_received > 0 && (g.wakeups > 0 || g.syscalls > 0)) {
    const double would_block =
        g.syscalls > 0
            ? 100.0 * static_cast<double>(g.syscalls_would_block) / static_cast<double>(g.syscalls)
            : 0;
    t.line("generator", fmt::format("{:.2f} wake-ups, {:.2f} sleeps and {:.2f} system calls per "
                                    "answer ({:.0f} % of the calls returned EAGAIN){}",
                                    r.wakeups_per_answer(), r.sleeps_per_answer(),
                                    r.syscalls_per_answer(), would_block, coalescing_text(r)));
  }
  if (r.max_thread_cpu_share > 0.9) {
    t.note(fmt::format(
        "note: a worker thread was near 100 % CPU: the figure may measure this client, not "
        "the server (add {} or CPUs)",
        setting("load_spec::generator.threads")));
  }
}

void server_usage(const run_result& r, table_writer& t) {
  const auto& sv = r.server_usage;
  if (!sv.monitored()) return;
  t.line("server CPU",
         !sv.cpu_measured
             ? std::string("not measured: fewer than two readings of the monitor command in "
                           "the window")
             : fmt::format("{:.2f} s (user {:.2f}, system {:.2f}), {:.2f} ms per 1,000 answers, "
                           "{:.0f} % of a CPU",
                           sv.cpu_seconds(), sv.cpu_user_seconds, sv.cpu_system_seconds,
                           sv.cpu_per_1k_answers * 1e3, sv.cpu_share * 100));
  std::vector<std::string> watched;
  if (!sv.pids.empty()) watched.push_back(fmt::format("pid {}", fmt::join(sv.pids, ",")));
  if (!sv.cgroups.empty()) watched.push_back(fmt::format("cgroup {}", fmt::join(sv.cgroups, ",")));
  if (!sv.command.empty()) {
    watched.push_back(fmt::format("pid {} by `{}`", fmt::join(sv.command_pids, ","), sv.command));
  }
  std::string memory = fmt::format("{}: {} max {:.1f} MiB, {} descriptors, {} threads",
                                   fmt::join(watched, ", "), sv.cgroups.empty() ? "RSS" : "memory",
                                   static_cast<double>(sv.rss_max_bytes) / (1024.0 * 1024.0),
                                   sv.fds_max, sv.threads_max);
  if (traits_of(r.transport).over_tcp) {
    memory += fmt::format(", at most {} TCP connections on port {}",
                          with_commas(sv.connections_max), r.port);
  }
  t.line("server", memory);
}

void handshakes(const run_result& r, table_writer& t) {
  const auto& c = r.connections;
  t.line("handshakes",
         fmt::format("{} full, {} resumed; {:.3f} per query", with_commas(r.handshakes_full),
                     with_commas(r.handshakes_resumed), r.handshakes_per_query()));
  t.line("handshake latency", percentiles(r.handshake_latency));
  if (c.certificates_verified + c.certificates_reused > 0) {
    t.line("certificate chains",
           fmt::format("{} verified in full, {} handshakes reused a verdict (the same "
                       "chain, verified before)",
                       with_commas(c.certificates_verified), with_commas(c.certificates_reused)));
  }
}

// Who the server sees as its clients: the source addresses they bound (when not the
// kernel's choice), the addresses PROXY headers claimed, the subnets EDNS Client Subnet
// carried and what the answers echoed of them.
void client_addresses(const run_result& r, table_writer& t) {
  if (r.source_addresses != 0) {
    const char* how = r.sources_per_client              ? "one per client"
                      : traits_of(r.transport).over_tcp ? "taken in turn by connection"
                                                        : "taken in turn by client";
    t.line("source addresses", fmt::format("{}, {}", with_commas(r.source_addresses), how));
  }
  if (!r.proxy_protocol.empty()) {
    t.line("PROXY protocol",
           fmt::format("{}, headers carrying {} client {}{}", r.proxy_protocol,
                       with_commas(r.proxy_addresses),
                       r.proxy_addresses == 1 ? "address" : "addresses",
                       r.proxy_addresses > r.clients ? ", each client its share in turn" : ""));
  }
  const client_subnet_stats& c = r.client_subnet;
  if (!c.requested()) return;
  t.line("client subnet (ECS)", fmt::format("{} of /{} from {}, {}", counted(c.subnets, "subnet"),
                                            c.source_prefix, c.range, c.mode));
  const std::string scopes =
      causes_text(c.scope_prefixes, [](unsigned scope) { return fmt::format("/{}", scope); });
  t.line("client subnet echoed",
         fmt::format("{} answers{}{}", with_commas(c.echoed), share(c.echoed, r.responses_received),
                     scopes.empty() ? "" : ", scopes " + scopes));
}

void connections(const run_result& r, table_writer& t) {
  if (!has_connections(r)) return;
  const auto& c = r.connections;
  const std::string idle =
      r.idle_seconds > 0 || c.closed_idle > 0
          ? fmt::format(", {} closed idle ({} {:g} s)", with_commas(c.closed_idle),
                        setting("load_spec::connections.idle_seconds"), r.idle_seconds)
          : "";
  t.line("connections",
         fmt::format("{} opened, {} closed by us{}, {} closed by server, {} reset, {} failed",
                     with_commas(c.opened), with_commas(c.closed_by_client), idle,
                     with_commas(c.closed_by_server), with_commas(c.reset_by_server),
                     with_commas(c.failed)));
  t.line("connection rate",
         fmt::format("{:.1f} opened/s; open at once: {:.1f} mean, {} max",
                     r.connections_per_second(), c.concurrent_mean, with_commas(c.concurrent_max)));
  t.line("answers per connection", fmt::format("{:.1f}", r.queries_per_connection_achieved()));
  if (r.out_of_order) t.line("out of order", with_commas(r.out_of_order));
  // QUIC has no connect of its own: its set-up is the handshake.
  if (traits_of(r.transport).over_tcp) t.line("connect latency", percentiles(r.connect_latency));
  if (traits_of(r.transport).has_tls) handshakes(r, t);
  t.line("first query + set-up", percentiles(r.first_query_latency));
  if (c.fastopen_data_in_syn) t.line("fast open", with_commas(c.fastopen_data_in_syn));
  if (c.goaway) t.line("GOAWAY from server", counted(c.goaway, "connection"));
  if (c.closed_idle_keepalive) {
    t.line("closed idle", counted(c.closed_idle_keepalive, "connection") +
                              ", after the server's keepalive timeout");
  }
  for (const auto& d : connection_count_descriptions) {
    if (!d.label.empty() && c.*d.member != 0)
      t.line(d.label, with_commas(c.*d.member) + std::string(d.note));
  }
}

void edns(const run_result& r, table_writer& t) {
  const edns_stats& e = r.edns;
  if (e.keepalive_sent) {
    t.line("keepalive (RFC 7828)",
           e.keepalive_answers == 0
               ? std::string("no answer advertised an idle timeout")
               : fmt::format("{} answers{}, timeouts {:.1f} to {:.1f} s",
                             with_commas(e.keepalive_answers),
                             share(e.keepalive_answers, r.responses_received),
                             e.keepalive_min_seconds, e.keepalive_max_seconds));
  }
  if (e.padding_block != 0) {
    const std::string sizes =
        causes_text(e.padded_sizes, [](auto size) { return fmt::format("{} octets", size); });
    t.line("padded answers",
           fmt::format("{}{} (queries padded to blocks of {}){}", with_commas(e.padded_answers),
                       share(e.padded_answers, r.responses_received), e.padding_block,
                       sizes.empty() ? "" : ": " + sizes));
  }
}

void early_data(const run_result& r, table_writer& t) {
  const early_data_stats& e = r.early_data;
  if (!e.offered) return;
  t.line("0-RTT",
         fmt::format("{} connections offered, {} accepted, {} refused; {} queries sent "
                     "early, {} sent again after a refusal",
                     with_commas(e.offered), with_commas(e.accepted), with_commas(e.rejected),
                     with_commas(e.queries_in_early_data), with_commas(e.queries_resent)));
}

void quic(const run_result& r, table_writer& t) {
  if (!traits_of(r.transport).over_quic) return;
  const quic_stats& q = r.quic;
  t.line("QUIC packets",
         fmt::format("{} sent, {} received; {} with query data lost, {} probe timeouts",
                     with_commas(q.packets_sent), with_commas(q.packets_received),
                     with_commas(q.stream_packets_lost), with_commas(q.probe_timeouts)));
  if (q.rtt_samples) {
    t.line("QUIC path", fmt::format("smoothed RTT {:.3f} ms (mean), min RTT {:.3f} ms, cwnd {:.0f} "
                                    "bytes (mean), as connections ended",
                                    q.smoothed_rtt_ms, q.min_rtt_ms, q.mean_cwnd_bytes));
  }
  if (!q.closes.empty()) t.line("ended by server", causes_text(q.closes));
  if (q.retries || q.version_negotiation || q.stateless_resets || q.stray_packets) {
    t.line("QUIC events",
           fmt::format("{} Retry, {} Version Negotiation, {} stateless resets, {} stray packets",
                       with_commas(q.retries), with_commas(q.version_negotiation),
                       with_commas(q.stateless_resets), with_commas(q.stray_packets)));
  }
  if (q.streams_exhausted != 0) {
    t.line("out of streams", fmt::format("{} replaced: the server granted no more streams",
                                         counted(q.streams_exhausted, "connection")));
  }
}

void errors(const run_result& r, table_writer& t) {
  const auto& c = r.connections;
  if (c.failures.empty()) return;
  t.line("errors", causes_text(c.failures));
  t.line("first error", c.first_failure);
}

void ranks(const run_result& r, table_writer& t) {
  if (r.ranks.empty()) return;
  t.out += fmt::format("  {} (mpirun); the figures above are their sums:\n",
                       counted(r.ranks.size(), "rank"));
  t.out += fmt::format("    {:>4}  {:<16} {:>8} {:>12} {:>10} {:>10} {:>9} {:>8}\n", "rank", "host",
                       "clients", "answered", "queries/s", "client CPU", "peak RSS", "busiest");
  for (const auto& m : r.ranks) {
    if (!m.reported) {
      t.out += fmt::format("    {:>4}  {:<16} sent no result (failed, hung or killed)\n", m.rank,
                           m.host);
      continue;
    }
    const std::string state = m.interrupted               ? " interrupted"
                              : m.responses_received == 0 ? " FAILED: no answer"
                              : m.client_bound            ? " client-bound"
                                                          : "";
    t.out += fmt::format(
        "    {:>4}  {:<16} {:>8} {:>12} {:>10} {:>9.2f}s {:>5.0f} MiB {:>6.0f} %{}\n", m.rank,
        m.host, with_commas(m.clients), with_commas(m.responses_received), rounded(m.qps),
        m.client_cpu_seconds, static_cast<double>(m.client_rss_bytes) / (1024.0 * 1024.0),
        m.max_thread_cpu_share * 100, state);
  }
}

}  // namespace

std::string format_table(const run_result& r, const setting_namer& name_of) {
  table_writer t;
  what_ran(r, t);
  capture(r, t);
  schedule(r, t);
  outcomes(r, t);
  throughput_and_client(r, t);
  server_usage(r, t);
  client_addresses(r, t);
  connections(r, t);
  edns(r, t);
  early_data(r, t);
  quic(r, t);
  errors(r, t);
  ranks(r, t);
  for (const auto& w : r.warnings) t.out += fmt::format("  warning: {}\n", w);
  return naming_settings(t.out, name_of);
}

}  // namespace dnstransport
