#include <dnstransport/report.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <dnstransport/error.hpp>
#include <dnstransport/message.hpp>

#include "report/json_io.hpp"

namespace dnstransport {

std::string to_json(const run_result& result) {
  return detail::pretty(detail::run_result_to_json(result));
}

run_result run_result_from_json(std::string_view text, std::string_view source_name) {
  boost::system::error_code ec;
  const auto value = boost::json::parse(text, ec);
  if (ec) throw setup_error(fmt::format("{}: not valid JSON: {}", source_name, ec.message()));
  try {
    return detail::run_result_from_json_value(value);
  } catch (const std::exception& e) {
    throw setup_error(fmt::format("{}: {}", source_name, e.what()));
  }
}

std::string format_duration(double ns) {
  if (ns < 1e3) return fmt::format("{:.0f} ns", ns);
  if (ns < 1e6) return fmt::format("{:.{}f} us", ns / 1e3, ns < 1e4 ? 2 : 1);
  if (ns < 1e9) return fmt::format("{:.{}f} ms", ns / 1e6, ns < 1e7 ? 2 : 1);
  return fmt::format("{:.2f} s", ns / 1e9);
}

namespace {

std::string with_commas(std::uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i != 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string share(std::uint64_t part, std::uint64_t whole) {
  if (whole == 0) return "";
  return fmt::format("  ({:.2f} %)",
                     100.0 * static_cast<double>(part) / static_cast<double>(whole));
}

std::string percentiles(const latency_histogram& h) {
  if (h.count() == 0) return "none";
  return fmt::format("min {}  mean {}  p50 {}  p90 {}  p99 {}  p99.9 {}  max {}",
                     format_duration(static_cast<double>(h.min())), format_duration(h.mean()),
                     format_duration(static_cast<double>(h.percentile(50))),
                     format_duration(static_cast<double>(h.percentile(90))),
                     format_duration(static_cast<double>(h.percentile(99))),
                     format_duration(static_cast<double>(h.percentile(99.9))),
                     format_duration(static_cast<double>(h.max())));
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
  return std::string(cause);
}

}  // namespace

std::string format_table(const run_result& r) {
  std::string out;
  auto line = [&out](std::string_view label, const std::string& value) {
    out += fmt::format("  {:<24}{}\n", label, value);
  };
  std::string transport(transport_name(r.transport));
  if (!r.tls_backend.empty()) transport += " (" + r.tls_backend + ")";
  const std::string per_connection =
      !traits_of(r.transport).has_connections
          ? ""
          : fmt::format(", {} queries per connection",
                        r.queries_per_connection == 0 ? std::string("unlimited")
                                                      : std::to_string(r.queries_per_connection));
  if (!r.label.empty()) out += r.label + ": ";
  out += fmt::format("{} to {}:{}, {} client{} x {} outstanding{}, {} thread{}, {:.2f} s{}\n",
                     transport, r.server, r.port, r.clients, r.clients == 1 ? "" : "s",
                     r.outstanding, per_connection, r.threads, r.threads == 1 ? "" : "s",
                     r.elapsed_seconds, r.interrupted ? " (interrupted)" : "");
  const std::string per_client =
      r.client_rate > 0 ? fmt::format(" ({:g} per client)", r.client_rate) : "";
  if (r.capture) {
    const capture_summary& c = *r.capture;
    line("capture",
         fmt::format("{}: {} quer{} from {} client{} over {:.3f} s, replayed {}", r.query_origin,
                     with_commas(c.counts.queries), c.counts.queries == 1 ? "y" : "ies",
                     with_commas(c.clients), c.clients == 1 ? "" : "s", c.span_seconds,
                     replay_mode_name(c.replay)));
    line("capture skipped",
         fmt::format("{} packets: {} responses, {} other DNS, {} not DNS, {} TCP without data, "
                     "{} fragments, {} malformed, {} incomplete TCP messages",
                     with_commas(c.counts.packets), with_commas(c.counts.responses),
                     with_commas(c.counts.other_dns), with_commas(c.counts.not_dns),
                     with_commas(c.counts.tcp_without_data), with_commas(c.counts.fragments),
                     with_commas(c.counts.malformed), with_commas(c.counts.tcp_incomplete)));
  }
  if (r.arrivals == arrival_mode::replay) {
    line("schedule",
         fmt::format("the capture's timing{} (open loop: latency from each query's time "
                     "in the capture)",
                     r.capture && r.capture->speed != 1
                         ? fmt::format(", {:g} times as fast", r.capture->speed)
                         : std::string()));
  } else if (r.open_loop()) {
    line("schedule", fmt::format("{} queries/s{}, {} arrivals (open loop: latency from each "
                                 "query's scheduled time)",
                                 with_commas(static_cast<std::uint64_t>(r.rate + 0.5)), per_client,
                                 arrival_mode_name(r.arrivals)));
  }
  if (r.open_loop()) {
    line("queries scheduled", with_commas(r.queries_scheduled()));
    if (r.not_sent_outstanding) {
      line("not sent: outstanding", with_commas(r.not_sent_outstanding) +
                                        share(r.not_sent_outstanding, r.queries_scheduled()) +
                                        ": the generator fell behind its schedule");
    }
    if (r.not_sent_timeout) {
      line("not sent: timeout",
           with_commas(r.not_sent_timeout) + share(r.not_sent_timeout, r.queries_scheduled()));
    }
  } else if (r.rate > 0) {
    line("schedule",
         fmt::format("at most {} queries/s{}, closed loop (sent when a slot is "
                     "free; latency from the send)",
                     with_commas(static_cast<std::uint64_t>(r.rate + 0.5)), per_client));
  }
  line("queries sent", with_commas(r.queries_sent));
  line("answered", with_commas(r.responses_received) + share(r.responses_received, r.queries_sent));
  if (r.open_loop() && r.queries_scheduled() != r.queries_sent) {
    line("answered of scheduled", fmt::format("{:.2f} %", r.answered_percent()));
  }
  line("lost (timed out)", with_commas(r.lost) + share(r.lost, r.queries_sent));
  if (traits_of(r.transport).has_connections) {
    line("lost on close", with_commas(r.lost_on_close) + share(r.lost_on_close, r.queries_sent));
  }
  if (r.truncated || r.tc_retried) {
    line("truncated (TC=1)",
         with_commas(r.truncated + r.tc_retried) +
             share(r.truncated + r.tc_retried, r.queries_sent) +
             (r.tc_retried ? "" : ", not answers (--tc-retry tcp retries them)"));
  }
  if (r.tc_retried) {
    line("retried over TCP", fmt::format("{}, {} answered", with_commas(r.tc_retried),
                                         with_commas(r.tc_retry_answered)));
  }
  if (r.oversized) {
    line("oversized (UDP)", with_commas(r.oversized) + share(r.oversized, r.queries_sent) +
                                ", larger than the query allowed: not answers");
  }
  if (r.http_failed) {
    std::string causes;
    for (const auto& [cause, n] : r.http_failures) {
      if (!causes.empty()) causes += ", ";
      causes += fmt::format("{} {}", http_failure_text(cause), with_commas(n));
    }
    line("HTTP failures", with_commas(r.http_failed) + share(r.http_failed, r.queries_sent) + ": " +
                              causes + "; not answers");
  }
  if (r.quic_failed) {
    std::string causes;
    for (const auto& [cause, n] : r.quic_failures) {
      if (!causes.empty()) causes += ", ";
      causes += fmt::format("{} {}", cause, with_commas(n));
    }
    line("DoQ stream failures", with_commas(r.quic_failed) + share(r.quic_failed, r.queries_sent) +
                                    ": " + causes + "; not answers");
  }
  for (const auto& d : query_count_descriptions) {
    if (!d.label.empty() && r.*d.member != 0) {
      line(d.label, with_commas(r.*d.member) + std::string(d.note));
    }
  }
  if (r.late || r.unexpected || r.duplicates) {
    line("stray packets", fmt::format("{} late, {} duplicate, {} unexpected", with_commas(r.late),
                                      with_commas(r.duplicates), with_commas(r.unexpected)));
  }
  std::string rcodes;
  for (unsigned i = 0; i < r.rcodes.size(); ++i) {
    if (r.rcodes[i] == 0) continue;
    if (!rcodes.empty()) rcodes += ", ";
    rcodes += fmt::format("{} {}", rcode_name(i), with_commas(r.rcodes[i]));
  }
  if (!rcodes.empty()) line("response codes", rcodes);
  line("throughput",
       fmt::format("{} queries/s", with_commas(static_cast<std::uint64_t>(r.qps + 0.5))));
  line("latency", percentiles(r.latency));
  if (r.open_loop()) line("send lag", percentiles(r.send_lag));
  const double per_million =
      r.responses_received ? r.client_cpu_seconds * 1e6 / static_cast<double>(r.responses_received)
                           : 0;
  line("client CPU", fmt::format("{:.2f} s, {:.2f} s per million answers, busiest thread {:.0f} %",
                                 r.client_cpu_seconds, per_million, r.max_thread_cpu_share * 100));
  if (r.client_rss_bytes != 0) {
    const double mib = static_cast<double>(r.client_rss_bytes) / (1024.0 * 1024.0);
    const std::uint64_t open = r.connections.concurrent_max;
    line("client memory",
         fmt::format("peak RSS {:.1f} MiB{}{}", mib, r.ranks.empty() ? "" : " (sum over the ranks)",
                     open >= 1000 ? fmt::format(", {:.1f} KiB per connection open at once",
                                                static_cast<double>(r.client_rss_bytes) / 1024.0 /
                                                    static_cast<double>(open))
                                  : ""));
  }
  if (r.responses_received > 0 && (r.generator.wakeups > 0 || r.generator.syscalls > 0)) {
    line("generator",
         fmt::format("{:.2f} wake-ups, {:.2f} sleeps and {:.2f} system calls per answer ({:.0f} "
                     "% of the calls returned EAGAIN){}",
                     r.wakeups_per_answer(), r.sleeps_per_answer(), r.syscalls_per_answer(),
                     r.generator.syscalls > 0
                         ? 100.0 * static_cast<double>(r.generator.syscalls_would_block) /
                               static_cast<double>(r.generator.syscalls)
                         : 0,
                     r.coalesce_us == 0 ? ""
                     : !traits_of(r.transport).has_connections
                         ? fmt::format("; reads coalesced up to {} us, answers timed by the kernel",
                                       r.coalesce_us)
                         : fmt::format("; reads coalesced up to {} us and 1/20 of the latency",
                                       r.coalesce_us)));
  }
  if (r.max_thread_cpu_share > 0.9) {
    out +=
        "  note: a worker thread was near 100 % CPU: the figure may measure this client, not "
        "the server (add --threads or CPUs)\n";
  }
  if (r.server_usage.monitored()) {
    const auto& sv = r.server_usage;
    line("server CPU",
         !sv.cpu_measured
             ? std::string("not measured: fewer than two readings of the monitor command in "
                           "the window")
             : fmt::format("{:.2f} s (user {:.2f}, system {:.2f}), {:.2f} ms per 1,000 answers, "
                           "{:.0f} % of a CPU",
                           sv.cpu_seconds(), sv.cpu_user_seconds, sv.cpu_system_seconds,
                           sv.cpu_per_1k_answers * 1e3, sv.cpu_share * 100));
    std::vector<std::string> watched;
    if (!sv.pids.empty()) watched.push_back(fmt::format("pid {}", fmt::join(sv.pids, ",")));
    if (!sv.cgroups.empty()) {
      watched.push_back(fmt::format("cgroup {}", fmt::join(sv.cgroups, ",")));
    }
    if (!sv.command.empty()) {
      watched.push_back(fmt::format("pid {} by `{}`", fmt::join(sv.command_pids, ","), sv.command));
    }
    const std::string who = fmt::format("{}", fmt::join(watched, ", "));
    std::string memory = fmt::format("{}: {} max {:.1f} MiB, {} descriptors, {} threads", who,
                                     sv.cgroups.empty() ? "RSS" : "memory",
                                     static_cast<double>(sv.rss_max_bytes) / (1024.0 * 1024.0),
                                     sv.fds_max, sv.threads_max);
    if (traits_of(r.transport).over_tcp) {
      memory += fmt::format(", at most {} TCP connections on port {}",
                            with_commas(sv.connections_max), r.port);
    }
    line("server", memory);
  }
  if (traits_of(r.transport).has_connections) {
    const auto& c = r.connections;
    const std::string idle = r.idle_seconds > 0 || c.closed_idle > 0
                                 ? fmt::format(", {} closed idle (--idle {:g} s)",
                                               with_commas(c.closed_idle), r.idle_seconds)
                                 : "";
    line("connections", fmt::format("{} opened, {} closed by us{}, {} closed by server, {} "
                                    "reset, {} failed",
                                    with_commas(c.opened), with_commas(c.closed_by_client), idle,
                                    with_commas(c.closed_by_server), with_commas(c.reset_by_server),
                                    with_commas(c.failed)));
    line("connection rate",
         fmt::format("{:.1f} opened/s; open at once: {:.1f} mean, {} max",
                     r.connections_per_second(), c.concurrent_mean, with_commas(c.concurrent_max)));
    line("answers per connection", fmt::format("{:.1f}", r.queries_per_connection_achieved()));
    if (r.out_of_order) line("out of order", with_commas(r.out_of_order));
    // QUIC has no connect of its own: its set-up is the handshake.
    if (traits_of(r.transport).over_tcp) line("connect latency", percentiles(r.connect_latency));
    if (traits_of(r.transport).has_tls) {
      line("handshakes",
           fmt::format("{} full, {} resumed; {:.3f} per query", with_commas(r.handshakes_full),
                       with_commas(r.handshakes_resumed), r.handshakes_per_query()));
      line("handshake latency", percentiles(r.handshake_latency));
      if (c.certificates_verified + c.certificates_reused > 0) {
        line("certificate chains",
             fmt::format("{} verified in full, {} handshakes reused a verdict (the same "
                         "chain, verified before)",
                         with_commas(c.certificates_verified), with_commas(c.certificates_reused)));
      }
    }
    line("first query + set-up", percentiles(r.first_query_latency));
    if (c.fastopen_data_in_syn) line("fast open", with_commas(c.fastopen_data_in_syn));
    if (c.goaway) line("GOAWAY from server", with_commas(c.goaway) + " connections");
    if (c.closed_idle_keepalive) {
      line("closed idle", with_commas(c.closed_idle_keepalive) +
                              " connections, after the server's keepalive timeout");
    }
  }
  if (r.edns.keepalive_sent) {
    const edns_stats& e = r.edns;
    line("keepalive (RFC 7828)",
         e.keepalive_answers == 0 ? std::string("no answer advertised an idle timeout")
                                  : fmt::format("{} answers{}, timeouts {:.1f} to {:.1f} s",
                                                with_commas(e.keepalive_answers),
                                                share(e.keepalive_answers, r.responses_received),
                                                e.keepalive_min_seconds, e.keepalive_max_seconds));
  }
  if (r.edns.padding_block != 0) {
    const edns_stats& e = r.edns;
    std::string sizes;
    for (const auto& [size, n] : e.padded_sizes) {
      if (!sizes.empty()) sizes += ", ";
      sizes += fmt::format("{} octets {}", size, with_commas(n));
    }
    line("padded answers",
         fmt::format("{}{} (queries padded to blocks of {}){}", with_commas(e.padded_answers),
                     share(e.padded_answers, r.responses_received), e.padding_block,
                     sizes.empty() ? "" : ": " + sizes));
  }
  if (const early_data_stats& e = r.early_data; e.offered) {
    line("0-RTT",
         fmt::format("{} connections offered, {} accepted, {} refused; {} queries sent "
                     "early, {} sent again after a refusal",
                     with_commas(e.offered), with_commas(e.accepted), with_commas(e.rejected),
                     with_commas(e.queries_in_early_data), with_commas(e.queries_resent)));
  }
  if (traits_of(r.transport).over_quic) {
    const quic_stats& q = r.quic;
    line("QUIC packets",
         fmt::format("{} sent, {} received; {} with query data lost, {} probe "
                     "timeouts",
                     with_commas(q.packets_sent), with_commas(q.packets_received),
                     with_commas(q.stream_packets_lost), with_commas(q.probe_timeouts)));
    if (q.rtt_samples) {
      line("QUIC path", fmt::format("smoothed RTT {:.3f} ms (mean), min RTT {:.3f} ms, cwnd {:.0f} "
                                    "bytes (mean), as connections ended",
                                    q.smoothed_rtt_ms, q.min_rtt_ms, q.mean_cwnd_bytes));
    }
    if (!q.closes.empty()) {
      std::string causes;
      for (const auto& [cause, n] : q.closes) {
        if (!causes.empty()) causes += ", ";
        causes += fmt::format("{} {}", cause, with_commas(n));
      }
      line("ended by server", causes);
    }
    if (q.retries || q.version_negotiation || q.stateless_resets || q.stray_packets) {
      line("QUIC events",
           fmt::format("{} Retry, {} Version Negotiation, {} stateless resets, {} stray packets",
                       with_commas(q.retries), with_commas(q.version_negotiation),
                       with_commas(q.stateless_resets), with_commas(q.stray_packets)));
    }
    if (q.streams_exhausted != 0) {
      line("out of streams",
           fmt::format("{} connections replaced: the server granted no more streams",
                       with_commas(q.streams_exhausted)));
    }
  }
  const auto& c = r.connections;
  if (!c.failures.empty()) {
    std::string causes;
    for (const auto& [cause, n] : c.failures) {
      if (!causes.empty()) causes += ", ";
      causes += fmt::format("{} {}", cause, with_commas(n));
    }
    line("errors", causes);
    line("first error", c.first_failure);
  }
  if (!r.ranks.empty()) {
    out += fmt::format("  {} ranks (mpirun); the figures above are their sums:\n", r.ranks.size());
    out += fmt::format("    {:>4}  {:<16} {:>8} {:>12} {:>10} {:>10} {:>9} {:>8}\n", "rank", "host",
                       "clients", "answered", "queries/s", "client CPU", "peak RSS", "busiest");
    for (const auto& m : r.ranks) {
      if (!m.reported) {
        out += fmt::format("    {:>4}  {:<16} sent no result (failed, hung or killed)\n", m.rank,
                           m.host);
        continue;
      }
      const std::string state = m.interrupted               ? " interrupted"
                                : m.responses_received == 0 ? " FAILED: no answer"
                                : m.client_bound            ? " client-bound"
                                                            : "";
      out +=
          fmt::format("    {:>4}  {:<16} {:>8} {:>12} {:>10} {:>9.2f}s {:>5.0f} MiB {:>6.0f} %{}\n",
                      m.rank, m.host, with_commas(m.clients), with_commas(m.responses_received),
                      with_commas(static_cast<std::uint64_t>(m.qps + 0.5)), m.client_cpu_seconds,
                      static_cast<double>(m.client_rss_bytes) / (1024.0 * 1024.0),
                      m.max_thread_cpu_share * 100, state);
    }
  }
  for (const auto& w : r.warnings) out += fmt::format("  warning: {}\n", w);
  return out;
}

}  // namespace dnstransport
