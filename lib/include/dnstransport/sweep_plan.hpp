#pragma once
/// \file
/// A sweep's plan: the grid of transports, client counts and queries per connection, each
/// point repeated, and the load of each point. The list parsers check each flag's values and
/// name the flag in their errors, so a command line needs no rules of its own.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <dnstransport/load.hpp>
#include <dnstransport/search.hpp>
#include <dnstransport/tls.hpp>

namespace dnstransport {

/// One entry of a sweep's transport axis: a transport and, for DNS over TLS, the client's TLS
/// library (so OpenSSL and GnuTLS can be compared in one sweep).
struct sweep_transport {
  transport_kind transport = transport_kind::udp;  ///< the transport
  std::optional<tls_backend> backend;              ///< set for tls only

  /// Equal when the transport and the backend are.
  friend bool operator==(const sweep_transport&, const sweep_transport&) = default;
};

/// "udp", "tcp", "tls-openssl" or "tls-gnutls": the name used in tables, plots and CSV.
std::string sweep_transport_name(const sweep_transport& transport);

/// Parses a comma-separated list of udp, tcp, tls, tls-openssl, tls-gnutls; plain "tls" uses
/// `default_backend`. Throws setup_error (naming --transports) for an unknown, empty or
/// repeated entry.
std::vector<sweep_transport> parse_sweep_transports(std::string_view list,
                                                    tls_backend default_backend);

/// Parses a comma-separated list of client counts ("1,2,4,8,16"). Throws setup_error (naming
/// --clients) for a value that is not a positive number, or a repeated value.
std::vector<unsigned> parse_client_counts(std::string_view list);

/// Parses a comma-separated list of queries per connection ("1,10,100,unlimited"); unlimited
/// (or 0) is stored as 0. Throws setup_error (naming --queries-per-connection).
std::vector<std::uint64_t> parse_queries_per_connection_list(std::string_view list);

/// "unlimited" for 0, the number otherwise.
std::string queries_per_connection_name(std::uint64_t queries_per_connection);

/// Parses a comma-separated list of distinct source counts ("1,100,10000"). Throws
/// setup_error (naming --distinct-sources) for a value that is not a positive number, one
/// over connection_settings::max_distinct_sources, or a repeated value.
std::vector<std::uint64_t> parse_distinct_sources_list(std::string_view list);

/// Every transport this build has, in all_transports()'s order, the TLS ones on `backend`
/// (those that run on one library only, on it): a sweep's default transport axis.
std::vector<sweep_transport> every_sweep_transport(tls_backend backend);

/// Where each transport's listener is on the target (a real server usually has UDP and TCP on
/// 53, DNS over TLS and DNS over QUIC on 853, DNS over HTTPS on 443: default_ports(); the
/// built-in responder has one free port per listener).
using sweep_ports = per_transport<std::uint16_t>;

/// One of several servers a sweep measures side by side (`--target`).
struct sweep_target {
  std::string name;                     ///< names the server in the points, tables and plots
  std::string server;                   ///< address or host name
  sweep_ports ports = default_ports();  ///< its listeners' ports, per transport
  /// What of it is monitored, its points' load_spec::monitor: its processes (pid=PID) and
  /// cgroups (cgroup=PATH) on this machine, or its `monitor` command for a server elsewhere
  /// (`--monitor-command NAME=COMMAND`).
  monitor_settings monitor;
  std::string description;  ///< what it is, for the record

  /// Equal when every member is.
  friend bool operator==(const sweep_target&, const sweep_target&) = default;
};

/// Parses `NAME=HOST[:PORT][,tls=PORT][,doh=PORT][,doq=PORT][,pid=PID][,cgroup=PATH]...`:
/// UDP and TCP on PORT (53), DNS over TLS on the tls port (853), DNS over HTTPS on the doh
/// port (443), DNS over QUIC on the doq port (UDP 853), and the server's processes and cgroups
/// to monitor (pid and cgroup, which may be repeated). Any transport's name is a key
/// (udp=PORT, tcp=PORT too). Throws setup_error naming
/// --target and the text for an empty name, a bad address or port, or an unknown key.
sweep_target parse_sweep_target(std::string_view text);

/// A grid of loads. Each point is one (transport, clients, queries per connection) cell; UDP
/// has no connections, so it is run once per client count whatever the queries-per-connection
/// axis holds.
struct sweep_plan {
  /// Every run option (server, outstanding, threads, timeout, warm-up, TLS settings, queries,
  /// stop flag, ...). Its target.transport and .port, traffic.clients and .duration_seconds,
  /// connections.queries_per_connection and output.on_progress are replaced for each point.
  load_spec base;
  /// Where the listeners of `base`'s server are, per transport (without targets).
  sweep_ports ports = default_ports();
  /// Several servers measured with the same grid: every point is run against each target in
  /// turn before the next point, so that whatever else loads the machine hits them alike.
  /// Empty: the one server of `base` on `ports`.
  std::vector<sweep_target> targets;
  /// The transport axis, in the order run.
  std::vector<sweep_transport> transports = every_sweep_transport(tls_backend::openssl);
  std::vector<unsigned> clients{1, 4, 16};  ///< the client-count axis, in the order run
  /// TCP/TLS: queries per connection; 0 = unlimited (one connection for the whole run).
  std::vector<std::uint64_t> queries_per_connection{1, 10, 100, 0};
  /// How many distinct client addresses the server sees (connection_settings::
  /// distinct_sources), from base's PROXY sources or source range: the effect of a server's
  /// per-client state on its throughput. Empty (the default): not an axis.
  std::vector<std::uint64_t> distinct_sources;
  unsigned repeats = 3;           ///< runs per point
  double duration_seconds = 0.5;  ///< measured time of each run (base.traffic.count wins)
  double pause_seconds = 0.2;     ///< idle time between runs, so TIME_WAIT and queues drain
  /// Measure each point as the highest rate it answers in full instead of at saturation
  /// (`sweep --search`): a search (search.hpp) with these criteria whose steps last
  /// duration_seconds, pause pause_seconds apart and repeat `repeats` times at the edge; the
  /// point's runs are the passing repetitions at the rate found. Off: runs at saturation.
  bool search = false;
  search_spec search_criteria;     ///< criteria only; its load, callbacks and stop are unused
  std::string target_description;  ///< e.g. "built-in responder (in this process)"
  std::string command_line;        ///< how the sweep was started, for the record
};

/// Sets the axes, repeats, duration and pause of a named study:
/// - "load": udp, tcp, tls x clients 1, 2, 4, 8, 16, persistent connections, 3 x 5 s;
/// - "amortization": tcp, tls x queries per connection 1, 2, 5, 10, 20, 50, 100, 200, 500,
///   1000, 2000, 5000, 10000, 20000 and unlimited, 8 clients, 3 x 3 s.
/// TLS entries use plan.base.tls.backend. Throws setup_error (naming --preset) otherwise.
void apply_preset(sweep_plan& plan, std::string_view name);

/// One cell of the grid.
struct sweep_point {
  sweep_transport transport;                 ///< the transport (and TLS library)
  unsigned clients = 1;                      ///< load_spec::traffic.clients
  std::uint64_t queries_per_connection = 0;  ///< 0: unlimited (always 0 for udp)
  std::string target{};  ///< the sweep_target's name; empty when the sweep has one server
  /// load_spec::connections.distinct_sources; 0 without that axis.
  std::uint64_t distinct_sources = 0;

  /// Equal when every member is.
  friend bool operator==(const sweep_point&, const sweep_point&) = default;
};

/// "tcp, 4 clients, 100 queries/connection" ("unbound: tcp, ..." with a target; ", 100
/// distinct sources" with that axis): a point as a reader names it.
std::string describe(const sweep_point& point);

/// What the points of one series share besides their transport, clients and queries per
/// connection, as a reader names it: the target, and the distinct sources when the sweep has
/// that axis ("unbound", "100 sources", "unbound, 100 sources"; empty for neither). Results
/// derived from several points (% of UDP, fits, costs, findings) compare points of one series
/// only.
std::string series_name(const std::string& target, std::uint64_t distinct_sources);

/// The points of a plan in the order they are run: transports, then client counts, then
/// queries per connection, then distinct sources, each in the order given; with targets, each of
/// those points for every target in turn. Throws setup_error for targets without a name or with one
/// name twice, an empty axis, a repeated value, zero clients or repeats, a duration or pause out of
/// range, and contradictions such as queries-per-connection values other than unlimited when every
/// transport is UDP.
std::vector<sweep_point> expand(const sweep_plan& plan);

/// The load_spec of one point: plan.base with the point's transport, port, clients, queries
/// per connection and the plan's duration, and the server and ports of the point's target.
load_spec point_spec(const sweep_plan& plan, const sweep_point& point);

}  // namespace dnstransport
