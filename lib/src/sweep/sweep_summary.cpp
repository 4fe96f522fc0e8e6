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
        p.point.target == of.target && p.summary.qps.mean > 0) {
      return &p;
    }
  }
  return nullptr;
}

std::string percent(double share) {
  return fmt::format("{:.0f} %", share * 100);
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
    e.transport = p.point.transport;
    e.clients = p.point.clients;
    e.queries_per_connection = p.point.queries_per_connection;
    e.percent = 100 * q.mean / u.mean;
    e.percent_min = u.max > 0 ? 100 * q.min / u.max : 0;
    e.percent_max = u.min > 0 ? 100 * q.max / u.min : e.percent;
    e.client_bound = p.summary.client_bound || udp->summary.client_bound;
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
  std::set<std::string> seen;
  for (const auto& p : result.points) {
    const auto& s = p.summary;
    if (s.client_bound) ++client_bound;
    if (s.responses_received == 0) {
      const std::string why =
          p.repeats.empty() ? std::string() : p.repeats.front().connections.first_failure;
      warnings.push_back(
          fmt::format("{}: no answers{}{}", describe(p.point), why.empty() ? "" : ": ", why));
    } else if (s.qps.spread > spread_warning_threshold) {
      warnings.push_back(fmt::format(
          "{}: the repeats differ by {} of their median ({:.0f} to {:.0f} queries/s), more "
          "than the {} the reference studies saw; use more --repeats or a longer --duration",
          describe(p.point), percent(s.qps.spread), s.qps.min, s.qps.max,
          percent(spread_warning_threshold)));
    }
    for (const auto& r : p.repeats) {
      for (const auto& w : r.warnings) {
        if (seen.insert(w).second) warnings.push_back(fmt::format("{}: {}", describe(p.point), w));
      }
    }
  }
  if (client_bound > 0) {
    warnings.push_back(fmt::format(
        "{} of {} points were client-bound (a worker thread of this generator at {} CPU or "
        "more): their queries/s measure the generator, not the server; give it more --threads "
        "or CPUs",
        client_bound, result.points.size(), percent(client_bound_cpu_share)));
  }
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
