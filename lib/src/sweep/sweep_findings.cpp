// What a sweep found, in a few sentences per target, built from its points and the models
// derived from them: the throughput each transport keeps against UDP, what a connection and
// a handshake cost the server, the queries per connection a handshake needs, server
// behaviours worth naming (delayed ACKs, queries answered one at a time), and what a reader
// should distrust.
#include <dnstransport/sweep_result.hpp>
#include <dnstransport/text.hpp>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace dnstransport {

namespace {

// Answers held back by a delayed ACK meeting Nagle's algorithm wait about 40 ms (Linux's
// minimum delayed-ACK time) on a connection that carries few queries; the same server
// answers its persistent connections within a few milliseconds.
constexpr double delayed_ack_low_ms = 30;
constexpr double delayed_ack_high_ms = 60;
constexpr double persistent_fast_ms = 10;
constexpr std::uint64_t short_connection_queries = 4;
// A connection's queries answered one at a time: nearly every answer queued behind another
// on its connection came in order and a whole answer time after the previous one
// (query_counts::one_at_a_time_answers), none overtook another, and the server's CPU was
// mostly idle meanwhile, so the spacing was not the CPU's: a server with a saturated CPU
// spaces its answers out the same way, pipelining or not.
constexpr double one_at_a_time_share = 0.9;
constexpr std::uint64_t one_at_a_time_min_queued = 20;
constexpr double one_at_a_time_idle_cpu = 0.5;  // of one CPU, in every repeat
// A model that misses one of its runs by more than this is said to be approximate.
constexpr double approximate_model_error = 0.20;

// "DoT" or, where the sweep has both TLS libraries, "DoT (OpenSSL)".
std::string display_name(const sweep_transport& t, const std::vector<sweep_transport>& all) {
  std::string name(traits_of(t.transport).short_name);
  const bool several = std::count_if(all.begin(), all.end(), [&t](const sweep_transport& o) {
                         return o.transport == t.transport;
                       }) > 1;
  if (several && t.backend) name += fmt::format(" ({})", tls_backend_name(*t.backend));
  return name;
}

std::string micros(double seconds) {
  const double us = seconds * 1e6;
  return us >= 100 ? fmt::format("{:.0f} µs", us) : fmt::format("{:.1f} µs", us);
}

std::string queries(double n) {
  return n >= 10 ? with_thousands(n) : fmt::format("{:.1f}", n);
}

double p50_ms(const latency_histogram& h) {
  return static_cast<double>(h.percentile(50)) / 1e6;
}

// One series of the sweep (series_name): a target, at one number of distinct sources.
struct target_view {
  std::string name;
  std::uint64_t distinct_sources = 0;
  std::vector<const sweep_point_result*> points;
  std::vector<sweep_transport> transports;  // with connections, in the order run

  // Whether an entry derived from the points (% of UDP, fit, costs) is of this series.
  template <typename Entry>
  bool holds(const Entry& e) const noexcept {
    return e.target == name && e.distinct_sources == distinct_sources;
  }
};

std::vector<target_view> targets_of(const sweep_result& r) {
  std::vector<target_view> out;
  for (const auto& p : r.points) {
    auto at = std::find_if(out.begin(), out.end(), [&p](const target_view& t) {
      return t.name == p.point.target && t.distinct_sources == p.point.distinct_sources;
    });
    if (at == out.end()) {
      at = out.insert(out.end(), target_view{p.point.target, p.point.distinct_sources, {}, {}});
    }
    at->points.push_back(&p);
    const auto& t = p.point.transport;
    if (traits_of(t.transport).has_connections &&
        std::find(at->transports.begin(), at->transports.end(), t) == at->transports.end()) {
      at->transports.push_back(t);
    }
  }
  return out;
}

void add(std::vector<sweep_finding>& into, const target_view& target, std::string kind,
         std::string text) {
  into.push_back({target.name, target.distinct_sources, std::move(kind), std::move(text)});
}

// Whether the repeats of the point at (transport, clients, queries per connection) of this
// target agree within the spread the sweep warns about.
bool steady(const target_view& target, const sweep_transport& transport, unsigned clients,
            std::uint64_t per_connection) {
  for (const auto* p : target.points) {
    if (p->point.transport == transport && p->point.clients == clients &&
        p->point.queries_per_connection == per_connection) {
      return p->summary.qps.spread <= spread_warning_threshold;
    }
  }
  return false;
}

// The share of UDP's throughput each transport keeps with persistent connections, at the
// most clients whose UDP reference measured the server and whose repeats (the point's and
// its UDP reference's) agree; when none agree, at the most clients, with the range the
// repeats give.
void throughput_kept(const sweep_result& r, const target_view& target,
                     std::vector<sweep_finding>& into) {
  const sweep_transport udp;  // UDP: the reference
  std::vector<std::string> kept;
  std::size_t not_measurable = 0;
  for (const auto& t : target.transports) {
    const percent_of_udp_entry* best = nullptr;
    const percent_of_udp_entry* best_steady = nullptr;
    for (const auto& e : r.percent_of_udp) {
      if (!target.holds(e) || !(e.transport == t) || e.queries_per_connection != 0) {
        continue;
      }
      if (!e.measurable()) {
        ++not_measurable;
        continue;
      }
      if (best == nullptr || e.clients > best->clients) best = &e;
      if (steady(target, t, e.clients, 0) && steady(target, udp, e.clients, 0) &&
          (best_steady == nullptr || e.clients > best_steady->clients)) {
        best_steady = &e;
      }
    }
    if (best == nullptr) continue;
    const bool unsteady = best_steady == nullptr;
    if (!unsteady) best = best_steady;
    kept.push_back(fmt::format("{} {:.0f} % ({}{}{})", display_name(t, target.transports),
                               best->percent, counted(best->clients, "client"),
                               best->client_bound ? ", client-bound" : "",
                               unsteady ? fmt::format(", repeats disagree: {:.0f} to {:.0f} %",
                                                      best->percent_min, best->percent_max)
                                        : std::string()));
  }
  if (!kept.empty()) {
    add(into, target, "throughput",
        fmt::format("With persistent connections, the server keeps this share of its UDP "
                    "throughput: {}.",
                    and_list(kept)));
  } else if (not_measurable > 0) {
    add(into, target, "throughput",
        "UDP measured the generator at every client count (client-bound), so no share of UDP "
        "can be given: the server answers UDP faster than this generator asks. Give the "
        "generator more CPUs or threads, or compare the transports' queries/s directly.");
  }
}

// What a connection, a handshake and an answer cost the server, from the cost model.
void server_costs(const sweep_result& r, const target_view& target,
                  std::vector<sweep_finding>& into) {
  std::vector<std::string> parts;
  double worst = 0;  // the largest miss of a run, over the transports
  std::string worst_transport;
  for (const auto& c : r.costs) {
    if (!target.holds(c) || !c.server) continue;
    const cpu_cost_model& m = *c.server;
    const transport_traits& traits = traits_of(c.transport.transport);
    std::vector<std::string> costs;
    if (m.per_full_handshake.fitted && m.per_full_handshake.value > 0) {
      costs.push_back(
          fmt::format("{} per full handshake ({} to {})", micros(m.per_full_handshake.value),
                      micros(m.per_full_handshake.low), micros(m.per_full_handshake.high)));
    }
    if (m.per_resumed_handshake.fitted && m.per_resumed_handshake.value > 0) {
      costs.push_back(fmt::format("{} per resumed one", micros(m.per_resumed_handshake.value)));
    }
    if (m.per_connection.fitted && m.per_connection.value > 0) {
      costs.push_back(fmt::format("{} per connection", micros(m.per_connection.value)));
    }
    if (m.per_answer.fitted && m.per_answer.value > 0) {
      std::string answer = fmt::format("{} per answer", micros(m.per_answer.value));
      const double setup = m.setup_cost();
      if (traits.has_connections && setup > 0) {
        answer += fmt::format(" (a new connection costs as much as {} answers)",
                              queries(setup / m.per_answer.value));
      }
      costs.push_back(std::move(answer));
    }
    if (costs.empty()) continue;
    if (m.largest_error > worst) {
      worst = m.largest_error;
      worst_transport = display_name(c.transport, target.transports);
    }
    parts.push_back(fmt::format("{}: {}", display_name(c.transport, target.transports),
                                fmt::join(costs, ", ")));
  }
  if (parts.empty()) return;
  add(into, target, "server_cost",
      fmt::format("Server CPU (95 % intervals in brackets): {}.{}", fmt::join(parts, "; "),
                  worst > approximate_model_error
                      ? fmt::format(" The model misses some runs by more than {:.0f} % (by up to "
                                    "{:.0f} %, {}): read these costs as averages over the "
                                    "sweep's loads; the plot of the model against the measured "
                                    "shows where it misses.",
                                    approximate_model_error * 100, worst * 100, worst_transport)
                      : ""));
}

// The queries per connection for 90 % of persistent throughput, from the throughput fit
// with the most clients, beside what the server's costs predict.
void amortization(const sweep_result& r, const target_view& target,
                  std::vector<sweep_finding>& into) {
  std::vector<std::string> parts;
  std::vector<std::string> disagree;
  for (const auto& t : target.transports) {
    const amortization_fit* widest = nullptr;
    for (const auto& f : r.amortization) {
      if (!target.holds(f) || !(f.transport == t)) continue;
      if (widest == nullptr || f.clients > widest->clients) widest = &f;
    }
    if (widest == nullptr || widest->n90 <= 0) continue;
    const std::string name = display_name(t, target.transports);
    std::string part = fmt::format("{} {}", name, queries(widest->n90));
    const auto costs = std::find_if(r.costs.begin(), r.costs.end(), [&](const transport_costs& c) {
      return target.holds(c) && c.transport == t;
    });
    if (costs != r.costs.end() && costs->n90 > 0 && costs->server) {
      const cpu_cost_model& m = *costs->server;
      part += fmt::format(" (server CPU predicts {})", queries(costs->n90));
      // The cost model's interval for n90, from its costs' intervals; the throughput fit's
      // n90 with its own error around it.
      const double setup_low = (m.per_connection.fitted ? m.per_connection.low : 0) +
                               (m.per_full_handshake.fitted ? m.per_full_handshake.low : 0);
      const double setup_high = (m.per_connection.fitted ? m.per_connection.high : 0) +
                                (m.per_full_handshake.fitted ? m.per_full_handshake.high : 0);
      const double low = m.per_answer.high > 0 ? 9 * setup_low / m.per_answer.high : 0;
      const double high = m.per_answer.low > 0 ? 9 * setup_high / m.per_answer.low : INFINITY;
      const double slack = 1 + widest->model.residual;
      if (widest->n90 * slack < low || widest->n90 / slack > high) disagree.push_back(name);
    }
    parts.push_back(std::move(part));
  }
  if (parts.empty()) return;
  std::string text =
      fmt::format("Queries a connection must carry to keep 90 % of the persistent throughput: {}.",
                  and_list(parts));
  if (!disagree.empty()) {
    text += fmt::format(
        " For {} the throughput and the server's CPU disagree beyond their intervals: the "
        "throughput was limited by something other than the server's CPU (the generator, the "
        "network, waits such as delayed ACKs).",
        and_list(disagree));
  }
  add(into, target, "amortization", std::move(text));
}

// Answers held back about 40 ms on short connections only: delayed ACK meeting Nagle.
void delayed_acks(const target_view& target, std::vector<sweep_finding>& into) {
  std::vector<std::string> seen;
  for (const auto& t : target.transports) {
    if (!traits_of(t.transport).over_tcp) continue;
    for (const auto* p : target.points) {
      const auto& q = p->point;
      if (!(q.transport == t) || q.queries_per_connection == 0 ||
          q.queries_per_connection > short_connection_queries || p->summary.latency.count() == 0) {
        continue;
      }
      const double slow = p50_ms(p->summary.latency);
      if (slow < delayed_ack_low_ms || slow > delayed_ack_high_ms) continue;
      const auto persistent = std::find_if(
          target.points.begin(), target.points.end(), [&](const sweep_point_result* o) {
            return o->point.transport == t && o->point.clients == q.clients &&
                   o->point.queries_per_connection == 0 && o->summary.latency.count() > 0;
          });
      if (persistent == target.points.end()) continue;
      const double fast = p50_ms((*persistent)->summary.latency);
      if (fast >= persistent_fast_ms) continue;
      seen.push_back(
          fmt::format("{} at {} per connection: {:.0f} ms at p50 against {:.2f} ms "
                      "on persistent connections",
                      display_name(t, target.transports),
                      counted(q.queries_per_connection, "query", "queries"), slow, fast));
      break;
    }
  }
  if (seen.empty()) return;
  add(into, target, "delayed_ack",
      fmt::format("Answers on short connections wait about 40 ms ({}): the server's delayed "
                  "ACK meets Nagle's algorithm because it leaves TCP_NODELAY off. Clients that "
                  "send few queries per connection see it; the server's operator can set "
                  "TCP_NODELAY (or its equivalent setting).",
                  fmt::join(seen, "; ")));
}

// A connection's queries answered strictly one at a time (no pipelining, RFC 7766 section
// 6.2.1.1), where the evidence is there: queued answers spaced a whole answer time apart,
// in order, while the monitored server's CPU was mostly idle. Points that measured the
// generator, and repeats whose server was not monitored, give no evidence.
void one_at_a_time(const target_view& target, std::vector<sweep_finding>& into) {
  std::vector<std::string> seen;
  for (const auto& t : target.transports) {
    std::uint64_t queued = 0;
    std::uint64_t spaced = 0;
    std::uint64_t overtook = 0;
    double busiest = 0;
    for (const auto* p : target.points) {
      if (!(p->point.transport == t) || p->summary.client_bound) continue;
      for (const auto& run : p->repeats) {
        const auto& usage = run.server_usage;
        if (!usage.monitored() || !usage.cpu_measured ||
            usage.cpu_share >= one_at_a_time_idle_cpu) {
          continue;
        }
        queued += run.queued_answers;
        spaced += run.one_at_a_time_answers;
        overtook += run.out_of_order;
        busiest = std::max(busiest, usage.cpu_share);
      }
    }
    if (queued < one_at_a_time_min_queued || overtook > 0 ||
        static_cast<double>(spaced) < one_at_a_time_share * static_cast<double>(queued)) {
      continue;
    }
    seen.push_back(
        fmt::format("{}: {} of {} answers to queries queued behind another on their "
                    "connection, with the server's CPU at most {:.0f} % busy",
                    display_name(t, target.transports), with_commas(spaced), with_commas(queued),
                    busiest * 100));
  }
  if (seen.empty()) return;
  add(into, target, "one_at_a_time",
      fmt::format("The server answers a connection's queries one at a time, without pipelining "
                  "(RFC 7766, section 6.2.1.1): each answer came in order and a whole answer "
                  "time after the previous one ({}), though its CPU had time to spare. A client "
                  "that sends several queries on one connection waits for each in turn: spread "
                  "them over connections, or ask the server's developers for concurrent "
                  "processing of a connection's queries.",
                  fmt::join(seen, "; ")));
}

// What a reader should distrust, with counts.
void distrust(const target_view& target, std::vector<sweep_finding>& into) {
  std::size_t bound = 0;
  std::size_t spread = 0;
  std::size_t silent = 0;
  for (const auto* p : target.points) {
    if (p->summary.client_bound) ++bound;
    if (p->summary.responses_received == 0) {
      ++silent;
    } else if (p->summary.qps.spread > spread_warning_threshold) {
      ++spread;
    }
  }
  const std::size_t n = target.points.size();
  std::vector<std::string> parts;
  if (bound > 0) {
    parts.push_back(
        fmt::format("{} of {} points measured the generator, not the server "
                    "(client-bound)",
                    bound, n));
  }
  if (spread > 0) {
    parts.push_back(fmt::format("at {} of {} points the repeats differ by more than {:.0f} %",
                                spread, n, spread_warning_threshold * 100));
  }
  if (silent > 0) parts.push_back(fmt::format("{} of {} points got no answers", silent, n));
  if (parts.empty()) return;
  add(into, target, "distrust",
      fmt::format("Read with care: {} (see the warnings).", fmt::join(parts, "; ")));
}

}  // namespace

std::vector<sweep_finding> compute_findings(const sweep_result& r) {
  std::vector<sweep_finding> out;
  for (const auto& target : targets_of(r)) {
    throughput_kept(r, target, out);
    server_costs(r, target, out);
    amortization(r, target, out);
    delayed_acks(target, out);
    one_at_a_time(target, out);
    distrust(target, out);
  }
  return out;
}

}  // namespace dnstransport
