#pragma once
/// \file
/// One measured load: N clients sending queries to one server over one transport for a
/// duration or a query count, and everything that was measured.

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <dnstransport/counts.hpp>
#include <dnstransport/error.hpp>
#include <dnstransport/histogram.hpp>
#include <dnstransport/monitor.hpp>
#include <dnstransport/pcap.hpp>
#include <dnstransport/query_source.hpp>
#include <dnstransport/tls.hpp>
#include <dnstransport/transport.hpp>

namespace dnstransport {

class load_group;

/// Queries per connection from its flag value: a positive number, or "unlimited" (or "0")
/// for 0. Throws setup_error naming --queries-per-connection otherwise.
std::uint64_t parse_queries_per_connection(std::string_view text);

/// Padding block size from `--edns-padding`'s value: "block:N" with N from 1 to 65535, or
/// "none" for 0. Throws setup_error naming --edns-padding otherwise.
std::uint16_t parse_edns_padding(std::string_view text);

/// How a DoH client sends its queries (RFC 8484 §4.1).
enum class doh_method {
  post,  ///< the query as the body, content-type application/dns-message
  get,   ///< the query base64url-encoded in the `dns` parameter (cacheable)
};

/// "post" or "get".
std::string_view doh_method_name(doh_method method) noexcept;
/// Method from "post"/"get" (any case); nothing otherwise.
std::optional<doh_method> parse_doh_method(std::string_view name) noexcept;

/// How queries are scheduled when load_spec::traffic.rate is set.
enum class arrival_mode {
  /// Open loop: evenly spaced sends at the rate, whatever the answers do; latency runs from
  /// each query's scheduled time.
  constant,
  /// Open loop: gaps drawn from an exponential distribution with the rate as its mean (a
  /// Poisson process per client), latency from the scheduled time.
  poisson,
  /// Closed loop: a client sends only when a slot is free and catches up in bursts when it
  /// fell behind; latency runs from the moment of sending. Without a rate, every run is
  /// closed-loop.
  closed,
  /// Open loop on a capture's clock (replay_mode::timing): each source address of the
  /// capture is one client, sending its queries at their captured times divided by the
  /// speed; latency from those times. Set by the replay, not by a rate.
  replay,
};

/// "constant", "poisson", "closed" or "replay".
std::string_view arrival_mode_name(arrival_mode mode) noexcept;
/// Mode from its name; nothing for an unknown one.
std::optional<arrival_mode> parse_arrival_mode(std::string_view name) noexcept;

/// How the queries of a packet capture (load_spec::traffic.capture) are sent (`--replay`).
enum class replay_mode {
  /// As a query list: every client cycles through the capture's queries, like any query
  /// file, at the pace the run asks for (closed loop, or --rate).
  fast,
  /// On the capture's clock: each source address of the capture is one client (one socket,
  /// one connection at a time), sending its own queries at their captured times, divided by
  /// load_spec::traffic.replay_speed. The run ends once every query was sent and answered or
  /// timed out (or at the duration, when one is set).
  timing,
};

/// "fast" or "timing".
std::string_view replay_mode_name(replay_mode mode) noexcept;
/// Mode from its name; nothing for an unknown one.
std::optional<replay_mode> parse_replay_mode(std::string_view name) noexcept;

/// How a client closes a TCP or TLS connection it is done with.
enum class close_mode {
  fin,  ///< graceful: TLS close_notify, then shutdown and close (FIN)
  rst,  ///< abortive: SO_LINGER 0, so the kernel sends RST and keeps no TIME_WAIT
};

/// How clients take their source addresses (connection_settings::sources).
enum class source_mode {
  /// per_client when the addresses given are at least as many as the clients, round_robin
  /// otherwise (and for the loopback addresses taken when none are given).
  automatic,
  /// Client i binds the i-th address for all its connections, so a server sees one address
  /// per client (its rate limits, ACLs and per-client limits apply per client); fewer
  /// addresses than clients is an error.
  per_client,
  /// The addresses taken in turn: client by client over UDP and DoQ (each client has one
  /// socket), connection by connection over TCP, DoT and DoH (the ephemeral port space
  /// multiplied by the addresses, for runs at one query per connection).
  round_robin,
};

/// "auto", "per-client" or "round-robin".
std::string_view source_mode_name(source_mode mode) noexcept;
/// Mode from its name; nothing for an unknown one.
std::optional<source_mode> parse_source_mode(std::string_view name) noexcept;

/// The PROXY protocol version a load's clients speak (connection_settings::proxy).
enum class proxy_protocol {
  none,  ///< no header
  /// One line of text at the start of each TCP connection (TCP, DoT, DoH; no UDP).
  v1,
  /// A binary header before each UDP datagram and at the start of each TCP connection,
  /// before the TLS handshake (UDP, TCP, DoT, DoH).
  v2,
};

/// "none", "v1" or "v2".
std::string_view proxy_protocol_name(proxy_protocol version) noexcept;
/// Version from its name ("v1", "v2", "none"; "1" and "2" too); nothing for another.
std::optional<proxy_protocol> parse_proxy_protocol(std::string_view name) noexcept;

/// Headers of the PROXY protocol (HAProxy's specification) that the clients put before
/// their queries, as a load balancer or proxy in front of the server does: each client
/// claims an address of its own, so a server that trusts the header (dnsdist's
/// setProxyProtocolACL, unbound's proxy-protocol-port, knot's proxy-allowlist,
/// the PowerDNS Recursor's proxy-protocol-from) applies its
/// per-client rules (rate limits, ACLs, views) as to that many clients.
struct proxy_settings {
  proxy_protocol version = proxy_protocol::none;  ///< none: no header
  /// The client addresses the headers carry: addresses and CIDR ranges, IPv4 or IPv6
  /// (either family, whatever the server's), read in order; client i carries the i-th (the
  /// addresses are shared in turn when there are fewer than clients). Needed with a version.
  std::vector<std::string> sources;
  /// Each client's address drawn at random from the ranges instead (the same for every run
  /// with the same `seed`; two clients may draw the same address).
  bool random = false;
  std::uint64_t seed = 1;  ///< of the random draws
  /// Type-length-value entries every version 2 header carries (type, value octets).
  std::vector<std::pair<std::uint8_t, std::vector<std::uint8_t>>> tlvs;
  /// DoT and DoH: the header is the first octets inside the TLS session, right after the
  /// handshake, where unbound (1.17) and dnsdist read it (dnsdist's proxyProtocolOutsideTLS,
  /// false by default; before 1.9 the only place it reads one). false: before the TLS
  /// handshake, in clear, as HAProxy sends it to its backends and the built-in responder reads
  /// it.
  bool inside_tls = false;

  /// Equal when every member is.
  friend bool operator==(const proxy_settings&, const proxy_settings&) = default;
};

/// How the clients' queries draw their EDNS Client Subnet (traffic_settings::client_subnet).
enum class client_subnet_mode {
  /// Client i carries the i-th subnet of the range in all its queries (the subnets are
  /// shared in turn when there are fewer than clients), as clients behind a resolver that
  /// forwards their subnets would.
  per_client,
  /// Each query carries a subnet drawn at random from the range (the same draws for every run
  /// with the same seed; a query sent again keeps its subnet).
  per_query,
};

/// "per-client" or "per-query".
std::string_view client_subnet_mode_name(client_subnet_mode mode) noexcept;
/// Mode from its name; nothing for an unknown one.
std::optional<client_subnet_mode> parse_client_subnet_mode(std::string_view name) noexcept;

/// EDNS Client Subnet (RFC 7871): an option in every query that tells the server which
/// client subnet it asks for, as a resolver in front of the clients sends it. A server that
/// tailors its answers by subnet (an authoritative server with views, a resolver whose cache
/// is split by subnet) does per-subnet work for it; its answers echo the option with the
/// SCOPE PREFIX-LENGTH their answer is good for (run_result::client_subnet).
struct client_subnet_settings {
  /// The range the subnets come from: an IPv4 or IPv6 network in CIDR form
  /// ("198.51.100.0/22", "2001:db8::/40"); empty: no option.
  std::string range;
  /// SOURCE PREFIX-LENGTH of each subnet, at least the range's prefix; unset: 24 for IPv4, 56
  /// for IPv6 (RFC 7871, section 11.1), or the range's own prefix when longer. The range
  /// holds 2^(source_prefix - its prefix) subnets.
  std::optional<unsigned> source_prefix;
  client_subnet_mode mode = client_subnet_mode::per_client;  ///< which subnet a query carries
  std::uint64_t seed = 1;                                    ///< of the draws (per_query)
  /// per_client: the subnet client 0 carries; client i carries the (first + i)-th, modulo the
  /// range's. A load split over several processes or hosts gives each its own.
  std::uint64_t first = 0;

  /// Whether the queries carry the option.
  bool enabled() const noexcept { return !range.empty(); }
  /// Equal when every member is.
  friend bool operator==(const client_subnet_settings&, const client_subnet_settings&) = default;
};

/// A snapshot handed to the progress callback about once per progress interval.
struct load_progress {
  double elapsed_seconds = 0;            ///< since the start, warm-up included
  double planned_seconds = 0;            ///< warm-up plus duration; 0 when running to a query count
  std::uint64_t queries_sent = 0;        ///< so far, after the warm-up
  std::uint64_t responses_received = 0;  ///< answers so far, after the warm-up
  std::uint64_t lost = 0;                ///< so far: timed out, or lost on close
  double recent_qps = 0;                 ///< answers per second over the last interval
};

/// What is measured: the server, how it is reached, and over which transport.
struct target_settings {
  std::string server = "127.0.0.1";  ///< IPv4 or IPv6 address, or a host name resolved once
  /// The server's port (not 0): 53 whatever the transport unless set (a server usually has
  /// DoT and DoQ on 853, DoH on 443: default_ports()).
  std::uint16_t port = 53;
  transport_kind transport = transport_kind::udp;  ///< how the queries travel
  /// DoH: the path of the server's URI template (RFC 8484 §3). The client always offers
  /// ALPN "h2", whatever tls.alpn says.
  std::string doh_path = "/dns-query";
  doh_method doh_request = doh_method::post;  ///< DoH: the request method (RFC 8484 §4.1)
};

/// How many queries, which ones, at what pace and for how long.
struct traffic_settings {
  unsigned clients = 1;          ///< each client has its own socket and source port
  unsigned outstanding = 100;    ///< queries in flight per client (at most 65536)
  double duration_seconds = 10;  ///< measured time, after the warm-up
  std::uint64_t count = 0;       ///< stop after this many queries past the warm-up (0: duration)
  double timeout_seconds = 2;    ///< a query unanswered this long is lost
  double warmup_seconds = 0;     ///< sent and answered but left out of every figure
  double rate = 0;               ///< queries per second over all clients; 0: no limit
  /// Queries per second of each client (0.2 = one query every 5 s): the load is then
  /// clients × client_rate, scheduled like `rate` (client i of n starts i/n of a period
  /// late). Give `rate` or this, not both (total_rate).
  double client_rate = 0;
  /// How `rate` is spread in time; ignored without a rate. Open loop: a query whose
  /// scheduled time comes while its client has `outstanding` queries in flight or waiting is
  /// not sent (run_result::not_sent_outstanding).
  arrival_mode arrivals = arrival_mode::constant;

  /// Queries to send, cycled through by every client from its own starting point; the
  /// built-in default set when null.
  std::shared_ptr<const query_set> queries;
  /// The packet capture the queries came from, or null. With it, `queries` must be the
  /// capture's own (&capture->queries), and the result reports what the capture held.
  std::shared_ptr<const pcap_capture> capture;
  /// How the capture is replayed. With replay_mode::timing, `clients` must be the number of
  /// the capture's source addresses, there is no rate and no count, and a duration of 0
  /// means the whole capture.
  replay_mode replay = replay_mode::fast;
  /// replay_mode::timing: how much faster than captured (2: twice as fast).
  double replay_speed = 1;

  /// UDP: retry a truncated (TC=1) answer's query over TCP to the same server and port, as
  /// a stub resolver would; the retry's outcome is the query's outcome. false: a truncated
  /// answer is counted in `truncated` and is not an answer.
  bool tc_retry_tcp = false;
  /// Send edns-tcp-keepalive (RFC 7828) in every query: tcp, tls and doh only (RFC 7828
  /// forbids it over UDP, RFC 9250 §5.5.2 over DoQ). The timeouts the answers advertise are
  /// in run_result::edns.
  bool edns_keepalive = false;
  /// Pad every query with a padding option (RFC 7830) to a multiple of this many octets
  /// (RFC 8467 recommends 128); 0: no padding. Meant for the encrypted transports; over udp
  /// and tcp the run warns. The answers' padding is in run_result::edns.
  std::uint16_t edns_padding_block = 0;
  /// EDNS Client Subnet in every query (RFC 7871); none by default. The answers' echoes are
  /// in run_result::client_subnet.
  client_subnet_settings client_subnet;
};

/// How clients hold their connections (TCP, DoT, DoH, DoQ) and bind their sockets.
struct connection_settings {
  /// Queries answered (or lost) on one connection before the client closes it and opens a
  /// new one; 0 keeps the connection for the whole run.
  std::uint64_t queries_per_connection = 0;
  /// A client whose connection has had nothing in flight and nothing to send for this many
  /// seconds closes it (as `close` says; DoQ with CONNECTION_CLOSE), and opens a new one
  /// when its next query is due (resumed with tls.resume; with 0-RTT under
  /// tls.early_data), as a stub resolver does between bursts. Checked on the worker's 10 ms
  /// tick. 0: a connection is kept while there is work.
  double idle_seconds = 0;
  /// How a client closes a TCP connection (TCP, DoT, DoH) it is done with.
  close_mode close = close_mode::fin;
  bool tcp_nodelay = true;    ///< TCP_NODELAY on client sockets
  bool tcp_fastopen = false;  ///< send the first query in the SYN where the kernel allows
  /// With traffic.edns_keepalive: a tcp/tls/doh client closes its connection once it has
  /// been idle (nothing in flight, nothing to send) for the timeout the server last
  /// advertised on it, and opens a new one for its next query; counted in
  /// connection_stats::closed_idle_keepalive.
  bool honour_keepalive = false;
  /// Source addresses client sockets bind to: addresses and CIDR ranges ("127.0.0.0/16",
  /// "fd00::/112"), of the server's family, read in order (a range's hosts, without its
  /// network and IPv4 broadcast addresses), as many as there are clients; spread over the
  /// clients as source_mode says. Empty: the kernel picks, except towards IPv4 loopback over
  /// TCP, DoT and DoH, where 127.0.0.1-127.0.0.16 are taken in turn to widen the ephemeral
  /// port space. The addresses must be the machine's (loopback: all of 127.0.0.0/8; IPv6:
  /// `ip -6 route add local fd00::/112 dev lo` makes a range local, and
  /// net.ipv6.ip_nonlocal_bind=1 lets sockets bind its unassigned addresses).
  std::vector<std::string> sources;
  /// How the clients take the sources.
  dnstransport::source_mode source_mode = source_mode::automatic;
  /// PROXY protocol headers before the clients' queries; none by default.
  proxy_settings proxy;
  /// How many distinct client addresses the server sees, whatever the number of clients, so
  /// that the effect of a server's per-client state (rate limits, per-client TCP limits, ACL
  /// lookups) can be measured against it; a sweep's axis (sweep_plan::distinct_sources).
  /// With PROXY headers (proxy.version): the first N addresses of proxy.sources (random: N
  /// draws); with fewer than clients, client i claims the (i mod N)-th; with more, client i
  /// claims the i-th, (i + clients)-th, (i + 2 clients)-th, ... in turn, the next one for each
  /// UDP datagram and each connection. Without headers: the first N of `sources`, bound by
  /// the clients as source_mode says (per client when N is the clients, in turn otherwise);
  /// over UDP and DoQ each client keeps one socket, so N is at most the clients. At most
  /// max_distinct_sources. 0: as the other settings give.
  std::uint64_t distinct_sources = 0;
  /// The most distinct_sources may be: 2^20 (a PROXY header each is made before the run).
  static constexpr std::uint64_t max_distinct_sources = 1ULL << 20;
};

/// How the generator itself runs: its threads, CPUs and system calls.
struct generator_settings {
  unsigned threads = 1;   ///< worker threads, each with its own share of clients
  std::vector<int> cpus;  ///< pin worker i to cpus[i % size]; empty: no pinning
  /// Send all queries that are ready in one system call: one gather write per TCP/TLS
  /// connection, one sendmmsg of many datagrams for UDP. false: one call per query.
  bool gather_writes = true;
  /// Coalesced receiving, every transport: a client whose wake-up brought answers while at
  /// least 8 queries are in flight reads again after a short delay (one timer per worker
  /// thread) instead of waiting for its socket at once: fewer wake-ups and system calls per
  /// answer under load. The delay is at most this many microseconds and at most 1/20 of the
  /// client's recent latency, and none is taken under 10 us: latencies run to the kernel's
  /// receive stamp (SO_TIMESTAMPNS; a datagram's own, a stream read's newest segment's), at
  /// most 1/20 of the latency late. generator_stats::reads_delayed counts the reads it put
  /// off. 0: off (every read waits for readiness).
  /// Unset (the default): default_coalesce_us where queries leave on a schedule (a rate, or a
  /// capture's clock), off in a closed loop. A closed loop sends a query when it reads an
  /// answer, so a delayed read sends the replacements of all the answers it brought at once,
  /// and a server that reads several queries at a time answers more of them: unbound over TCP
  /// at 100 in flight gave 47,000 q/s coalesced against 30,000 answer by answer. That is
  /// another load, not the one dnsperf and the reference studies measure; set a value to
  /// coalesce a closed loop anyway.
  std::optional<unsigned> coalesce_us;
  /// coalesce_us when it is unset and queries leave on a schedule: 1 ms.
  static constexpr unsigned default_coalesce_us = 1000;
  /// UDP or TCP from AF_XDP sockets on this network interface ("eth0", one end of a veth
  /// pair): the library writes and reads whole frames (Ethernet, IP, UDP or TCP) past the
  /// kernel's stack, and an XDP program it attaches to the interface for the run steers the
  /// server's answers to the AF_XDP socket of the receive queue they came in on (one per
  /// queue). Each worker thread sends through a queue of its own, so generator.threads is at
  /// most the interface's receive queues (1 over TCP). Over TCP, each connection (handshake,
  /// retransmission, FIN or RST) runs in user space;
  /// TCP Fast Open is refused. Answers and connections are checked, matched, timed and counted
  /// as over kernel sockets, into the same counts. A client's frames go from its address of
  /// connections.sources (default: the one the kernel would use for the server) with a source
  /// port of its own (over TCP, one per connection, used again once it has closed).
  /// Needs root. Empty: the kernel's sockets.
  std::string xdp_interface;
  /// With xdp_interface: the MAC address frames are sent to, "02:00:00:00:00:01" (the
  /// server's, or the gateway's to it); empty: the server's, from the kernel's neighbour
  /// table (the server on the interface's link).
  std::string xdp_gateway_mac;
};

/// The server's processes whose use of CPU, memory, descriptors and connections is read
/// during the measured window; the result's `server_usage` holds what they spent.
struct monitor_settings {
  /// Processes of the server, on this machine, read from /proc (and their TCP connections
  /// on target.port). Empty: none.
  std::vector<int> pids;
  /// cgroup v2 directories of the server (e.g. /sys/fs/cgroup/system.slice/unbound.service):
  /// CPU from cpu.stat, memory from memory.current, descriptors and threads of the
  /// processes in it.
  std::vector<std::string> cgroups;
  /// A command whose standard output is `dnstransport monitor` lines, typically
  /// `ssh HOST dnstransport monitor --pid N --interval 0.5` for a server on another machine.
  /// It is started (through /bin/sh) for each load, must give a first reading within 15 s,
  /// and is stopped when the load ends.
  std::string command;

  /// Whether anything is monitored.
  bool any() const noexcept { return !pids.empty() || !cgroups.empty() || !command.empty(); }

  /// Equal when every member is.
  friend bool operator==(const monitor_settings&, const monitor_settings&) = default;
};

struct timeline_row;
struct live_figures;

/// One answer as output_settings::on_answer gives it: each answer the result counts
/// (run_result::responses_received), as it is received.
struct answer_event {
  unsigned client = 0;        ///< the client that sent its query (0-based over the load)
  std::size_t query = 0;      ///< its query's place in traffic.queries
  std::uint64_t sent_ns = 0;  ///< when it was sent (open loop: its scheduled time), monotonic
  /// Its latency as the result records it: from sent_ns to the kernel's receive time when
  /// read coalesced, else to its reading.
  std::uint64_t latency_ns = 0;
  std::uint8_t rcode = 0;  ///< the header's RCODE (4 bits)
  /// The answer as received (DoH: the HTTP body); valid only during the call.
  std::span<const std::uint8_t> message;
};

/// What the run reports while it runs and how its result is named and cut in time.
struct output_settings {
  /// A name for what is measured ("unbound 1.17, 1 thread"), kept in the result and its
  /// JSON; reports name the result by it. Empty: no name.
  std::string label;
  /// Length of one row of the run's timeline; 0: no timeline.
  double interval_seconds = 1;
  /// Called from the thread that called run_load (async_run_load: through its executor),
  /// about every progress_interval seconds. An exception from it stops the load, which
  /// then ends with that exception.
  std::function<void(const load_progress&)> on_progress;
  /// Seconds between on_progress calls (0.05 at least).
  double progress_interval_seconds = 1;
  /// Called with each row of the timeline (interval_seconds > 0) as it is closed: once every
  /// worker has passed its end (within about 30 ms of it) and, when the server is monitored,
  /// it was read there; on the thread that on_progress is called on, in order, each row once.
  /// The rows still open when the load ends (its last, shorter row) come just before it
  /// completes; so do rows a worker that ended early (its share of traffic.count done) no
  /// longer closes. They are run_result::timeline's rows, the same figures; in a load run by
  /// a group of processes (load_spec::group), this process's own rows, not the group's merged
  /// timeline. An exception from it stops the load, which then ends with that exception.
  std::function<void(const timeline_row&)> on_interval;
  /// Called with the load's figures so far (live_figures: every outcome, connections,
  /// handshakes, the latency histogram, the CPU of both sides) each time timeline rows close
  /// (interval_seconds > 0), after on_interval has had them, on the thread on_progress is
  /// called on; and once more when the load has ended, with its result's figures
  /// (figures_of), the last call. What live metrics serve (metrics.hpp). In a load run by a
  /// group of processes, this process's own figures. An exception from it stops the load,
  /// which then ends with that exception.
  std::function<void(const live_figures&)> on_figures;
  /// Called for each answer the result counts, as it comes: on the worker thread that read
  /// it, so from several threads at once with generator.threads above 1, while those threads
  /// wait for it (keep it short; the load's figures include its time). Not called for the
  /// warm-up's answers, nor for messages counted as failed. An exception from it stops the
  /// load (no more calls), which then ends with that exception. Unset, it costs one test per
  /// answer.
  std::function<void(const answer_event&)> on_answer;
  /// How the run's warnings (run_result::warnings) name the settings they mention, given a
  /// setting's path ("load_spec::traffic.rate"); empty: by their paths. A program with names
  /// of its own for the settings (the CLI: its flags) gives them here.
  setting_namer setting_name;
};

/// Everything one load needs, in parts. A rule a setting breaks is reported by validate (and
/// run_load) as a setup_error naming it by its path from here ("load_spec::traffic.rate").
struct load_spec {
  target_settings target;           ///< the server, its port and the transport
  traffic_settings traffic;         ///< the queries, their pace, the run's length
  connection_settings connections;  ///< how connections are held, sockets bound
  generator_settings generator;     ///< the generator's threads, CPUs, system calls
  tls_client_options tls;           ///< TLS of the DoT, DoH and DoQ clients
  monitor_settings monitor;         ///< the server processes whose usage is read
  output_settings output;           ///< progress, timeline, label, setting names

  /// When set to true (e.g. from a signal handler), the load stops within about 50 ms:
  /// queries still in flight are counted as abandoned and the result is returned as usual
  /// with `interrupted` set.
  const std::atomic<bool>* stop = nullptr;

  /// Run as one member of a group of processes (MPI ranks under mpirun: mpi.hpp) that share
  /// this load: run_load takes this member's share (share_of), starts sending when every
  /// member is ready, and returns the merged result of all of them (merge_results), the same
  /// on every member. Null: this process runs the whole load.
  std::shared_ptr<load_group> group;
};

/// What a run's packet capture held and how it was replayed (run_result::capture).
struct capture_summary {
  pcap_counts counts;         ///< what the capture held, packet by packet
  std::uint64_t clients = 0;  ///< distinct source addresses of the queries
  double span_seconds = 0;    ///< capture time from the first query to the last
  /// How its queries were sent (load_spec::traffic.replay).
  replay_mode replay = replay_mode::fast;
  double speed = 1;  ///< replay_mode::timing only
};

/// Connection life cycle counters (TCP and TLS), for connections whose set-up began after the
/// warm-up (their later events included, whenever they happen).
struct connection_stats : connection_counts {
  /// Connections open at once (TCP connected, or QUIC connection started, until closed),
  /// over every client, in the measured window: time-weighted mean. Warm-up connections
  /// count while they stay open.
  double concurrent_mean = 0;
  /// The most connections open at once in the measured window, counted as for
  /// concurrent_mean.
  std::uint64_t concurrent_max = 0;
  /// Failures by cause: errno name for connects ("ECONNREFUSED"), TLS failure kind
  /// ("tls_certificate") for handshakes.
  std::map<std::string, std::uint64_t> failures;
  std::string first_failure;  ///< the first failure's full message, for the user

  /// Adds the connections of other clients measured over the same window (another member of
  /// a load run by several processes): every count and the failures by cause summed, and so
  /// are concurrent_mean and concurrent_max (the mean of all together, and the most they can
  /// have held at once); first_failure stays this one's unless it has none.
  connection_stats& operator+=(const connection_stats& other);
};

/// What the answers' OPT records said, when the queries asked (load_spec::traffic.edns_keepalive,
/// load_spec::traffic.edns_padding_block). Counted over responses_received.
struct edns_stats {
  bool keepalive_sent = false;          ///< the queries carried edns-tcp-keepalive
  std::uint16_t padding_block = 0;      ///< the queries were padded to multiples of this; 0: not
  std::uint64_t keepalive_answers = 0;  ///< answers carrying edns-tcp-keepalive (RFC 7828)
  /// Lowest idle timeout those answers advertised, in seconds (the option counts in units
  /// of 100 ms); 0 without any.
  double keepalive_min_seconds = 0;
  /// Highest idle timeout those answers advertised, in seconds; 0 without any.
  double keepalive_max_seconds = 0;
  std::uint64_t padded_answers = 0;  ///< answers carrying a padding option (RFC 7830)
  /// Padded answers by their size in octets (the DNS message, without the TCP length).
  std::map<std::uint32_t, std::uint64_t> padded_sizes;

  /// Whether the run asked for any of this.
  bool requested() const noexcept { return keepalive_sent || padding_block != 0; }

  /// Adds the answers of other clients of the same load (another member of a load run by
  /// several processes): the counts and padded sizes summed, the lowest and highest
  /// keepalive of both; what the queries carried (keepalive_sent, padding_block) stays this
  /// one's.
  edns_stats& operator+=(const edns_stats& other);
};

/// What the answers said of the queries' EDNS Client Subnet (load_spec::traffic.client_subnet),
/// counted over responses_received.
struct client_subnet_stats {
  std::string range;                ///< the range the subnets came from; empty: no option sent
  unsigned source_prefix = 0;       ///< SOURCE PREFIX-LENGTH the queries carried
  std::string mode;                 ///< "per-client" or "per-query"
  std::uint64_t range_subnets = 0;  ///< subnets of that prefix in the range (at most 2^63)
  /// Distinct subnets the queries could carry: per client, one per client up to the range's;
  /// per query, all of the range's.
  std::uint64_t subnets = 0;
  /// Answers whose OPT record echoed the option with the query's family, source prefix and
  /// address (RFC 7871, section 7.2.1). An answer that echoes another subnet is no answer:
  /// it is in mismatched and client_subnet_wrong.
  std::uint64_t echoed = 0;
  /// Echoed answers by their SCOPE PREFIX-LENGTH: the prefix the answer is good for (0: any
  /// client; the source prefix or longer: this subnet only).
  std::map<unsigned, std::uint64_t> scope_prefixes;

  /// Whether the queries carried the option.
  bool requested() const noexcept { return !range.empty(); }
  /// Adds the answers of other clients of the same load: counts summed; what the queries
  /// carried stays this one's, the subnets summed up to the range's (the members of a load
  /// carry disjoint ones).
  client_subnet_stats& operator+=(const client_subnet_stats& other);
};

/// QUIC connection figures (DoQ), for connections whose set-up began after the warm-up.
struct quic_stats : quic_counts {
  /// How established connections were ended by the other side: the server's
  /// CONNECTION_CLOSE code ("DOQ_NO_ERROR", "PROTOCOL_VIOLATION"), "stateless_reset" or
  /// "idle_timeout".
  std::map<std::string, std::uint64_t> closes;
  /// ngtcp2's path estimates as each connection ended, over the connections with an RTT
  /// sample (quic_counts::rtt_samples): the mean smoothed RTT, in ms; 0 without samples.
  double smoothed_rtt_ms = 0;
  /// The lowest RTT any of those connections saw, in ms; 0 without samples.
  double min_rtt_ms = 0;
  /// The mean of their congestion windows as they ended, in octets; 0 without samples.
  double mean_cwnd_bytes = 0;

  /// Adds the connections of other clients (another member of a load run by several
  /// processes): the counts and closes by kind summed; the means weighted by each side's
  /// rtt_samples, min_rtt_ms the lower of the sides that have samples.
  quic_stats& operator+=(const quic_stats& other);
};

/// One interval of a run's timeline, counted from the end of the warm-up. Queries are counted
/// in the interval in which they were sent, answers and losses in the one in which they
/// happened.
struct timeline_row {
  double start_seconds = 0;              ///< since the end of the warm-up
  double duration_seconds = 0;           ///< the interval, shorter for the last row
  std::uint64_t sent = 0;                ///< queries sent in the interval
  std::uint64_t answered = 0;            ///< answers that came in the interval
  std::uint64_t lost = 0;                ///< timed out, or in flight when a connection closed
  std::uint64_t failed = 0;              ///< every other outcome that is not an answer
  std::uint64_t not_sent = 0;            ///< open loop: scheduled but not sent (both causes)
  double qps = 0;                        ///< answered / duration
  double p50_ms = 0;                     ///< median latency of the interval's answers; 0 with none
  double p99_ms = 0;                     ///< their 99th percentile latency; 0 with none
  std::uint64_t connections_open = 0;    ///< at the end of the interval, over every client
  std::uint64_t connections_opened = 0;  ///< connections opened in the interval
  std::uint64_t handshakes = 0;          ///< TLS/QUIC handshakes completed (full and resumed)
  /// The monitored server processes' CPU in the interval, in seconds (-1: not monitored or
  /// no reading in the interval).
  double server_cpu_seconds = -1;
  /// Their resident memory at the interval's end, in bytes (0: not monitored or no reading).
  std::uint64_t server_rss_bytes = 0;
};

/// A load's figures so far, counted from the end of its warm-up as its result counts them:
/// what output_settings::on_figures gives while it runs (summed over the closed timeline
/// rows) and figures_of gives of a result. Counts only grow from one call to the next.
struct live_figures {
  /// Measured so far: from the end of the warm-up to the end of the last closed row (the
  /// result's measured window once it has ended).
  double seconds = 0;
  bool finished = false;                 ///< the figures of the ended load's result, the last call
  query_counts queries;                  ///< every outcome so far, as run_result counts them
  std::uint64_t connections_open = 0;    ///< at the end of the last closed row
  std::uint64_t connections_opened = 0;  ///< connections set up after the warm-up
  std::uint64_t handshakes_full = 0;     ///< TLS/QUIC handshakes completed in full
  std::uint64_t handshakes_resumed = 0;  ///< TLS/QUIC handshakes that resumed a session
  latency_histogram latency;             ///< of the answers so far
  /// CPU of the generator's worker threads so far, warm-up included
  /// (run_result::client_cpu_seconds once it has ended).
  double generator_cpu_seconds = 0;
  /// CPU of the monitored server processes since the end of the warm-up; -1: not monitored.
  double server_cpu_seconds = -1;
  /// Their resident memory at the last reading, in bytes (0: not monitored or not read).
  std::uint64_t server_rss_bytes = 0;
};

/// A run (or a sweep point, in any repeat) whose busiest worker thread used at least this
/// share of a CPU is flagged client-bound: its figure measures the generator, not the server.
inline constexpr double client_bound_cpu_share = 0.9;

/// One member's own figures in a load run by several processes (run_result::ranks).
struct rank_result {
  unsigned rank = 0;  ///< its number in the group, 0 to size - 1
  std::string host;   ///< the host it ran on (load_group::hosts); empty when not known
  /// False when the member sent no result (it failed, hung or was killed); its figures are
  /// then zero and not in the merged counts.
  bool reported = true;
  bool interrupted = false;              ///< its load was stopped early (load_spec::stop)
  unsigned clients = 0;                  ///< its share of the clients
  std::uint64_t queries_sent = 0;        ///< queries it sent after the warm-up
  std::uint64_t responses_received = 0;  ///< answers it received
  double elapsed_seconds = 0;            ///< its measured window
  double qps = 0;                        ///< its answers per second over that window
  double client_cpu_seconds = 0;         ///< CPU time of its worker threads
  double max_thread_cpu_share = 0;       ///< its busiest worker thread's CPU share
  std::uint64_t client_rss_bytes = 0;    ///< its process's peak resident memory
  bool client_bound = false;             ///< max_thread_cpu_share >= client_bound_cpu_share (0.9)
  std::string first_failure;             ///< its first connection failure, when it had one

  /// It sent no result, or got no answer (every connection refused, a source address it
  /// cannot bind, ...).
  bool failed() const noexcept { return !reported || responses_received == 0; }
};

/// Everything measured in one load: the per-query counts (query_counts: every query sent
/// after the warm-up ends in exactly one of its outcomes) and the rest. Connection figures
/// count only connections opened after the warm-up.
struct run_result : query_counts {
  // What was run.
  std::string label;                               ///< load_spec::output.label
  std::string server;                              ///< load_spec::target.server, as given
  std::uint16_t port = 0;                          ///< load_spec::target.port
  transport_kind transport = transport_kind::udp;  ///< load_spec::target.transport
  std::string tls_backend;                         ///< empty unless TLS
  /// load_spec::traffic.clients (of a load run by several processes: the members' sum).
  unsigned clients = 0;
  /// load_spec::traffic.outstanding: queries in flight per client, at most.
  unsigned outstanding = 0;
  /// Worker threads: load_spec::generator.threads, at most one per client (of a load run by
  /// several processes: the most one member had).
  unsigned threads = 0;
  /// load_spec::connections.queries_per_connection; 0: unlimited.
  std::uint64_t queries_per_connection = 0;
  double rate = 0;          ///< queries per second over all clients (total_rate); 0: no limit
  double client_rate = 0;   ///< load_spec::traffic.client_rate, when the rate was given per client
  double idle_seconds = 0;  ///< load_spec::connections.idle_seconds
  /// The longest read delay of coalesced receiving that ran (load_spec::generator.coalesce_us,
  /// or its default for the run's arrivals); 0: off.
  unsigned coalesce_us = 0;
  /// How queries were scheduled: the spec's mode with a rate, `closed` without one.
  arrival_mode arrivals = arrival_mode::closed;
  std::string query_origin;            ///< where the queries came from (query_set::origin)
  std::size_t query_count_in_set = 0;  ///< queries in the set the clients cycle through
  /// Set when the queries came from a packet capture (load_spec::traffic.capture).
  std::optional<capture_summary> capture;

  // Per query: the counts are query_counts (counts.hpp), which this extends.
  /// http_failed by cause: "status_404", "content_type", "empty_body", "stream_reset" (the
  /// server sent RST_STREAM), "content_length" (the body's length is not its
  /// content-length), "no_status" (no valid :status), "stream_error" (the stream closed before
  /// its response ended), "body_too_large".
  std::map<std::string, std::uint64_t> http_failures;
  /// quic_failed by cause: "stream_reset_DOQ_PROTOCOL_ERROR" (the server reset the stream
  /// with that code), "length_mismatch" (more octets than the 2-octet length announces, or
  /// FIN before they are all there), "no_answer" (FIN with fewer than 2 octets),
  /// "stream_closed_<code>" (the stream closed without an answer or reset).
  std::map<std::string, std::uint64_t> quic_failures;
  std::array<std::uint64_t, 16> rcodes{};  ///< answers by RCODE
  /// Open loop: from each query's scheduled time to the moment it was handed to the
  /// kernel; how far the generator lagged behind its schedule.
  latency_histogram send_lag;

  // Time and cost.
  double elapsed_seconds = 0;       ///< measured window: after warm-up until the last answer
  double qps = 0;                   ///< responses_received / elapsed_seconds
  double client_cpu_seconds = 0;    ///< user+system CPU of the worker threads
  double max_thread_cpu_share = 0;  ///< busiest worker's CPU time / wall time (1.0 = saturated)
  bool interrupted = false;         ///< stopped early by load_spec::stop
  /// Peak resident memory of the generator's process when the run ended (getrusage; the
  /// whole process, so an in-process responder counts too); under mpirun, the ranks' sum.
  std::uint64_t client_rss_bytes = 0;
  /// The most queries one client had in flight at once (warm-up included): at most
  /// load_spec::traffic.outstanding, fewer when the server answered faster than the clients
  /// filled their window or the query list limited it (run_result::warnings says so).
  unsigned in_flight_max = 0;
  /// Source addresses the run spread its clients over (load_spec::connections.sources, or
  /// the loopback addresses taken by default): one per client, or over TCP, DoT and DoH taken
  /// in turn by connection; 0: the kernel chose each socket's.
  std::uint64_t source_addresses = 0;
  /// Each client kept one source address of its own (source_mode::per_client, or automatic
  /// with enough addresses); false: taken in turn.
  bool sources_per_client = false;
  /// The PROXY protocol version the clients spoke (load_spec::connections.proxy: "v1",
  /// "v2"; empty: none).
  std::string proxy_protocol;
  /// How many distinct client addresses their PROXY headers carried (0: none).
  std::uint64_t proxy_addresses = 0;

  /// Send to answer, connection set-up excluded. The answer's time is the kernel's receive
  /// stamp (SO_TIMESTAMPNS): its datagram's (UDP, DoQ), or the newest segment's of the read
  /// that brought it (TCP, DoT, DoH); the read time where the kernel gave none.
  latency_histogram latency;
  /// Send to answer for the first query of each connection, set-up included (TCP/TLS).
  latency_histogram first_query_latency;
  latency_histogram connect_latency;    ///< TCP connect (SYN to established)
  latency_histogram handshake_latency;  ///< TLS handshake, after TCP connect

  connection_stats connections;  ///< transports with connections (all but UDP)
  early_data_stats early_data;   ///< TLS transports with --early-data
  edns_stats edns;               ///< with load_spec::traffic.edns_keepalive or edns_padding_block
  client_subnet_stats client_subnet;  ///< with load_spec::traffic.client_subnet
  quic_stats quic;                    ///< DoQ only
  process_usage
      server_usage;  ///< what the monitored server processes spent (load_spec::monitor.pids)
  generator_stats generator;             ///< the generator's own wake-ups and system calls
  std::uint64_t handshakes_full = 0;     ///< full TLS/QUIC handshakes completed
  std::uint64_t handshakes_resumed = 0;  ///< TLS/QUIC handshakes that resumed a session

  /// Length of a timeline row, in seconds (load_spec::output.interval_seconds); 0: none.
  double interval_seconds = 0;
  /// One row per interval of interval_seconds from the end of the warm-up (empty: no
  /// timeline).
  std::vector<timeline_row> timeline;

  std::vector<std::string> warnings;  ///< things the user should know about this run

  /// A load run by several processes (load_spec::group): each member's own figures, in rank
  /// order; the counts above are their sums. Empty for a load run by one process.
  std::vector<rank_result> ranks;
  /// Members that sent no result (rank_result::reported false).
  std::size_t ranks_missing() const noexcept;
  /// Members that sent no result or got no answer (rank_result::failed).
  std::size_t ranks_failed() const noexcept;

  /// True when queries were sent on a schedule (constant or poisson arrivals at a rate, or a
  /// capture replayed with its timing).
  bool open_loop() const noexcept { return arrivals != arrival_mode::closed; }
  /// Queries whose time came after the warm-up: sent, or not sent for one of the reasons.
  std::uint64_t queries_scheduled() const noexcept {
    return queries_sent + not_sent_outstanding + not_sent_timeout;
  }
  /// Answers as a percentage of the queries scheduled (100 with none).
  double answered_percent() const noexcept;

  /// Answers per connection, over the connections opened after the warm-up (0 for UDP).
  double queries_per_connection_achieved() const noexcept;
  /// Connections opened per second of the measured window (0 for UDP).
  double connections_per_second() const noexcept;
  /// TLS or QUIC handshakes (full and resumed) per query sent (0 without queries).
  double handshakes_per_query() const noexcept;
  /// The generator's wake-ups per answer (generator_stats::wakeups; 0 without answers): near
  /// 1, with system calls near 2 or more, the client paid a wake-up and a read for nearly
  /// every answer.
  double wakeups_per_answer() const noexcept;
  /// The generator's system calls per answer (generator_stats::syscalls; 0 without answers).
  double syscalls_per_answer() const noexcept;
  /// Times a worker thread went to sleep, per answer (generator_stats::sleeps; 0 without
  /// answers).
  double sleeps_per_answer() const noexcept;
};

/// The figures of an ended load (finished set): its counts, connections, handshakes,
/// latency and CPU as the result has them; connections_open and server_rss_bytes from its
/// timeline's last row (0 without a timeline).
live_figures figures_of(const run_result& result);

/// The open-loop rate over all clients: `rate`, or clients × client_rate; 0: no limit.
double total_rate(const load_spec& spec) noexcept;

/// Runs one load and returns what was measured. Throws setup_error before sending anything
/// when the spec is unusable (unresolvable server, zero clients, TLS backend missing, ...);
/// once traffic flows, every failure is counted, never thrown. The blocking form of
/// async_run_load (async_load.hpp), run on an io_context of its own in the calling thread.
run_result run_load(const load_spec& spec);

/// Checks a spec without running it; throws setup_error naming the offending setting.
void validate(const load_spec& spec);

}  // namespace dnstransport
