// A load shared by several processes: each member's share of the spec, and the members'
// results merged into one, with the public stats structs' operator+= (load.hpp).

#include <dnstransport/group.hpp>

#include <algorithm>

#include <fmt/format.h>

#include <dnstransport/error.hpp>
#include <dnstransport/load.hpp>
#include <dnstransport/text.hpp>

#include "load/source_ranges.hpp"

namespace dnstransport {

namespace {

// Member `rank` of `size`'s part of `total`: equal parts, the first total % size one more.
std::uint64_t part_of(std::uint64_t total, unsigned rank, unsigned size) {
  return total / size + (rank < total % size ? 1 : 0);
}

template <typename Map>
void add_map(Map& into, const Map& from) {
  for (const auto& [key, n] : from) into[key] += n;
}

void add_timeline(std::vector<timeline_row>& into, const std::vector<timeline_row>& from) {
  if (into.size() < from.size()) into.resize(from.size());
  for (std::size_t k = 0; k < from.size(); ++k) {
    timeline_row& t = into[k];
    const timeline_row& f = from[k];
    t.start_seconds = f.start_seconds;
    t.duration_seconds = std::max(t.duration_seconds, f.duration_seconds);
    t.sent += f.sent;
    t.answered += f.answered;
    t.lost += f.lost;
    t.failed += f.failed;
    t.not_sent += f.not_sent;
    t.p50_ms = std::max(t.p50_ms, f.p50_ms);
    t.p99_ms = std::max(t.p99_ms, f.p99_ms);
    t.connections_open += f.connections_open;
    t.connections_opened += f.connections_opened;
    t.handshakes += f.handshakes;
    // The server is read by member 0 alone.
    if (f.server_cpu_seconds >= 0) {
      t.server_cpu_seconds = f.server_cpu_seconds;
      t.server_rss_bytes = f.server_rss_bytes;
    }
  }
}

rank_result own_figures(const run_result& r, unsigned rank, const std::string& host) {
  rank_result m;
  m.rank = rank;
  m.host = host;
  m.interrupted = r.interrupted;
  m.clients = r.clients;
  m.queries_sent = r.queries_sent;
  m.responses_received = r.responses_received;
  m.elapsed_seconds = r.elapsed_seconds;
  m.qps = r.qps;
  m.client_cpu_seconds = r.client_cpu_seconds;
  m.max_thread_cpu_share = r.max_thread_cpu_share;
  m.client_rss_bytes = r.client_rss_bytes;
  m.client_bound = r.max_thread_cpu_share >= client_bound_cpu_share;
  m.first_failure = r.connections.first_failure;
  return m;
}

}  // namespace

connection_stats& connection_stats::operator+=(const connection_stats& other) {
  add_counts<connection_counts>(*this, other);
  // Both sides' mean and maximum were over the same window: the sums are the mean of all
  // together, and the most they can have held at once.
  concurrent_mean += other.concurrent_mean;
  concurrent_max += other.concurrent_max;
  add_map(failures, other.failures);
  if (first_failure.empty()) first_failure = other.first_failure;
  return *this;
}

edns_stats& edns_stats::operator+=(const edns_stats& other) {
  if (other.keepalive_answers > 0) {
    keepalive_min_seconds = keepalive_answers == 0
                                ? other.keepalive_min_seconds
                                : std::min(keepalive_min_seconds, other.keepalive_min_seconds);
    keepalive_max_seconds = std::max(keepalive_max_seconds, other.keepalive_max_seconds);
  }
  keepalive_answers += other.keepalive_answers;
  padded_answers += other.padded_answers;
  add_map(padded_sizes, other.padded_sizes);
  return *this;
}

client_subnet_stats& client_subnet_stats::operator+=(const client_subnet_stats& other) {
  // Saturating: per query, each member may carry all of a range of 2^63.
  const std::uint64_t cap = std::max(range_subnets, other.range_subnets);
  subnets = other.subnets > cap - std::min(subnets, cap) ? cap : subnets + other.subnets;
  echoed += other.echoed;
  add_map(scope_prefixes, other.scope_prefixes);
  return *this;
}

quic_stats& quic_stats::operator+=(const quic_stats& other) {
  const auto own_samples = rtt_samples;
  add_counts<quic_counts>(*this, other);
  add_map(closes, other.closes);
  // Means over connections: weighted by each side's connections with an RTT sample.
  const auto samples = rtt_samples;
  if (samples > 0) {
    const auto weigh = [&](double a, double b) {
      return (a * static_cast<double>(own_samples) + b * static_cast<double>(other.rtt_samples)) /
             static_cast<double>(samples);
    };
    smoothed_rtt_ms = weigh(smoothed_rtt_ms, other.smoothed_rtt_ms);
    mean_cwnd_bytes = weigh(mean_cwnd_bytes, other.mean_cwnd_bytes);
  }
  if (other.rtt_samples > 0) {
    min_rtt_ms = own_samples == 0 ? other.min_rtt_ms : std::min(min_rtt_ms, other.min_rtt_ms);
  }
  return *this;
}

std::size_t run_result::ranks_missing() const noexcept {
  return static_cast<std::size_t>(
      std::count_if(ranks.begin(), ranks.end(), [](const rank_result& r) { return !r.reported; }));
}

std::size_t run_result::ranks_failed() const noexcept {
  return static_cast<std::size_t>(
      std::count_if(ranks.begin(), ranks.end(), [](const rank_result& r) { return r.failed(); }));
}

load_spec share_of(const load_spec& spec, unsigned rank, unsigned size) {
  if (size == 0 || rank >= size) {
    throw setup_error(fmt::format("rank {} of a group of {} processes", rank, size));
  }
  if (spec.traffic.clients < size) {
    throw setup_error(
        fmt::format("{} {} cannot be shared by {} processes: give at least one client per process",
                    setting("load_spec::traffic.clients"), spec.traffic.clients, size));
  }
  if (spec.connections.distinct_sources != 0 && spec.connections.distinct_sources < size) {
    throw setup_error(
        fmt::format("{} {} cannot be shared by {} processes: give at least one address per process",
                    setting("load_spec::connections.distinct_sources"),
                    spec.connections.distinct_sources, size));
  }
  load_spec mine = spec;
  mine.traffic.clients = static_cast<unsigned>(part_of(spec.traffic.clients, rank, size));
  // The rate follows the clients, so that every client sends at the same pace.
  if (spec.traffic.rate > 0) {
    mine.traffic.rate = spec.traffic.rate * static_cast<double>(mine.traffic.clients) /
                        static_cast<double>(spec.traffic.clients);
  }
  if (spec.traffic.count > 0) mine.traffic.count = part_of(spec.traffic.count, rank, size);
  // The members take disjoint shares of the source addresses (a range read out as one
  // address per client of the whole group): every size-th, from the rank on. Per client, each
  // member's share then holds one for each of its clients (part_of gives the larger shares to
  // the lower ranks, as the stride does).
  const auto sources = detail::expanded_source_texts(spec);
  if (sources.size() >= size) {
    mine.connections.sources.clear();
    for (std::size_t i = rank; i < sources.size(); i += size) {
      mine.connections.sources.push_back(sources[i]);
    }
  }
  // PROXY headers: the same for the client addresses the headers carry (in order), or a
  // draw of each member's own (random).
  if (spec.connections.proxy.version != proxy_protocol::none) {
    proxy_settings& proxy = mine.connections.proxy;
    if (proxy.random) {
      proxy.seed = spec.connections.proxy.seed + rank;
    } else {
      try {
        const std::uint64_t distinct = spec.connections.distinct_sources;
        const auto all = detail::proxy_addresses(
            spec.connections.proxy, distinct != 0 ? distinct : spec.traffic.clients, "");
        if (all.size() >= size) {
          proxy.sources.clear();
          for (std::size_t i = rank; i < all.size(); i += size) {
            proxy.sources.push_back(all[i].to_string());
          }
        }
      } catch (const setup_error&) {
        // Refused by the member's own set-up, naming the setting.
      }
    }
  }
  // Distinct sources: each member its share, of the shares of addresses above.
  if (spec.connections.distinct_sources != 0) {
    mine.connections.distinct_sources = part_of(spec.connections.distinct_sources, rank, size);
  }
  // EDNS Client Subnet: the members' clients carry the subnets in order, each from where the
  // lower ranks' clients left off, or each member draws its own.
  client_subnet_settings& subnet = mine.traffic.client_subnet;
  if (subnet.mode == client_subnet_mode::per_query) {
    subnet.seed = spec.traffic.client_subnet.seed + rank;
  } else {
    for (unsigned r = 0; r < rank; ++r) subnet.first += part_of(spec.traffic.clients, r, size);
  }
  if (mine.generator.threads > mine.traffic.clients) mine.generator.threads = mine.traffic.clients;
  if (rank != 0) {
    mine.monitor.pids.clear();
    mine.monitor.cgroups.clear();
    mine.monitor.command.clear();
  }
  return mine;
}

namespace {

// Adds one more member's run to the merged one: counts and CPU summed, histograms and
// timelines merged, the longest window, the first monitored server, each warning once.
void add_member(run_result& out, const run_result& r) {
  out.clients += r.clients;
  out.threads = std::max(out.threads, r.threads);
  out.rate += r.rate;
  static_cast<query_counts&>(out) += r;
  add_map(out.http_failures, r.http_failures);
  add_map(out.quic_failures, r.quic_failures);
  for (std::size_t i = 0; i < out.rcodes.size(); ++i) out.rcodes[i] += r.rcodes[i];
  out.send_lag.merge(r.send_lag);
  out.in_flight_max = std::max(out.in_flight_max, r.in_flight_max);
  // The members' shares of the addresses are disjoint: the group bound their sum.
  out.source_addresses += r.source_addresses;
  out.sources_per_client = r.sources_per_client;
  out.proxy_protocol = r.proxy_protocol;
  out.proxy_addresses += r.proxy_addresses;
  out.elapsed_seconds = std::max(out.elapsed_seconds, r.elapsed_seconds);
  out.client_cpu_seconds += r.client_cpu_seconds;
  out.client_rss_bytes += r.client_rss_bytes;
  out.generator += r.generator;
  out.max_thread_cpu_share = std::max(out.max_thread_cpu_share, r.max_thread_cpu_share);
  out.interrupted = out.interrupted || r.interrupted;
  out.latency.merge(r.latency);
  out.first_query_latency.merge(r.first_query_latency);
  out.connect_latency.merge(r.connect_latency);
  out.handshake_latency.merge(r.handshake_latency);
  out.connections += r.connections;
  out.early_data += r.early_data;
  out.edns += r.edns;
  out.client_subnet += r.client_subnet;
  out.quic += r.quic;
  out.handshakes_full += r.handshakes_full;
  out.handshakes_resumed += r.handshakes_resumed;
  add_timeline(out.timeline, r.timeline);
  if (r.server_usage.monitored() && !out.server_usage.monitored()) {
    out.server_usage = r.server_usage;
  }
  for (const auto& warning : r.warnings) {
    if (std::find(out.warnings.begin(), out.warnings.end(), warning) == out.warnings.end()) {
      out.warnings.push_back(warning);
    }
  }
}

// The ranks' own warnings: one that got no answer, one that sent no result.
void add_rank_warnings(run_result& out) {
  for (const auto& m : out.ranks) {
    if (m.reported && m.responses_received == 0 && !m.interrupted) {
      out.warnings.push_back(fmt::format("rank {}{}{} got no answer{}{}", m.rank,
                                         m.host.empty() ? "" : " on ", m.host,
                                         m.first_failure.empty() ? "" : ": ", m.first_failure));
    }
    if (!m.reported) {
      out.warnings.push_back(fmt::format(
          "rank {}{}{} sent no result (it failed, hung or was killed): the figures are those of "
          "the {}",
          m.rank, m.host.empty() ? "" : " on ", m.host,
          counted(out.ranks.size() - out.ranks_missing(), "other rank")));
    }
  }
}

}  // namespace

run_result merge_results(const std::vector<std::optional<run_result>>& members,
                         const std::vector<std::string>& hosts) {
  run_result out;
  std::vector<rank_result> ranks;
  bool first = true;
  for (std::size_t rank = 0; rank < members.size(); ++rank) {
    const std::string host = rank < hosts.size() ? hosts[rank] : std::string();
    if (!members[rank]) {
      rank_result missing;
      missing.rank = static_cast<unsigned>(rank);
      missing.host = host;
      missing.reported = false;
      ranks.push_back(missing);
      continue;
    }
    const run_result& r = *members[rank];
    ranks.push_back(own_figures(r, static_cast<unsigned>(rank), host));
    if (first) {
      // What was run is the same on every member; member 0 (or the first to report) names
      // it, and only member 0 monitors the server.
      out = r;
      first = false;
      continue;
    }
    add_member(out, r);
  }
  out.ranks = std::move(ranks);
  out.qps = out.elapsed_seconds > 0
                ? static_cast<double>(out.responses_received) / out.elapsed_seconds
                : 0;
  if (out.server_usage.monitored() && out.responses_received > 0) {
    out.server_usage.cpu_per_1k_answers =
        out.server_usage.cpu_seconds() / (static_cast<double>(out.responses_received) / 1000.0);
  }
  add_rank_warnings(out);
  return out;
}

}  // namespace dnstransport
