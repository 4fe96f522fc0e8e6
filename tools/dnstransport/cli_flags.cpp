// The flags `run`, `sweep` and `search` share, in groups under headings of --help; what they
// mean for a load is make_load_spec's (cli_common.cpp).
#include <string>

#include "cli_common.hpp"

namespace dnstransport::cli {

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
    app.add_option("--distinct-sources", o.distinct_sources,
                   "How many distinct client addresses the server sees, whatever --clients: "
                   "the first N of --proxy-source when the queries carry PROXY headers (more "
                   "than the clients: each client claims its share in turn, the next for each "
                   "datagram and connection), else of --source (udp/doq: at most --clients, "
                   "each client keeps one socket). 0: as those flags give");
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
  app.add_option("--outstanding", o.outstanding,
                 "Queries in flight per client (a query list with fewer distinct questions tells "
                 "their queries apart by the name's letter case, DNS 0x20)")
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
  app.add_option("--xdp", o.xdp_interface,
                 "udp, tcp: send and receive from AF_XDP sockets on this network interface "
                 "(e.g. eth0), past the kernel's UDP and TCP stacks: an XDP program attached for "
                 "the run steers the server's answers to a socket per queue of the interface; "
                 "each worker thread (--threads, at most the interface's queues; tcp: 1) sends "
                 "through a queue of its own and the queues are read by the threads still "
                 "running; answers are checked and timed as over kernel sockets. tcp: each "
                 "connection's handshake, retransmissions and FIN or RST (--close) run in user "
                 "space; counted as over the kernel. "
                 "Needs root. A client's frames go from its --source address (default: the "
                 "kernel's for the server) and a source port of its own (tcp: one per "
                 "connection, used again once it has closed)");
  app.add_option("--xdp-gateway-mac", o.xdp_gateway_mac,
                 "With --xdp: the MAC address to send the frames to (the server's, or the "
                 "gateway's to it), e.g. 02:00:00:00:00:01. Default: the server's, from the "
                 "kernel's neighbour table (the server on the interface's link)");
}

void add_connection_options(CLI::App& app, run_options& o) {
  app.add_option("--close", o.close,
                 "How tcp/tls connections are closed: fin (graceful) or rst (SO_LINGER 0)")
      ->capture_default_str();
  app.add_option(
         "--source", o.sources,
         "Source addresses for client sockets: addresses and CIDR ranges, comma-separated "
         "(127.0.0.0/16, fd00::/112; a range's hosts, as many as there are clients). They must "
         "be this machine's (all of 127.0.0.0/8 is; `ip -6 route add local fd00::/112 dev lo` "
         "and sysctl net.ipv6.ip_nonlocal_bind=1 make an IPv6 range usable). Default for "
         "tcp/tls/doh to 127.0.0.1: 127.0.0.1-127.0.0.16, taken in turn to multiply "
         "ephemeral ports (127.0.0.1-127.0.0.4 with "
         "--tcp-fastopen, as many as the kernel keeps Fast Open cookies for)")
      ->delimiter(',');
  app.add_option("--source-mode", o.source_mode,
                 "How clients take the --source addresses: per-client (each client one "
                 "address for all its connections, as a server's per-client limits see real "
                 "clients; needs as many addresses as clients), round-robin (in turn: by "
                 "client over udp/doq, by connection over tcp/tls/doh) or auto (per-client "
                 "when there are enough)")
      ->capture_default_str();
  app.add_option("--proxy-protocol", o.proxy_protocol,
                 "Put a PROXY protocol header before the queries, as a load balancer in front "
                 "of the server does: v2 (binary; before each UDP datagram and at the start of "
                 "each tcp/tls/doh connection, before TLS) or v1 (a line of text; tcp/tls/doh "
                 "only). Each client claims an address of --proxy-source; the server must "
                 "trust this machine's (dnsdist: setProxyProtocolACL). Not over doq")
      ->capture_default_str();
  app.add_option("--proxy-source", o.proxy_sources,
                 "The client addresses the PROXY headers carry: addresses and CIDR ranges, "
                 "IPv4 or IPv6, comma-separated (10.0.0.0/8); client i claims the i-th, or "
                 "one drawn at random (--proxy-source-order)")
      ->delimiter(',');
  app.add_option("--proxy-source-order", o.proxy_source_order,
                 "in-order (client i the i-th address; fewer addresses than clients are shared "
                 "in turn) or random (each client an address drawn from the ranges with "
                 "--seed: the same draw every run)")
      ->capture_default_str();
  app.add_option("--proxy-tlv", o.proxy_tlvs,
                 "A TLV every v2 header carries, TYPE=HEX (type 0-255 or 0xNN, value in hex), "
                 "e.g. 0x04=00 (PP2_TYPE_NOOP); repeat or comma-separate for several")
      ->delimiter(',');
  app.add_flag("--proxy-inside-tls", o.proxy_inside_tls,
               "tls/doh: send the PROXY header as the first octets inside the TLS session, "
               "after the handshake, where unbound and dnsdist read it; by default it goes "
               "before the handshake, in clear, as HAProxy sends it and the built-in responder "
               "reads it");
  app.add_option("--seed", o.seed,
                 "Seed of the random draws (--proxy-source-order random, --ecs-mode per-query)")
      ->capture_default_str();
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
                 "Coalesced receiving: a client whose wake-up brought answers while 8 or more "
                 "queries are in flight reads again after a short delay instead of waiting for "
                 "its socket: fewer wake-ups and system calls per answer under load. The delay "
                 "is at most this many microseconds and at most 1/20 of the client's recent "
                 "latency (none under 10 us): latencies (the kernel's receive stamps) move by "
                 "at most 5 %. Default: 1000 with --rate or a capture's timing (queries leave "
                 "on a schedule), off in a closed loop, where the queries that replace a "
                 "delayed read's answers would leave together and change the server's load. "
                 "0: off, every read waits for its socket");
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
  app.add_option("--ecs", o.ecs,
                 "CIDR[/SOURCE-PREFIX]: EDNS Client Subnet (RFC 7871) in every query, as a "
                 "resolver in front of many clients sends it: subnets of SOURCE-PREFIX bits "
                 "(default 24 for IPv4, 56 for IPv6) from the range CIDR, e.g. 10.0.0.0/8/24 "
                 "(65,536 subnets of /24). The run reports the share of answers that echoed "
                 "the query's subnet and their scope prefixes; an answer that echoes another "
                 "subnet is mismatched (client subnet wrong)");
  app.add_option("--ecs-mode", o.ecs_mode,
                 "per-client (client i carries the i-th subnet in all its queries) or "
                 "per-query (each query a subnet drawn from the range with --seed)")
      ->capture_default_str();
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
  app.add_option("--server-cost-answer-us", o.server_cost_answer_us,
                 "Built-in responder: microseconds of CPU spent per answer on top of its own "
                 "(serve --cost-answer-us), a known cost to check the sweep's cost model "
                 "against; not a realistic server (0: none)")
      ->check(CLI::Range(0.0, 1e6));
  app.add_option("--server-cost-handshake-us", o.server_cost_handshake_us,
                 "Built-in responder: microseconds of CPU spent per TCP connection accepted and "
                 "per completed TLS or QUIC handshake (serve --cost-handshake-us; 0: none)")
      ->check(CLI::Range(0.0, 1e6));
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

}  // namespace dnstransport::cli
