// CSV views of a sweep: one row per point, per percent-of-UDP entry, per amortization fit.
#include <fmt/format.h>

#include "report/report_detail.hpp"

namespace dnstransport {

namespace {

std::string transport_columns(const sweep_transport& t) {
  return fmt::format("{},{}", transport_name(t.transport),
                     t.backend ? tls_backend_name(*t.backend) : "");
}

const percent_of_udp_entry* percent_for(const sweep_result& r, const sweep_point& p) {
  for (const auto& e : r.percent_of_udp) {
    if (e.target == p.target && e.distinct_sources == p.distinct_sources &&
        e.transport == p.transport && e.clients == p.clients &&
        e.queries_per_connection == p.queries_per_connection) {
      return &e;
    }
  }
  return nullptr;
}

}  // namespace

std::string to_csv(const sweep_result& r) {
  std::string out =
      "transport,tls_backend,clients,queries_per_connection,repeats,qps_mean,qps_median,qps_min,"
      "qps_max,qps_stddev,qps_spread,latency_p50_ns,latency_p90_ns,latency_p99_ns,"
      "latency_p999_ns,connect_p50_ns,connect_p99_ns,handshake_p50_ns,handshake_p99_ns,"
      "queries_sent,responses_received,lost,connections_opened,max_thread_cpu_share,"
      "client_bound,percent_of_udp,server_cpu_per_1k_answers\n";
  const bool targets = !r.plan.targets.empty();
  const bool distinct = !r.plan.distinct_sources.empty();
  if (distinct) out = "distinct_sources," + out;
  if (targets) out = "target," + out;
  for (const auto& p : r.points) {
    if (targets) out += p.point.target + ",";
    if (distinct) out += std::to_string(p.point.distinct_sources) + ",";
    const auto& s = p.summary;
    const auto* percent = percent_for(r, p.point);
    out += fmt::format(
        "{},{},{},{},{:.1f},{:.1f},{:.1f},{:.1f},{:.1f},{:.4f},{},{},{},{},{},{},{},{},{},{},{},{},"
        "{:.3f},{},{},{}\n",
        transport_columns(p.point.transport), p.point.clients, p.point.queries_per_connection,
        p.repeats.size(), s.qps.mean, s.qps.median, s.qps.min, s.qps.max, s.qps.stddev,
        s.qps.spread, s.latency.percentile(50), s.latency.percentile(90), s.latency.percentile(99),
        s.latency.percentile(99.9), s.connect_latency.percentile(50),
        s.connect_latency.percentile(99), s.handshake_latency.percentile(50),
        s.handshake_latency.percentile(99), s.queries_sent, s.responses_received, s.lost,
        s.connections_opened, s.max_thread_cpu_share, s.client_bound ? 1 : 0,
        percent ? fmt::format("{:.2f}", percent->percent) : "",
        s.server_monitored ? fmt::format("{:.6f}", s.server_cpu_per_1k_answers()) : "");
  }
  return out;
}

namespace detail {

std::string percent_of_udp_csv(const sweep_result& r) {
  std::string out =
      "transport,tls_backend,clients,queries_per_connection,percent,percent_min,percent_max,"
      "client_bound,reference_client_bound\n";
  for (const auto& e : r.percent_of_udp) {
    out += fmt::format("{},{},{},{:.2f},{:.2f},{:.2f},{},{}\n", transport_columns(e.transport),
                       e.clients, e.queries_per_connection, e.percent, e.percent_min, e.percent_max,
                       e.client_bound ? 1 : 0, e.reference_client_bound ? 1 : 0);
  }
  return out;
}

std::string amortization_csv(const sweep_result& r) {
  std::string out =
      "transport,tls_backend,clients,t_inf,h,n50,n90,n99,residual,simple_model_residual,"
      "departures\n";
  for (const auto& f : r.amortization) {
    std::string departures;
    for (const auto n : f.departures) {
      if (!departures.empty()) departures += ' ';
      departures += queries_per_connection_name(n);
    }
    out += fmt::format("{},{},{:.1f},{:.4g},{:.4g},{:.4g},{:.4g},{:.4f},{:.4f},{}\n",
                       transport_columns(f.transport), f.clients, f.model.t_inf, f.model.h, f.n50,
                       f.n90, f.n99, f.model.residual, f.simple_residual, departures);
  }
  return out;
}

}  // namespace detail

}  // namespace dnstransport
