#include "cli_common.hpp"

#include <signal.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include <dnstransport/error.hpp>
#include <dnstransport/query_source.hpp>

namespace dnstransport::cli {

std::atomic<bool> stop_requested{false};
std::atomic<int> stop_signal{0};
std::shared_ptr<load_group> job_group;

bool secondary_rank() noexcept {
  return job_group && job_group->rank() != 0;
}

void require_server_under_mpirun(bool server_given) {
  if (job_group && !server_given) {
    throw setup_error(
        "under mpirun every rank loads the same server: give --server (start one with "
        "`dnstransport serve`, several sharing a port for a large load); a built-in responder "
        "would be one per rank");
  }
}

namespace {

void on_signal(int signal_number) {
  if (stop_requested.load() && signal_number == SIGINT) _exit(exit_interrupted);
  stop_signal.store(signal_number);
  stop_requested.store(true);
}

tls_version version_or_throw(const std::string& text, const char* flag) {
  const auto v = parse_tls_version(text);
  if (!v)
    throw setup_error(fmt::format("{}: \"{}\" is not a TLS version (1.2 or 1.3)", flag, text));
  return *v;
}

}  // namespace

void install_signal_handlers() {
  struct sigaction handler {};
  handler.sa_handler = on_signal;
  sigemptyset(&handler.sa_mask);
  sigaction(SIGINT, &handler, nullptr);
  sigaction(SIGTERM, &handler, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

double idle_seconds_of(const run_options& o) {
  if (!o.idle) return 0;
  if (!(*o.idle > 0)) {
    throw setup_error(fmt::format("--idle must be a positive number of seconds (got {})", *o.idle));
  }
  return *o.idle;
}

query_file_format parse_query_format(const std::string& text) {
  if (text == "auto") return query_file_format::automatic;
  if (text == "text") return query_file_format::text;
  if (text == "wire") return query_file_format::wire;
  if (text == "pcap") return query_file_format::pcap;
  throw setup_error(fmt::format("--query-format: \"{}\" is not auto, text, wire or pcap", text));
}

pcap_options pcap_options_of(const std::vector<std::uint16_t>& ports) {
  pcap_options options;
  if (!ports.empty()) options.ports = ports;
  if (std::find(options.ports.begin(), options.ports.end(), 0) != options.ports.end()) {
    throw setup_error("--pcap-port: 0 is not a port DNS is sent to");
  }
  return options;
}

namespace {

// The query set, from --queries (a capture: with how to replay it) or the built-in set.
void set_queries(load_spec& spec, const run_options& o, const query_options& query) {
  query_file_format format = parse_query_format(o.query_format);
  if (!o.queries_file.empty() && format == query_file_format::automatic) {
    format = query_file_format_of(o.queries_file);
  }
  const bool capture = !o.queries_file.empty() && format == query_file_format::pcap;
  if (!capture) {
    if (!o.pcap_ports.empty())
      throw setup_error("--pcap-port applies to a capture (--queries FILE.pcap)");
    if (!o.replay.empty()) throw setup_error("--replay applies to a capture (--queries FILE.pcap)");
    if (o.speed != 1) throw setup_error("--speed applies to --replay timing");
    spec.traffic.queries = std::make_shared<const query_set>(
        o.queries_file.empty() ? default_queries(query)
                               : load_query_file(o.queries_file, format, query));
    return;
  }
  const auto replay = parse_replay_mode(o.replay.empty() ? "fast" : o.replay);
  if (!replay) throw setup_error(fmt::format("--replay: \"{}\" is not fast or timing", o.replay));
  auto read = std::make_shared<const pcap_capture>(
      read_pcap(o.queries_file, pcap_options_of(o.pcap_ports)));
  spec.traffic.queries = std::shared_ptr<const query_set>(read, &read->queries);
  spec.traffic.capture = read;
  spec.traffic.replay = *replay;
  spec.traffic.replay_speed = o.speed;
  if (*replay != replay_mode::timing) {
    if (o.speed != 1) throw setup_error("--speed applies to --replay timing");
    return;
  }
  if (o.clients_given && o.clients != read->sources.size()) {
    throw setup_error(fmt::format(
        "--clients {}: with --replay timing each source address of the capture is one client, "
        "and {} has {}; leave --clients out",
        o.clients, o.queries_file, read->sources.size()));
  }
  spec.traffic.clients = static_cast<unsigned>(read->sources.size());
  if (!o.duration_given) spec.traffic.duration_seconds = 0;
}

}  // namespace

namespace {

void set_target(load_spec& spec, const run_options& o) {
  spec.group = job_group;
  spec.output.label = o.label;
  const auto transport = parse_transport(o.transport);
  if (!transport) {
    std::vector<std::string_view> names;
    for (const auto& t : all_transports()) names.push_back(t.name);
    throw setup_error(
        fmt::format("--transport: \"{}\" is not one of {}", o.transport, fmt::join(names, ", ")));
  }
  spec.target.transport = *transport;
  if (!o.server.empty()) {
    const endpoint where =
        parse_endpoint(o.server, traits_of(spec.target.transport).default_port, "--server");
    spec.target.server = where.address;
    spec.target.port = where.port;
    if (spec.target.port == 0)
      throw setup_error("--server: port 0 is not a port a server listens on");
  }
}

void set_pace(load_spec& spec, const run_options& o) {
  spec.traffic.clients = o.clients;
  spec.traffic.outstanding = o.outstanding;
  spec.traffic.duration_seconds = o.duration;
  spec.traffic.count = o.count;
  spec.traffic.timeout_seconds = o.timeout;
  spec.traffic.warmup_seconds = o.warmup;
  spec.traffic.rate = o.rate;
  spec.traffic.client_rate = o.client_rate;
  spec.connections.idle_seconds = idle_seconds_of(o);
  if (!o.arrivals.empty()) {
    const auto mode = parse_arrival_mode(o.arrivals);
    if (!mode) {
      throw setup_error(
          fmt::format("--arrivals: \"{}\" is not constant, poisson or closed", o.arrivals));
    }
    if (*mode != arrival_mode::closed && !(o.rate > 0) && !(o.client_rate > 0) &&
        !o.rates_searched) {
      throw setup_error(fmt::format(
          "--arrivals {} needs --rate or --client-rate (queries per second to schedule)",
          o.arrivals));
    }
    spec.traffic.arrivals = *mode;
  }
  spec.output.interval_seconds = o.interval;
  spec.generator.threads = o.threads;
  if (!o.cpus.empty()) spec.generator.cpus = parse_cpu_list(o.cpus, "--cpus");
  spec.generator.xdp_interface = o.xdp_interface;
  spec.generator.xdp_gateway_mac = o.xdp_gateway_mac;
}

void set_connections(load_spec& spec, const run_options& o) {
  spec.connections.queries_per_connection = parse_queries_per_connection(o.queries_per_connection);
  if (o.close == "fin") {
    spec.connections.close = close_mode::fin;
  } else if (o.close == "rst") {
    spec.connections.close = close_mode::rst;
  } else {
    throw setup_error(fmt::format("--close: \"{}\" is not fin or rst", o.close));
  }
  spec.connections.sources = o.sources;
  spec.connections.distinct_sources = o.distinct_sources;
  const auto mode = parse_source_mode(o.source_mode);
  if (!mode) {
    throw setup_error(
        fmt::format("--source-mode: \"{}\" is not auto, per-client or round-robin", o.source_mode));
  }
  spec.connections.source_mode = *mode;
  set_proxy(spec.connections.proxy, o);
  set_client_subnet(spec.traffic.client_subnet, o);
  spec.connections.tcp_fastopen = o.tcp_fastopen;
  spec.connections.tcp_nodelay = !o.no_nodelay;
  spec.generator.gather_writes = !o.one_write_per_query;
  spec.generator.coalesce_us = o.coalesce_us;
  if (o.tc_retry == "tcp") {
    spec.traffic.tc_retry_tcp = true;
  } else if (o.tc_retry != "none") {
    throw setup_error(fmt::format("--tc-retry: \"{}\" is not none or tcp", o.tc_retry));
  }
}

void set_edns_and_queries(load_spec& spec, const run_options& o) {
  query_options query;
  query.recursion_desired = !o.no_rd;
  query.edns.enabled = o.edns || o.dnssec_ok;
  query.edns.dnssec_ok = o.dnssec_ok;
  if (o.edns_payload < 512 || o.edns_payload > 65535) {
    throw setup_error("--edns-payload must be between 512 and 65535");
  }
  query.edns.udp_payload_size = static_cast<std::uint16_t>(o.edns_payload);
  spec.traffic.edns_keepalive = o.edns_keepalive;
  if (!o.edns_padding.empty()) spec.traffic.edns_padding_block = parse_edns_padding(o.edns_padding);
  spec.connections.honour_keepalive = o.honour_keepalive;
  set_queries(spec, o, query);
}

void set_tls(load_spec& spec, const run_options& o) {
  const std::string backend_name = !o.tls_backend.empty()                         ? o.tls_backend
                                   : traits_of(spec.target.transport).gnutls_only ? "gnutls"
                                                                                  : "openssl";
  const auto backend = parse_tls_backend(backend_name);
  if (!backend) {
    throw setup_error(fmt::format("--tls-backend: \"{}\" is not openssl or gnutls", o.tls_backend));
  }
  spec.tls.backend = *backend;
  if (!o.tls_version.empty()) {
    spec.tls.min_version = spec.tls.max_version = version_or_throw(o.tls_version, "--tls-version");
    // The library's messages about either bound name the flag given.
    name_setting_as("load_spec::tls.min_version", "--tls-version");
    name_setting_as("load_spec::tls.max_version", "--tls-version");
  }
  if (!o.tls_min_version.empty()) {
    spec.tls.min_version = version_or_throw(o.tls_min_version, "--tls-min-version");
    name_setting_as("load_spec::tls.min_version", "--tls-min-version");
  }
  if (!o.tls_max_version.empty()) {
    spec.tls.max_version = version_or_throw(o.tls_max_version, "--tls-max-version");
    name_setting_as("load_spec::tls.max_version", "--tls-max-version");
  }
  spec.tls.resume = o.tls_resume;
  spec.tls.early_data = o.early_data;
  spec.tls.server_name = o.sni;
  spec.tls.alpn.clear();
  if (!o.alpn.empty()) spec.tls.alpn.push_back(o.alpn);
  if (!o.server.empty() && o.server_process) {
    throw setup_error("--server-process applies to the built-in responder, not to a --server");
  }
  if (o.verify && o.insecure) throw setup_error("--verify and --insecure contradict each other");
  spec.tls.verify = o.verify;
  spec.tls.ca_file = o.ca_file;
  spec.tls.priority = o.tls_priority;
  const auto method = parse_doh_method(o.doh_method);
  if (!method) {
    throw setup_error(fmt::format("--doh-method: \"{}\" is not post or get", o.doh_method));
  }
  spec.target.doh_request = *method;
  spec.target.doh_path = o.doh_path;
}

void set_monitoring(load_spec& spec, const run_options& o) {
  spec.monitor.pids = o.monitor_pids;
  spec.monitor.cgroups = o.monitor_cgroups;
  if (o.monitor_commands.size() > 1) {
    throw setup_error(fmt::format(
        "--monitor-command: given {} times; a run reads one command (give it several --pid)",
        o.monitor_commands.size()));
  }
  if (!o.monitor_commands.empty()) {
    spec.monitor.command = o.monitor_commands.front();
    if (spec.monitor.command.find_first_not_of(" \t") == std::string::npos) {
      throw setup_error("--monitor-command: the command is empty");
    }
  }
}

}  // namespace

load_spec make_load_spec(const run_options& o) {
  load_spec spec;
  set_target(spec, o);
  set_pace(spec, o);
  set_connections(spec, o);
  set_edns_and_queries(spec, o);
  set_tls(spec, o);
  set_monitoring(spec, o);
  spec.output.setting_name = flag_of_setting;
  validate(spec);
  return spec;
}

std::unique_ptr<builtin_responder> start_builtin_server(const run_options& o, load_spec& spec,
                                                        std::vector<transport_kind> transports) {
  server_options s;
  // Clients that send PROXY headers get a responder that reads them (before TLS).
  if (spec.connections.proxy.version != proxy_protocol::none) {
    s.set_proxy_protocol(proxy_policy::required);
  }
  if (spec.connections.proxy.inside_tls) {
    throw setup_error(
        "--proxy-inside-tls: the built-in responder reads PROXY headers before TLS only; give "
        "--server (dnsdist reads them inside TLS)");
  }
  s.threads = o.server_threads;
  const auto mode = parse_answer_mode(o.server_mode);
  if (!mode)
    throw setup_error(fmt::format("--server-mode: \"{}\" is not answer or echo", o.server_mode));
  s.mode = *mode;
  if (!o.server_cpus.empty()) {
    s.cpus = parse_cpu_list(o.server_cpus, "--server-cpus");
  } else if (!spec.generator.cpus.empty()) {
    // Keep the responder off the client's CPUs when there is a CPU left for it.
    const unsigned n = std::thread::hardware_concurrency();
    for (unsigned c = 0; c < n; ++c) {
      if (std::find(spec.generator.cpus.begin(), spec.generator.cpus.end(), static_cast<int>(c)) ==
          spec.generator.cpus.end()) {
        s.cpus.push_back(static_cast<int>(c));
      }
    }
  }
  const std::string backend_name = !o.server_tls_backend.empty() ? o.server_tls_backend
                                   : !o.tls_backend.empty()      ? o.tls_backend
                                                                 : "openssl";
  const auto backend = parse_tls_backend(backend_name);
  if (!backend) {
    throw setup_error(
        fmt::format("--server-tls-backend: \"{}\" is not openssl or gnutls", backend_name));
  }
  s.tls_options.backend = *backend;
  for (const transport_kind t : transports) s.listen[t] = endpoint{"127.0.0.1", 0};
  s.doh_path = spec.target.doh_path;
  s.cost_answer_us = o.server_cost_answer_us;
  s.cost_handshake_us = o.server_cost_handshake_us;
  auto responder = o.server_process ? builtin_responder::start_process(s)
                                    : std::make_unique<builtin_responder>(s);
  spec.target.server = "127.0.0.1";
  spec.target.port = responder->port(spec.target.transport);
  if (responder->pid() > 0) spec.monitor.pids.push_back(responder->pid());
  return responder;
}

std::string command_line(int argc, char** argv) {
  std::string line;
  for (int i = 0; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (i == 0) arg = arg.substr(arg.rfind('/') + 1);
    const bool plain = !arg.empty() && arg.find_first_not_of(
                                           "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                           "0123456789-_=.,:/@+%") == std::string_view::npos;
    if (!line.empty()) line += ' ';
    if (plain) {
      line += arg;
      continue;
    }
    line += '\'';
    for (const char c : arg) line += c == '\'' ? std::string("'\\''") : std::string(1, c);
    line += '\'';
  }
  return line;
}

bool stderr_is_terminal() {
  return isatty(STDERR_FILENO) == 1;
}

void progress_printer::operator()(const load_progress& p, const std::string& prefix) {
  if (!enabled_) return;
  const std::string time =
      p.planned_seconds > 0 ? fmt::format("{:5.1f}/{:.0f} s", p.elapsed_seconds, p.planned_seconds)
                            : fmt::format("{:5.1f} s", p.elapsed_seconds);
  fmt::print(stderr, "\r{}[{}] sent {}  answered {}  lost {}  {:.0f} queries/s   ", prefix, time,
             p.queries_sent, p.responses_received, p.lost, p.recent_qps);
  std::fflush(stderr);
  printed_ = true;
}

void progress_printer::finish() {
  if (printed_) fmt::print(stderr, "\r\033[K");
  printed_ = false;
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  if (secondary_rank()) return;  // rank 0 writes what every rank measured
  const std::filesystem::path temporary = path.string() + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out)
      throw setup_error(
          fmt::format("cannot write \"{}\": {}", path.string(), std::strerror(errno)));
    out << text;
    out.close();
    if (!out) throw setup_error(fmt::format("cannot write \"{}\"", path.string()));
  }
  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);
  if (ec) throw setup_error(fmt::format("cannot write \"{}\": {}", path.string(), ec.message()));
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw setup_error(fmt::format("cannot read \"{}\": {}", path.string(), std::strerror(errno)));
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

}  // namespace dnstransport::cli
