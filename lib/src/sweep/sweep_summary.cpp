// What the repeats of a point add up to, TCP/TLS as a percentage of UDP, the warnings of a
// sweep, and the machine it ran on.
#include <dnstransport/sweep_result.hpp>

#include <sys/utsname.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <dnstransport/error.hpp>

namespace dnstransport {

namespace {

qps_statistics statistics_of(std::vector<double> values) {
  qps_statistics s;
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  s.min = values.front();
  s.max = values.back();
  s.median = n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
  double sum = 0;
  for (const double v : values) sum += v;
  s.mean = sum / static_cast<double>(n);
  if (n > 1) {
    double squares = 0;
    for (const double v : values) squares += (v - s.mean) * (v - s.mean);
    s.stddev = std::sqrt(squares / static_cast<double>(n - 1));
  }
  s.spread = s.median > 0 ? (s.max - s.min) / s.median : 0;
  return s;
}

const sweep_point_result* udp_reference(const std::vector<sweep_point_result>& points,
                                        const sweep_point& of) {
  for (const auto& p : points) {
    if (p.point.transport.transport == reference_transport && p.point.clients == of.clients &&
        p.point.target == of.target && p.point.distinct_sources == of.distinct_sources &&
        p.summary.qps.mean > 0) {
      return &p;
    }
  }
  return nullptr;
}

std::string percent(double share) {
  return fmt::format("{:.0f} %", share * 100);
}

// The warning about the points whose repeats differ by more than spread_warning_threshold
// (`spread`, not empty) of `points`: one line, the widest first.
std::string spread_warning(std::vector<const sweep_point_result*> spread, std::size_t points) {
  if (spread.size() == 1) {
    const auto& s = spread.front()->summary;
    return fmt::format(
        "{}: the repeats differ by {} of their median ({:.0f} to {:.0f} queries/s), more "
        "than the {} the reference studies saw; use more {} or a longer {}",
        describe(spread.front()->point), percent(s.qps.spread), s.qps.min, s.qps.max,
        percent(spread_warning_threshold), setting("sweep_plan::repeats"),
        setting("sweep_plan::duration_seconds"));
  }
  // One line: the points from the widest spread down, the first few named.
  std::stable_sort(spread.begin(), spread.end(), [](const auto* a, const auto* b) {
    return a->summary.qps.spread > b->summary.qps.spread;
  });
  constexpr std::size_t named = 6;
  std::vector<std::string> listed;
  for (std::size_t i = 0; i < spread.size() && i < named; ++i) {
    listed.push_back(
        fmt::format("{} ({})", describe(spread[i]->point), percent(spread[i]->summary.qps.spread)));
  }
  return fmt::format(
      "at {} of {} points the repeats differ by more than the {} of their median the "
      "reference studies saw: {}{}; use more {} or a longer {}",
      spread.size(), points, percent(spread_warning_threshold), fmt::join(listed, "; "),
      spread.size() > named ? fmt::format(" and {} more", spread.size() - named) : "",
      setting("sweep_plan::repeats"), setting("sweep_plan::duration_seconds"));
}

}  // namespace

point_summary summarize(const std::vector<run_result>& repeats) {
  point_summary s;
  std::vector<double> qps;
  for (const auto& r : repeats) {
    qps.push_back(r.qps);
    s.latency.merge(r.latency);
    s.first_query_latency.merge(r.first_query_latency);
    s.connect_latency.merge(r.connect_latency);
    s.handshake_latency.merge(r.handshake_latency);
    s.queries_sent += r.queries_sent;
    s.responses_received += r.responses_received;
    s.lost += r.lost + r.lost_on_close;
    s.connections_opened += r.connections.opened;
    s.connections_failed += r.connections.failed;
    s.max_thread_cpu_share = std::max(s.max_thread_cpu_share, r.max_thread_cpu_share);
    if (r.server_usage.monitored() && r.server_usage.cpu_measured) {
      s.server_monitored = true;
      s.server_cpu_seconds += r.server_usage.cpu_seconds();
      s.server_answers += r.responses_received;
    }
  }
  s.qps = statistics_of(std::move(qps));
  s.client_bound = s.max_thread_cpu_share >= client_bound_cpu_share;
  return s;
}

std::vector<percent_of_udp_entry> compute_percent_of_udp(
    const std::vector<sweep_point_result>& points) {
  std::vector<percent_of_udp_entry> entries;
  for (const auto& p : points) {
    if (p.point.transport.transport == reference_transport) continue;
    const auto* udp = udp_reference(points, p.point);
    if (udp == nullptr) continue;
    const auto& q = p.summary.qps;
    const auto& u = udp->summary.qps;
    percent_of_udp_entry e;
    e.target = p.point.target;
    e.distinct_sources = p.point.distinct_sources;
    e.transport = p.point.transport;
    e.clients = p.point.clients;
    e.queries_per_connection = p.point.queries_per_connection;
    e.percent = 100 * q.mean / u.mean;
    e.percent_min = u.max > 0 ? 100 * q.min / u.max : 0;
    e.percent_max = u.min > 0 ? 100 * q.max / u.min : e.percent;
    e.client_bound = p.summary.client_bound || udp->summary.client_bound;
    e.reference_client_bound = udp->summary.client_bound;
    entries.push_back(e);
  }
  return entries;
}

void derive_results(sweep_result& result) {
  result.percent_of_udp = compute_percent_of_udp(result.points);
  result.amortization = compute_amortization(result.points);
  result.costs = compute_costs(result.points);
  auto& warnings = result.warnings;
  warnings.clear();
  if (result.interrupted) {
    warnings.push_back(fmt::format(
        "interrupted: {} of {} points measured; a run in progress when the sweep was stopped "
        "was discarded",
        result.points.size(), result.planned_points));
  } else if (result.points.size() < result.planned_points) {
    warnings.push_back(fmt::format("incomplete: {} of {} points measured when this was saved",
                                   result.points.size(), result.planned_points));
  }
  std::size_t client_bound = 0;
  std::vector<const sweep_point_result*> spread;
  // A run's warning, once, with the points it came from (the same text at many points is one
  // line).
  std::vector<std::pair<std::string, std::vector<std::string>>> run_warnings;
  for (const auto& p : result.points) {
    const auto& s = p.summary;
    if (s.client_bound) ++client_bound;
    if (s.responses_received == 0) {
      const std::string why =
          p.repeats.empty() ? std::string() : p.repeats.front().connections.first_failure;
      warnings.push_back(
          fmt::format("{}: no answers{}{}", describe(p.point), why.empty() ? "" : ": ", why));
    } else if (s.qps.spread > spread_warning_threshold) {
      spread.push_back(&p);
    }
    std::set<std::string> here;
    for (const auto& r : p.repeats) {
      for (const auto& w : r.warnings) {
        if (!here.insert(w).second) continue;
        auto at = std::find_if(run_warnings.begin(), run_warnings.end(),
                               [&w](const auto& known) { return known.first == w; });
        if (at == run_warnings.end()) at = run_warnings.insert(run_warnings.end(), {w, {}});
        at->second.push_back(describe(p.point));
      }
    }
  }
  if (!spread.empty()) warnings.push_back(spread_warning(spread, result.points.size()));
  for (const auto& [text, where] : run_warnings) {
    warnings.push_back(where.size() == 1 ? fmt::format("{}: {}", where.front(), text)
                                         : fmt::format("{} ({} points, the first {})", text,
                                                       where.size(), where.front()));
  }
  if (client_bound > 0) {
    warnings.push_back(fmt::format(
        "{} of {} points were client-bound (a worker thread of this generator at {} CPU or "
        "more): their queries/s measure the generator, not the server; give it more {} or "
        "CPUs",
        client_bound, result.points.size(), percent(client_bound_cpu_share),
        setting("load_spec::generator.threads")));
  }
  result.findings = compute_findings(result);
}

machine_info this_machine() {
  machine_info m;
  m.cpus = std::thread::hardware_concurrency();
  utsname names{};
  if (uname(&names) == 0) {
    m.kernel = fmt::format("{} {} {}", names.sysname, names.release, names.machine);
  }
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto start = line.find_first_not_of(" \t", line.find(':') + 1);
    if (start != std::string::npos) m.cpu_model = line.substr(start);
    break;
  }
  return m;
}

}  // namespace dnstransport
