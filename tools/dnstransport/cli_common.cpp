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
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

namespace {

// Adds what `add` adds under a heading of --help.
template <typename Add>
void in_group(CLI::App& app, const std::string& group, Add add) {
  const std::size_t before = app.get_options().size();
  add();
  const auto options = app.get_options();
  for (std::size_t i = before; i < options.size(); ++i) options[i]->group(group);
}

void add_target_options(CLI::App& app, run_options& o, bool with_axes) {
  app.add_option(
      "--server", o.server,
      "Server to load, HOST[:PORT] or [IPv6]:PORT (port 53 by default; 853 for tls). "
      "Without it the built-in responder is started on 127.0.0.1, in this process (or as a "
      "process of its own with --server-process).");
  app.add_option("--label", o.label,
                 "A name for this result (e.g. the server and its version), kept in the JSON; "
                 "`report` names the result by it (by the file name when absent)");
  if (with_axes) {
    app.add_option("--transport", o.transport,
                   "udp, tcp, tls (DNS over TLS, port 853), doh (DNS over HTTPS on HTTP/2, "
                   "port 443) or doq (DNS over QUIC, UDP port 853)")
        ->capture_default_str();
    app.add_option(
           "--queries-per-connection", o.queries_per_connection,
           "tcp/tls/doh/doq: queries answered on a connection before it is replaced; 1 = a new "
           "connection per query, 'unlimited' keeps it")
        ->capture_default_str();
    app.add_option("--clients", o.clients,
                   "Concurrent clients; each has its own socket (--replay timing: one per source "
                   "address of the capture)")
        ->capture_default_str()
        ->each([&o](const std::string&) { o.clients_given = true; });
  }
}

void add_query_options(CLI::App& app, run_options& o) {
  app.add_option("--queries", o.queries_file,
                 "Query file: dnsperf text format ('name TYPE' per line), length-prefixed wire "
                 "format (.raw/.wire/.bin) or a packet capture (.pcap/.pcapng, or recognised by "
                 "its magic number) whose DNS queries are used. Default: a built-in set of ~300 "
                 "realistic queries");
  app.add_option("--query-format", o.query_format, "auto, text, wire or pcap")
      ->capture_default_str();
  app.add_option("--pcap-port", o.pcap_ports,
                 "With a capture: a UDP/TCP port that carries DNS (repeat it or give a "
                 "comma-separated list; packets from or to these ports are read as DNS). "
                 "Default: 53")
      ->delimiter(',');
  app.add_option("--replay", o.replay,
                 "With a capture: fast (the default: its queries are the query list, cycled by "
                 "--clients clients at the run's own pace) or timing (each source address of the "
                 "capture is one client, sending its queries at their captured times; the run "
                 "ends when the capture does, or at --duration if given)");
  app.add_option("--speed", o.speed,
                 "--replay timing: how much faster than captured the queries are sent (2: twice "
                 "as fast, 0.5: half as fast)")
      ->capture_default_str();
}

void add_pace_options(CLI::App& app, run_options& o) {
  app.add_option("--outstanding", o.outstanding, "Queries in flight per client")
      ->capture_default_str();
  app.add_option("--duration", o.duration,
                 "Seconds to measure (after --warmup); --replay timing: the whole capture "
                 "unless given")
      ->capture_default_str()
      ->each([&o](const std::string&) { o.duration_given = true; });
  app.add_option("--count", o.count,
                 "Stop after this many measured queries (after --warmup) instead of a duration");
  app.add_option("--timeout", o.timeout, "Seconds before an unanswered query counts as lost")
      ->capture_default_str();
  app.add_option("--warmup", o.warmup, "Seconds of load before measuring starts")
      ->capture_default_str();
  app.add_option("--rate", o.rate,
                 "Queries per second in total, sent on a schedule that does not wait for answers "
                 "(open loop; latency runs from each query's scheduled time). 0: as fast as "
                 "answers come back (closed loop)")
      ->capture_default_str();
  app.add_option("--client-rate", o.client_rate,
                 "Queries per second of each client (a fraction for less than one: 0.2 = one "
                 "query every 5 s), open loop like --rate; the total is --clients times this. "
                 "Give --rate or --client-rate, not both. 0: not used")
      ->capture_default_str();
  app.add_option("--idle", o.idle,
                 "tcp/tls/doh/doq: seconds a client keeps a connection with nothing in flight "
                 "and nothing to send; then it closes it (counted as closed idle) and opens a "
                 "new one for its next query (resumed with --tls-resume). Checked every 10 ms. "
                 "Default: connections stay open (sweep: udp points run without)");
  app.add_option(
      "--arrivals", o.arrivals,
      "With --rate or --client-rate: constant (evenly spaced, the default), poisson (random gaps, "
      "as independent clients would send) or closed (the old closed loop: send "
      "when a slot is free, catch up in bursts, latency from the send)");
  app.add_option("--interval", o.interval,
                 "Seconds per row of the run's timeline (JSON \"timeline\": sent, answered, "
                 "lost, q/s, p50/p99 latency, connections, handshakes per interval); 0: none")
      ->capture_default_str();
  app.add_option("--threads", o.threads, "Worker threads; clients are spread over them")
      ->capture_default_str();
  app.add_option("--cpus", o.cpus, "Pin worker threads to these CPUs, e.g. 0 or 0,2-3");
}

void add_connection_options(CLI::App& app, run_options& o) {
  app.add_option("--close", o.close,
                 "How tcp/tls connections are closed: fin (graceful) or rst (SO_LINGER 0)")
      ->capture_default_str();
  app.add_option("--source", o.sources,
                 "Source addresses for client sockets (comma-separated). Default for tcp/tls to "
                 "127.0.0.1: 127.0.0.1-127.0.0.16, to multiply ephemeral ports")
      ->delimiter(',');
  app.add_flag("--tcp-fastopen", o.tcp_fastopen,
               "Send the first query in the SYN (TCP_FASTOPEN_CONNECT) where the kernel allows");
  app.add_flag("--no-nodelay", o.no_nodelay, "Leave Nagle's algorithm on (TCP_NODELAY off)");
  app.add_flag("--one-write-per-query", o.one_write_per_query,
               "One system call per query instead of sending all ready queries at once "
               "(tcp/tls: one gather write; udp: one sendmmsg of many datagrams)");
  app.add_option("--tc-retry", o.tc_retry,
                 "udp: what to do with a truncated (TC=1) answer: none (count it as truncated, "
                 "not answered) or tcp (retry the query over TCP to the same port, as a stub "
                 "resolver would; the retry's outcome is the query's)")
      ->capture_default_str();
  app.add_option("--coalesce-us", o.coalesce_us,
                 "udp, tcp, tls: coalesced receiving. A client whose read found fewer than 8 "
                 "answers while 8 or more are in flight reads again after this many "
                 "microseconds instead of waiting for its socket: fewer wake-ups and system "
                 "calls per answer. Answers are timed by the kernel's receive stamp either "
                 "way (udp: each datagram's, so the latency is unchanged; tcp, tls: the newest "
                 "segment's of a read, so a read is delayed by at most 1/20 of the client's "
                 "recent latency: percentiles move by at most 5 %; no delay under 10 us). "
                 "0: off")
      ->capture_default_str();
}

void add_edns_options(CLI::App& app, run_options& o) {
  app.add_flag("--edns", o.edns, "Add an EDNS0 OPT record to queries from text files");
  app.add_flag("--dnssec-ok", o.dnssec_ok, "Set the DO bit (implies --edns)");
  app.add_option("--edns-payload", o.edns_payload, "EDNS0 UDP payload size")->capture_default_str();
  app.add_flag("--no-rd", o.no_rd, "Clear the RD (recursion desired) bit in generated queries");
  app.add_flag("--edns-keepalive", o.edns_keepalive,
               "tcp/tls/doh: send edns-tcp-keepalive (RFC 7828) in every query (an OPT record is "
               "added where a query has none); the run reports the idle timeouts the answers "
               "advertise (lowest, highest). Refused for udp (RFC 7828) and doq (RFC 9250)");
  app.add_option("--edns-padding", o.edns_padding,
                 "block:N: pad every query (RFC 7830) to a multiple of N octets, 1 to 65535 (RFC "
                 "8467 recommends block:128); the run reports the share of answers that came "
                 "padded and their sizes. Meant for tls/doh/doq (a warning over udp/tcp). Default: "
                 "no padding");
  app.add_flag("--honour-keepalive", o.honour_keepalive,
               "With --edns-keepalive: a client closes its connection once it has been idle "
               "(nothing in flight, nothing to send) for the timeout the server advertised, "
               "and reconnects for its next query (table: closed idle; JSON: "
               "connections.closed_idle_keepalive)");
}

void add_tls_options(CLI::App& app, run_options& o) {
  app.add_option("--tls-backend", o.tls_backend,
                 "TLS library for tls and doh: openssl (default) or gnutls; doq runs on gnutls "
                 "only");
  app.add_option("--tls-version", o.tls_version, "Pin the TLS version: 1.2 or 1.3");
  app.add_option("--tls-min-version", o.tls_min_version, "Lowest TLS version offered");
  app.add_option("--tls-max-version", o.tls_max_version, "Highest TLS version offered");
  app.add_flag("--tls-resume", o.tls_resume,
               "Resume TLS sessions (tickets) when a client reconnects");
  app.add_flag("--early-data", o.early_data,
               "tls, doh, doq with --tls-resume: send the first queries of a resumed connection "
               "as TLS 1.3 early data (0-RTT) when the server's ticket allows it (refused 0-RTT "
               "queries are sent again after the handshake, counted once)");
  app.add_option("--sni", o.sni, "TLS server name (SNI, and the name verified)");
  app.add_option("--alpn", o.alpn, "tls: ALPN protocol offered ('' for none); doh always offers h2")
      ->capture_default_str();
  app.add_option("--doh-path", o.doh_path, "doh: the path of the server's DoH URI")
      ->capture_default_str();
  app.add_option("--doh-method", o.doh_method,
                 "doh: post (the query as the request body) or get (base64url in ?dns=)")
      ->capture_default_str();
  app.add_option("--ca-file", o.ca_file, "PEM trust anchors for --verify");
  app.add_flag("--verify", o.verify, "Verify the server certificate (off by default)");
  app.add_flag("--insecure", o.insecure, "Do not verify the server certificate (the default)");
  app.add_option("--tls-priority", o.tls_priority,
                 "Cipher list (OpenSSL) or priority string (GnuTLS), passed as given (GnuTLS "
                 "default: NORMAL with X25519 and AES-128-GCM first)");
}

void add_server_options(CLI::App& app, run_options& o) {
  app.add_option("--server-threads", o.server_threads, "Built-in responder: threads")
      ->capture_default_str();
  app.add_option("--server-cpus", o.server_cpus,
                 "Built-in responder: pin its threads to these CPUs (default: CPUs not in --cpus)");
  app.add_flag("--server-process", o.server_process,
               "Built-in responder: run it as a process of its own (this program's `serve`), "
               "pinned to --server-cpus and monitored like a real server, so that its CPU per "
               "answer is measured apart from the generator's");
  app.add_option("--monitor-pid", o.monitor_pids,
                 "A process of the server, on this machine, whose CPU, memory, descriptors, "
                 "threads and TCP connections are read from /proc during each run (repeat it "
                 "for several); gives server CPU per 1,000 answers")
      ->check(CLI::PositiveNumber);
  app.add_option("--monitor-cgroup", o.monitor_cgroups,
                 "A cgroup v2 directory of the server (e.g. "
                 "/sys/fs/cgroup/system.slice/unbound.service): its CPU (cpu.stat), memory "
                 "(memory.current) and the descriptors and threads of its processes, like "
                 "--monitor-pid (repeatable)");
  app.add_option("--monitor-command", o.monitor_commands,
                 "For a server on another machine: a command (run by /bin/sh for each run) "
                 "whose output is `dnstransport monitor` lines, e.g. \"ssh HOST dnstransport "
                 "monitor --pid 123 --port 853 --interval 0.5\"; its readings give the server's "
                 "CPU, memory and connections like --monitor-pid (sweep --target: "
                 "NAME=COMMAND, one per target)");
  app.add_option("--server-mode", o.server_mode, "Built-in responder: answer or echo")
      ->capture_default_str();
  app.add_option("--server-tls-backend", o.server_tls_backend,
                 "Built-in responder: TLS library (default: same as --tls-backend)");
}

void add_output_options(CLI::App& app, run_options& o) {
  app.add_flag("--quiet", o.quiet, "No progress line and no table, only the exit status/JSON");
  app.add_flag("--progress", o.progress, "Print progress even when stderr is not a terminal");
}

}  // namespace

void add_run_options(CLI::App& app, run_options& o, bool with_axes) {
  in_group(app, "Target and load", [&] { add_target_options(app, o, with_axes); });
  in_group(app, "Queries", [&] { add_query_options(app, o); });
  in_group(app, "Pace and length", [&] { add_pace_options(app, o); });
  in_group(app, "Sockets and connections", [&] { add_connection_options(app, o); });
  in_group(app, "EDNS", [&] { add_edns_options(app, o); });
  in_group(app, "TLS, DoH and DoQ", [&] { add_tls_options(app, o); });
  in_group(app, "Built-in responder and server monitoring", [&] { add_server_options(app, o); });
  in_group(app, "Output", [&] { add_output_options(app, o); });
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
    spec.queries = std::make_shared<const query_set>(
        o.queries_file.empty() ? default_queries(query)
                               : load_query_file(o.queries_file, format, query));
    return;
  }
  const auto replay = parse_replay_mode(o.replay.empty() ? "fast" : o.replay);
  if (!replay) throw setup_error(fmt::format("--replay: \"{}\" is not fast or timing", o.replay));
  auto read = std::make_shared<const pcap_capture>(
      read_pcap(o.queries_file, pcap_options_of(o.pcap_ports)));
  spec.queries = std::shared_ptr<const query_set>(read, &read->queries);
  spec.capture = read;
  spec.replay = *replay;
  spec.replay_speed = o.speed;
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
  spec.clients = static_cast<unsigned>(read->sources.size());
  if (!o.duration_given) spec.duration_seconds = 0;
}

}  // namespace

namespace {

void set_target(load_spec& spec, const run_options& o) {
  spec.group = job_group;
  spec.label = o.label;
  const auto transport = parse_transport(o.transport);
  if (!transport) {
    std::vector<std::string_view> names;
    for (const auto& t : all_transports()) names.push_back(t.name);
    throw setup_error(
        fmt::format("--transport: \"{}\" is not one of {}", o.transport, fmt::join(names, ", ")));
  }
  spec.transport = *transport;
  if (!o.server.empty()) {
    const endpoint where =
        parse_endpoint(o.server, traits_of(spec.transport).default_port, "--server");
    spec.server = where.address;
    spec.port = where.port;
    if (spec.port == 0) throw setup_error("--server: port 0 is not a port a server listens on");
  }
}

void set_pace(load_spec& spec, const run_options& o) {
  spec.clients = o.clients;
  spec.outstanding = o.outstanding;
  spec.duration_seconds = o.duration;
  spec.count = o.count;
  spec.timeout_seconds = o.timeout;
  spec.warmup_seconds = o.warmup;
  spec.rate = o.rate;
  spec.client_rate = o.client_rate;
  spec.idle_seconds = idle_seconds_of(o);
  if (!o.arrivals.empty()) {
    const auto mode = parse_arrival_mode(o.arrivals);
    if (!mode) {
      throw setup_error(
          fmt::format("--arrivals: \"{}\" is not constant, poisson or closed", o.arrivals));
    }
    if (*mode != arrival_mode::closed && !(o.rate > 0) && !(o.client_rate > 0)) {
      throw setup_error(fmt::format(
          "--arrivals {} needs --rate or --client-rate (queries per second to schedule)",
          o.arrivals));
    }
    spec.arrivals = *mode;
  }
  spec.interval_seconds = o.interval;
  spec.threads = o.threads;
  if (!o.cpus.empty()) spec.cpus = parse_cpu_list(o.cpus, "--cpus");
}

void set_connections(load_spec& spec, const run_options& o) {
  spec.queries_per_connection = parse_queries_per_connection(o.queries_per_connection);
  if (o.close == "fin") {
    spec.close = close_mode::fin;
  } else if (o.close == "rst") {
    spec.close = close_mode::rst;
  } else {
    throw setup_error(fmt::format("--close: \"{}\" is not fin or rst", o.close));
  }
  spec.sources = o.sources;
  spec.tcp_fastopen = o.tcp_fastopen;
  spec.tcp_nodelay = !o.no_nodelay;
  spec.gather_writes = !o.one_write_per_query;
  spec.coalesce_us = o.coalesce_us;
  if (o.tc_retry == "tcp") {
    spec.tc_retry_tcp = true;
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
  spec.edns_keepalive = o.edns_keepalive;
  if (!o.edns_padding.empty()) spec.edns_padding_block = parse_edns_padding(o.edns_padding);
  spec.honour_keepalive = o.honour_keepalive;
  set_queries(spec, o, query);
}

void set_tls(load_spec& spec, const run_options& o) {
  const std::string backend_name = !o.tls_backend.empty()                  ? o.tls_backend
                                   : traits_of(spec.transport).gnutls_only ? "gnutls"
                                                                           : "openssl";
  const auto backend = parse_tls_backend(backend_name);
  if (!backend) {
    throw setup_error(fmt::format("--tls-backend: \"{}\" is not openssl or gnutls", o.tls_backend));
  }
  spec.tls.backend = *backend;
  if (!o.tls_version.empty()) {
    spec.tls.min_version = spec.tls.max_version = version_or_throw(o.tls_version, "--tls-version");
  }
  if (!o.tls_min_version.empty()) {
    spec.tls.min_version = version_or_throw(o.tls_min_version, "--tls-min-version");
  }
  if (!o.tls_max_version.empty()) {
    spec.tls.max_version = version_or_throw(o.tls_max_version, "--tls-max-version");
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
  spec.doh_request = *method;
  spec.doh_path = o.doh_path;
}

void set_monitoring(load_spec& spec, const run_options& o) {
  spec.monitor_pids = o.monitor_pids;
  spec.monitor_cgroups = o.monitor_cgroups;
  if (o.monitor_commands.size() > 1) {
    throw setup_error(fmt::format(
        "--monitor-command: given {} times; a run reads one command (give it several --pid)",
        o.monitor_commands.size()));
  }
  if (!o.monitor_commands.empty()) {
    spec.monitor_command = o.monitor_commands.front();
    if (spec.monitor_command.find_first_not_of(" \t") == std::string::npos) {
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
  validate(spec);
  return spec;
}

std::unique_ptr<builtin_responder> start_builtin_server(const run_options& o, load_spec& spec,
                                                        std::vector<transport_kind> transports) {
  server_options s;
  s.threads = o.server_threads;
  const auto mode = parse_answer_mode(o.server_mode);
  if (!mode)
    throw setup_error(fmt::format("--server-mode: \"{}\" is not answer or echo", o.server_mode));
  s.mode = *mode;
  if (!o.server_cpus.empty()) {
    s.cpus = parse_cpu_list(o.server_cpus, "--server-cpus");
  } else if (!spec.cpus.empty()) {
    // Keep the responder off the client's CPUs when there is a CPU left for it.
    const unsigned n = std::thread::hardware_concurrency();
    for (unsigned c = 0; c < n; ++c) {
      if (std::find(spec.cpus.begin(), spec.cpus.end(), static_cast<int>(c)) == spec.cpus.end()) {
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
  s.doh_path = spec.doh_path;
  auto responder = o.server_process ? builtin_responder::start_process(s)
                                    : std::make_unique<builtin_responder>(s);
  spec.server = "127.0.0.1";
  spec.port = responder->port(spec.transport);
  if (responder->pid() > 0) spec.monitor_pids.push_back(responder->pid());
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
