// The sweep plan: axis parsing, presets, and expansion into the ordered list of points.
#include <dnstransport/sweep_plan.hpp>

#include <algorithm>
#include <charconv>
#include <functional>
#include <iterator>
#include <limits>

#include <fmt/format.h>

#include <dnstransport/endpoint.hpp>
#include <dnstransport/error.hpp>
#include <dnstransport/text.hpp>
#include <dnstransport/transport.hpp>

namespace dnstransport {

namespace {

// Splits "a,b,c" into its items; an empty item (",," or a trailing comma) is an error.
std::vector<std::string_view> split_list(std::string_view list, std::string_view flag) {
  std::vector<std::string_view> items;
  if (list.empty()) throw setup_error(fmt::format("{}: the list is empty", flag));
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = list.find(',', start);
    const std::string_view item = list.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (item.empty()) throw setup_error(fmt::format("{}: empty item in \"{}\"", flag, list));
    items.push_back(item);
    if (comma == std::string_view::npos) return items;
    start = comma + 1;
  }
}

template <typename T>
void reject_repeats(const std::vector<T>& values, std::string_view flag,
                    const std::function<std::string(const T&)>& name) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (values[i] == values[j]) {
        throw setup_error(fmt::format("{}: {} appears twice", flag, name(values[i])));
      }
    }
  }
}

std::uint64_t parse_positive(std::string_view text, std::string_view flag) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || value == 0) {
    throw setup_error(fmt::format("{}: \"{}\" is not a positive number", flag, text));
  }
  return value;
}

// A setting of sweep_plan as a setup_error names it: plan_setting("clients").
std::string plan_setting(std::string_view member) {
  return setting(fmt::format("sweep_plan::{}", member));
}

bool has_stream_transport(const sweep_plan& plan) {
  return std::any_of(plan.transports.begin(), plan.transports.end(), [](const sweep_transport& t) {
    return traits_of(t.transport).has_connections;
  });
}

}  // namespace

std::string sweep_transport_name(const sweep_transport& transport) {
  std::string name(transport_name(transport.transport));
  if (transport.backend) name += fmt::format("-{}", tls_backend_name(*transport.backend));
  return name;
}

std::vector<sweep_transport> parse_sweep_transports(std::string_view list,
                                                    tls_backend default_backend) {
  std::vector<sweep_transport> transports;
  const std::string named = plan_setting("transports");
  for (const std::string_view item : split_list(list, named)) {
    sweep_transport t;
    const std::size_t dash = item.find('-');
    const auto kind = parse_transport(item.substr(0, dash));
    if (!kind) {
      throw setup_error(fmt::format(
          "{}: \"{}\" is not one of udp, tcp, tls, tls-openssl, tls-gnutls, doh, doh-openssl, "
          "doh-gnutls, doq",
          named, item));
    }
    t.transport = *kind;
    if (traits_of(t.transport).gnutls_only) {
      t.backend = tls_backend::gnutls;
      if (dash != std::string_view::npos && item.substr(dash + 1) != "gnutls") {
        throw setup_error(
            fmt::format("{}: \"{}\": {} runs on GnuTLS only (Debian's OpenSSL 3.0 has no QUIC API)",
                        named, item, traits_of(t.transport).name));
      }
    } else if (traits_of(t.transport).has_tls) {
      t.backend = default_backend;
      if (dash != std::string_view::npos) {
        t.backend = parse_tls_backend(item.substr(dash + 1));
        if (!t.backend) {
          throw setup_error(fmt::format(
              "{}: \"{}\": the TLS library is openssl or gnutls (tls-openssl, tls-gnutls, "
              "doh-openssl, doh-gnutls)",
              named, item));
        }
      }
    } else if (dash != std::string_view::npos) {
      throw setup_error(
          fmt::format("{}: \"{}\": only tls and doh take a TLS library suffix", named, item));
    }
    transports.push_back(t);
  }
  reject_repeats<sweep_transport>(transports, named, sweep_transport_name);
  return transports;
}

std::vector<unsigned> parse_client_counts(std::string_view list) {
  std::vector<unsigned> clients;
  const std::string named = plan_setting("clients");
  for (const std::string_view item : split_list(list, named)) {
    const std::uint64_t n = parse_positive(item, named);
    if (n > 1'000'000) throw setup_error(fmt::format("{}: {} is too many clients", named, n));
    clients.push_back(static_cast<unsigned>(n));
  }
  reject_repeats<unsigned>(clients, named, [](const unsigned& n) { return std::to_string(n); });
  return clients;
}

std::vector<std::uint64_t> parse_queries_per_connection_list(std::string_view list) {
  std::vector<std::uint64_t> values;
  const std::string named = plan_setting("queries_per_connection");
  for (const std::string_view item : split_list(list, named)) {
    values.push_back(parse_queries_per_connection(item));
  }
  reject_repeats<std::uint64_t>(values, named, queries_per_connection_name);
  return values;
}

std::vector<std::uint64_t> parse_distinct_sources_list(std::string_view list) {
  std::vector<std::uint64_t> values;
  const std::string named = plan_setting("distinct_sources");
  for (const std::string_view item : split_list(list, named)) {
    const std::uint64_t n = parse_positive(item, named);
    if (n > connection_settings::max_distinct_sources) {
      throw setup_error(fmt::format("{}: {} is more than {}", named, n,
                                    connection_settings::max_distinct_sources));
    }
    values.push_back(n);
  }
  reject_repeats<std::uint64_t>(values, named,
                                [](const std::uint64_t& n) { return std::to_string(n); });
  return values;
}

std::string queries_per_connection_name(std::uint64_t queries_per_connection) {
  return queries_per_connection == 0 ? "unlimited" : std::to_string(queries_per_connection);
}

std::vector<sweep_transport> every_sweep_transport(tls_backend backend) {
  std::vector<sweep_transport> transports;
  for (const transport_traits& t : all_transports()) {
    if (!t.compiled) continue;
    std::optional<tls_backend> library;
    if (t.has_tls) library = t.gnutls_only ? tls_backend::gnutls : backend;
    transports.push_back({t.kind, library});
  }
  return transports;
}

void apply_preset(sweep_plan& plan, std::string_view name) {
  const auto every = every_sweep_transport(plan.base.tls.backend);
  if (name == "load") {
    plan.transports = every;
    plan.clients = {1, 2, 4, 8, 16};
    plan.queries_per_connection = {0};
    plan.repeats = 3;
    plan.duration_seconds = 5;
    plan.pause_seconds = 1;
  } else if (name == "amortization") {
    plan.transports.clear();
    std::copy_if(every.begin(), every.end(), std::back_inserter(plan.transports),
                 [](const sweep_transport& t) { return traits_of(t.transport).has_connections; });
    plan.clients = {8};
    plan.queries_per_connection = {1,   2,    5,    10,   20,    50,    100, 200,
                                   500, 1000, 2000, 5000, 10000, 20000, 0};
    plan.repeats = 3;
    plan.duration_seconds = 3;
    plan.pause_seconds = 1;
  } else {
    throw setup_error(
        fmt::format("{}: \"{}\" is not load or amortization", setting("apply_preset::name"), name));
  }
}

sweep_target parse_sweep_target(std::string_view text) {
  const std::string targets = plan_setting("targets");
  const std::size_t equals = text.find('=');
  if (equals == std::string_view::npos || equals == 0) {
    throw setup_error(fmt::format(
        "{}: \"{}\" is not NAME=HOST[:PORT][,tls=PORT][,doh=PORT][,doq=PORT][,pid=PID] (a name "
        "is needed)",
        targets, text));
  }
  sweep_target target;
  target.name = std::string(text.substr(0, equals));
  if (target.name.find_first_of(",\"") != std::string::npos) {
    throw setup_error(
        fmt::format("{}: the name \"{}\" has a comma or a quote", targets, target.name));
  }
  const auto items = split_list(text.substr(equals + 1), targets);
  const std::string flag = fmt::format("{} {}", targets, target.name);
  const endpoint where = parse_endpoint(items.front(), 53, flag);
  target.server = where.address;
  // PORT is the DNS port: that of every transport whose default is 53 (UDP and TCP).
  for (const auto& traits : all_transports()) {
    if (traits.default_port == 53) target.ports[traits.kind] = where.port;
  }
  for (std::size_t i = 1; i < items.size(); ++i) {
    const std::size_t sign = items[i].find('=');
    const std::string_view key = items[i].substr(0, sign);
    const std::optional<transport_kind> transport = parse_transport(key);
    if (sign == std::string_view::npos || (!transport && key != "pid" && key != "cgroup")) {
      throw setup_error(
          fmt::format("{}: \"{}\" is not tls=PORT, doh=PORT, doq=PORT, pid=PID or cgroup=PATH",
                      flag, items[i]));
    }
    if (key == "cgroup") {
      if (sign + 1 == items[i].size()) throw setup_error(fmt::format("{}: cgroup= is empty", flag));
      target.monitor.cgroups.emplace_back(items[i].substr(sign + 1));
      continue;
    }
    if (key == "pid") {
      const std::uint64_t pid = parse_positive(items[i].substr(sign + 1), flag);
      if (pid > static_cast<std::uint64_t>(std::numeric_limits<int>::max())) {
        throw setup_error(fmt::format("{}: {} is not a process id", flag, pid));
      }
      target.monitor.pids.push_back(static_cast<int>(pid));
      continue;
    }
    const std::uint64_t port = parse_positive(items[i].substr(sign + 1), flag);
    if (port > 65535) throw setup_error(fmt::format("{}: {} is not a port", flag, port));
    target.ports[*transport] = static_cast<std::uint16_t>(port);
  }
  target.description = std::string(text);
  return target;
}

std::string describe(const sweep_point& point) {
  std::string text = point.target.empty() ? std::string() : point.target + ": ";
  text += fmt::format("{}, {}", sweep_transport_name(point.transport),
                      counted(point.clients, "client"));
  if (traits_of(point.transport.transport).has_connections) {
    text += point.queries_per_connection == 0
                ? ", persistent connections"
                : ", " + counted(point.queries_per_connection, "query", "queries") + "/connection";
  }
  if (point.distinct_sources != 0) {
    text += ", " + counted(point.distinct_sources, "distinct source");
  }
  return text;
}

std::string series_name(const std::string& target, std::uint64_t distinct_sources) {
  if (distinct_sources == 0) return target;
  const std::string sources = counted(distinct_sources, "source");
  return target.empty() ? sources : target + ", " + sources;
}

namespace {

// The rules a sweep's own settings follow (the load's are validate(load_spec)'s).
void check_plan(const sweep_plan& plan) {
  const std::string transports = plan_setting("transports");
  const std::string clients = plan_setting("clients");
  const std::string per_connection = plan_setting("queries_per_connection");
  if (plan.transports.empty()) throw setup_error(transports + ": no transport to sweep");
  if (plan.clients.empty()) throw setup_error(clients + ": no client count to sweep");
  if (plan.queries_per_connection.empty()) {
    throw setup_error(per_connection + ": no value to sweep");
  }
  reject_repeats<sweep_transport>(plan.transports, transports, sweep_transport_name);
  reject_repeats<unsigned>(plan.clients, clients,
                           [](const unsigned& n) { return std::to_string(n); });
  reject_repeats<std::uint64_t>(plan.queries_per_connection, per_connection,
                                queries_per_connection_name);
  reject_repeats<std::uint64_t>(plan.distinct_sources, plan_setting("distinct_sources"),
                                [](const std::uint64_t& n) { return std::to_string(n); });
  if (std::find(plan.distinct_sources.begin(), plan.distinct_sources.end(), 0u) !=
      plan.distinct_sources.end()) {
    throw setup_error(plan_setting("distinct_sources") + ": 0 is not a number of sources");
  }
  if (std::find(plan.clients.begin(), plan.clients.end(), 0u) != plan.clients.end()) {
    throw setup_error(clients + ": 0 is not a number of clients");
  }
  for (const auto& t : plan.transports) {
    if (t.backend.has_value() != traits_of(t.transport).has_tls) {
      throw setup_error(
          fmt::format("{}: {} cannot have a TLS library", transports, transport_name(t.transport)));
    }
  }
  if (plan.repeats == 0) throw setup_error(plan_setting("repeats") + " must be at least 1");
  if (plan.base.traffic.count == 0 && !(plan.duration_seconds > 0)) {
    throw setup_error(plan_setting("duration_seconds") + " must be greater than 0 seconds");
  }
  if (!(plan.pause_seconds >= 0))
    throw setup_error(plan_setting("pause_seconds") + " cannot be negative");
  const bool finite_values =
      std::any_of(plan.queries_per_connection.begin(), plan.queries_per_connection.end(),
                  [](std::uint64_t n) { return n != 0; });
  if (finite_values && !has_stream_transport(plan)) {
    throw setup_error(fmt::format(
        "{}: values other than 'unlimited' need a transport with connections ({}) in {}",
        per_connection, transport_names_where(&transport_traits::has_connections), transports));
  }
  if (plan.base.tls.early_data &&
      std::none_of(plan.transports.begin(), plan.transports.end(),
                   [](const sweep_transport& t) { return traits_of(t.transport).has_tls; })) {
    throw setup_error(fmt::format("{} applies to {}, none of which is in {}",
                                  setting("load_spec::tls.early_data"),
                                  transport_names_where(&transport_traits::has_tls), transports));
  }
  const std::string targets = plan_setting("targets");
  for (const auto& t : plan.targets) {
    if (t.name.empty()) throw setup_error(targets + ": a target has no name");
  }
  for (std::size_t i = 0; i < plan.targets.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (plan.targets[i].name == plan.targets[j].name) {
        throw setup_error(
            fmt::format("{}: the name {} appears twice", targets, plan.targets[i].name));
      }
    }
  }
}

}  // namespace

std::vector<sweep_point> expand(const sweep_plan& plan) {
  check_plan(plan);
  std::vector<sweep_point> grid;
  // Without the axis, one value: 0, as the base load gives.
  const std::vector<std::uint64_t> distinct =
      plan.distinct_sources.empty() ? std::vector<std::uint64_t>{0} : plan.distinct_sources;
  for (const auto& transport : plan.transports) {
    for (const unsigned clients : plan.clients) {
      const bool connections = traits_of(transport.transport).has_connections;
      for (const std::uint64_t n :
           connections ? plan.queries_per_connection : std::vector<std::uint64_t>{0}) {
        for (const std::uint64_t sources : distinct) {
          grid.push_back({transport, clients, n, {}, sources});
        }
      }
    }
  }
  if (plan.targets.empty()) return grid;
  // Point by point, every target in turn: a disturbance on the machine during a point hits
  // all targets alike instead of one target's whole grid.
  std::vector<sweep_point> points;
  for (const auto& point : grid) {
    for (const auto& t : plan.targets) {
      points.push_back(point);
      points.back().target = t.name;
    }
  }
  return points;
}

load_spec point_spec(const sweep_plan& plan, const sweep_point& point) {
  load_spec spec = plan.base;
  spec.target.transport = point.transport.transport;
  spec.target.port = plan.ports[spec.target.transport];
  for (const auto& t : plan.targets) {
    if (t.name != point.target) continue;
    spec.target.server = t.server;
    spec.target.port = t.ports[spec.target.transport];
    spec.monitor = t.monitor;
  }
  if (point.transport.backend) spec.tls.backend = *point.transport.backend;
  spec.traffic.clients = point.clients;
  spec.connections.queries_per_connection = point.queries_per_connection;
  if (point.distinct_sources != 0) spec.connections.distinct_sources = point.distinct_sources;
  // --idle concerns the transports with connections; UDP points of the same sweep run without.
  if (!traits_of(spec.target.transport).has_connections) spec.connections.idle_seconds = 0;
  // --early-data concerns the transports with TLS; the others run without.
  if (!traits_of(spec.target.transport).has_tls) spec.tls.early_data = false;
  // --xdp concerns the transports AF_XDP carries (UDP, TCP); the others go over kernel
  // sockets.
  if (!traits_of(spec.target.transport).xdp) {
    spec.generator.xdp_interface.clear();
    spec.generator.xdp_gateway_mac.clear();
  }
  spec.traffic.duration_seconds = plan.duration_seconds;
  spec.output.on_progress = nullptr;
  spec.output.on_interval = nullptr;
  return spec;
}

}  // namespace dnstransport
