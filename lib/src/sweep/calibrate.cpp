#include <dnstransport/calibrate.hpp>

#include <fmt/format.h>

#include <dnstransport/server.hpp>
#include <dnstransport/transport.hpp>

namespace dnstransport {

std::vector<calibration_case> default_calibration_cases() {
  const auto available = available_tls_backends();
  std::vector<calibration_case> cases;
  for (const transport_traits& t : all_transports()) {
    if (!t.compiled) continue;
    std::vector<tls_backend> backends{tls_backend::openssl};  // unused without TLS
    if (t.gnutls_only) {
      backends = {tls_backend::gnutls};
    } else if (t.has_tls) {
      backends = available;
    }
    for (const tls_backend backend : backends) {
      cases.push_back({t.kind, backend, 0});
      if (t.has_connections) cases.push_back({t.kind, backend, 1});
      if (t.has_tls) {
        cases.push_back({t.kind, backend, 1, true});
        cases.push_back({t.kind, backend, 1, true, true});
      }
    }
  }
  return cases;
}

std::string calibration_case_name(const calibration_case& c) {
  std::string name(transport_name(c.transport));
  if (traits_of(c.transport).has_tls) name += fmt::format(" ({})", tls_backend_name(c.backend));
  if (c.early_data) {
    name += ", 0-RTT";
  } else if (c.resume) {
    name += ", resumed";
  }
  return name;
}

std::vector<calibration_result> calibrate(const calibration_options& options) {
  std::vector<calibration_result> results;
  for (std::size_t i = 0; i < options.cases.size(); ++i) {
    if (options.stop != nullptr && options.stop->load()) break;
    if (options.on_case) options.on_case(i, options.cases.size());
    const calibration_case& c = options.cases[i];

    server_options responder_options;
    responder_options.threads = options.server_threads;
    responder_options.cpus = options.server_cpus;
    responder_options.tls_options.backend = c.backend;
    responder_options.listen[c.transport] = endpoint{"127.0.0.1", 0};
    server responder(responder_options);

    load_spec spec;
    spec.target.transport = c.transport;
    spec.target.port = responder.port(c.transport);
    spec.tls.backend = c.backend;
    spec.tls.resume = c.resume || c.early_data;
    spec.tls.early_data = c.early_data;
    spec.connections.queries_per_connection = c.queries_per_connection;
    spec.traffic.clients = options.clients;
    spec.traffic.outstanding = c.queries_per_connection == 1 ? 1 : options.outstanding;
    spec.traffic.duration_seconds = options.duration_seconds;
    spec.generator.cpus = options.client_cpus;
    spec.stop = options.stop;

    calibration_result r;
    r.which = c;
    r.run = run_load(spec);
    r.qps_per_client_cpu =
        r.run.client_cpu_seconds > 0
            ? static_cast<double>(r.run.responses_received) / r.run.client_cpu_seconds
            : 0;
    r.client_bound = r.run.max_thread_cpu_share >= client_bound_threshold;
    results.push_back(std::move(r));
  }
  return results;
}

std::string format_calibration(const std::vector<calibration_result>& results) {
  std::string out = fmt::format("{:<26} {:>10} {:>12} {:>16} {:>12} {:>19}  {}\n", "transport",
                                "per conn", "queries/s", "CPU s/M answers", "CPU us/conn",
                                "ceiling q/s/thread", "limited by");
  for (const auto& r : results) {
    const std::string name = calibration_case_name(r.which);
    const std::string per_connection = !traits_of(r.which.transport).has_connections ? "-"
                                       : r.which.queries_per_connection == 0
                                           ? "unlimited"
                                           : std::to_string(r.which.queries_per_connection);
    const double per_million =
        r.run.responses_received > 0
            ? r.run.client_cpu_seconds * 1e6 / static_cast<double>(r.run.responses_received)
            : 0;
    // At one query per connection each connection is a set-up (and handshake) and a query.
    const std::uint64_t connections = r.run.connections.opened;
    const std::string per_conn = r.which.queries_per_connection == 1 && connections > 0
                                     ? fmt::format("{:.1f}", r.run.client_cpu_seconds * 1e6 /
                                                                 static_cast<double>(connections))
                                     : "-";
    out += fmt::format("{:<26} {:>10} {:>12.0f} {:>16.2f} {:>12} {:>19.0f}  {}\n", name,
                       per_connection, r.run.qps, per_million, per_conn, r.qps_per_client_cpu,
                       r.client_bound ? "client (this figure is the ceiling)" : "responder");
  }
  out +=
      "ceiling q/s/thread = answers per second of client CPU: the most one fully busy worker "
      "thread can drive. A server measured near threads x ceiling is being measured by the "
      "client, not the server.\n"
      "CPU us/conn = client CPU per connection at one query per connection: its set-up (TCP, "
      "a full, resumed or 0-RTT handshake) and its one query.\n";
  return out;
}

}  // namespace dnstransport
