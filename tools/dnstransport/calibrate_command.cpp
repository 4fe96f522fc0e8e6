#include <algorithm>
#include <string_view>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include <dnstransport/calibrate.hpp>
#include <dnstransport/error.hpp>
#include <dnstransport/transport.hpp>

#include "cli_common.hpp"
#include "commands.hpp"

namespace dnstransport::cli {

namespace {

struct calibrate_options_cli {
  double duration = 2;
  unsigned clients = 8;
  unsigned outstanding = 100;
  std::string cpus;
  std::string server_cpus;
  std::vector<std::string> transports;
};

calibration_case parse_case(const std::string& given) {
  // udp | tcp | tcp:N | tls-openssl | tls-gnutls:N ... (N = queries per connection), then
  // +resume or +0rtt for TLS transports
  calibration_case c;
  std::string text = given;
  for (const auto& [suffix, early] : {std::pair{"+resume", false}, std::pair{"+0rtt", true}}) {
    const std::string_view s(suffix);
    if (text.size() > s.size() && text.compare(text.size() - s.size(), s.size(), s) == 0) {
      text.resize(text.size() - s.size());
      c.resume = true;
      c.early_data = early;
    }
  }
  const auto colon = text.find(':');
  const std::string name = text.substr(0, colon);
  if (colon != std::string::npos) {
    const std::string n = text.substr(colon + 1);
    if (n != "unlimited") {
      try {
        c.queries_per_connection = std::stoull(n);
      } catch (const std::exception&) {
        throw setup_error(fmt::format("--transports: bad queries per connection in \"{}\"", text));
      }
    }
  }
  // TRANSPORT or, for the TLS transports, TRANSPORT-BACKEND (tls-gnutls)
  const auto dash = name.find('-');
  const auto transport = parse_transport(name.substr(0, dash));
  if (!transport || (dash != std::string::npos && !traits_of(*transport).has_tls)) {
    throw setup_error(
        fmt::format("--transports: \"{}\" is not udp, tcp, tls, tls-openssl, tls-gnutls, doh, "
                    "doh-openssl, doh-gnutls or doq",
                    text));
  }
  const transport_traits& traits = traits_of(*transport);
  c.transport = *transport;
  if (traits.gnutls_only) c.backend = tls_backend::gnutls;  // DoQ: ngtcp2's crypto helper
  if (dash != std::string::npos) {
    const auto backend = parse_tls_backend(name.substr(dash + 1));
    if (!backend || (traits.gnutls_only && *backend != tls_backend::gnutls)) {
      throw setup_error(fmt::format("--transports: unknown TLS backend in \"{}\"", text));
    }
    c.backend = *backend;
  }
  if (!traits.has_connections && c.queries_per_connection != 0) {
    throw setup_error(fmt::format("--transports: {} has no queries per connection", traits.name));
  }
  if (c.resume && !traits_of(c.transport).has_tls) {
    throw setup_error(
        fmt::format("--transports: \"{}\": +resume and +0rtt need tls, doh or doq", given));
  }
  return c;
}

}  // namespace

action add_calibrate_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "calibrate",
      "Measure this machine's own ceiling: how many queries/s one client CPU can drive per "
      "transport, against the built-in responder");
  auto o = std::make_shared<calibrate_options_cli>();
  cmd->add_option("--duration", o->duration, "Seconds per case")->capture_default_str();
  cmd->add_option("--clients", o->clients, "Clients per case")->capture_default_str();
  cmd->add_option("--outstanding", o->outstanding, "Queries in flight per client")
      ->capture_default_str();
  cmd->add_option("--cpus", o->cpus, "Pin the generator to these CPUs (e.g. 0)");
  cmd->add_option("--server-cpus", o->server_cpus,
                  "Pin the built-in responder to these CPUs (default: the others)");
  cmd->add_option("--transports", o->transports,
                  "Cases, e.g. udp,tcp,tcp:1,tls-openssl,tls-gnutls:1,tls-gnutls:1+resume,doh:1,"
                  "doq:1+0rtt (N after ':' = queries per connection; +resume: connections after "
                  "a client's first resume its session, +0rtt: and send their queries in "
                  "0-RTT). Default: udp, tcp, tls (every backend), doh and doq, persistent and "
                  "1, tls at 1 resumed, doq at 1 with 0-RTT")
      ->delimiter(',');
  cmd->footer(std::string("Example: dnstransport calibrate --cpus 0 --server-cpus 1\n") +
              exit_codes_help);
  return [cmd, o]() -> int {
    if (!cmd->parsed()) return -1;
    calibration_options options;
    options.duration_seconds = o->duration;
    options.clients = o->clients;
    options.outstanding = o->outstanding;
    if (!o->cpus.empty()) options.client_cpus = parse_cpu_list(o->cpus, "--cpus");
    if (!o->server_cpus.empty()) {
      options.server_cpus = parse_cpu_list(o->server_cpus, "--server-cpus");
    } else if (!options.client_cpus.empty()) {
      const unsigned n = std::thread::hardware_concurrency();
      for (unsigned c = 0; c < n; ++c) {
        if (std::find(options.client_cpus.begin(), options.client_cpus.end(),
                      static_cast<int>(c)) == options.client_cpus.end()) {
          options.server_cpus.push_back(static_cast<int>(c));
        }
      }
    }
    if (!o->transports.empty()) {
      options.cases.clear();
      for (const auto& t : o->transports) options.cases.push_back(parse_case(t));
    }
    options.stop = &stop_requested;
    const bool show = stderr_is_terminal();
    options.on_case = [&](std::size_t i, std::size_t n) {
      if (show) fmt::print(stderr, "\rcalibrating: case {}/{} ...", i + 1, n);
    };
    const auto results = calibrate(options);
    if (show) fmt::print(stderr, "\r\033[K");
    fmt::print("{}", format_calibration(results));
    if (stop_requested.load()) return exit_interrupted;
    for (const auto& r : results) {
      if (r.run.responses_received == 0) return exit_no_answers;
    }
    return exit_ok;
  };
}

}  // namespace dnstransport::cli
