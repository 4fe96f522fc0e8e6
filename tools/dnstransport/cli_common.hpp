#pragma once
// Pieces shared by the subcommands: exit codes, signal handling, option groups that map to
// load_spec and server_options, progress printing and file output.

#include <atomic>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <dnstransport/cpus.hpp>
#include <dnstransport/group.hpp>
#include <dnstransport/load.hpp>
#include <dnstransport/server.hpp>

#include "builtin_responder.hpp"

namespace dnstransport::cli {

/// Exit codes, documented in --help.
enum exit_code : int {
  exit_ok = 0,            // measured what was asked
  exit_no_answers = 1,    // ran but measured nothing usable (no answers, every handshake failed)
  exit_usage = 2,         // bad flags or input: nothing was sent
  exit_incomplete = 3,    // under mpirun, a rank sent no result: the others' results were written
  exit_interrupted = 130  // stopped by SIGINT/SIGTERM; what was measured was still written
};

inline constexpr const char* exit_codes_help =
    "Exit status: 0 the run measured what was asked; 1 it ran but got no answers (or every "
    "connection/handshake failed); 2 bad usage or input, nothing was sent; 130 interrupted by "
    "SIGINT/SIGTERM (results measured so far are still written); under mpirun, 3 a rank failed "
    "(no answer, or no result: it crashed, hung or was killed; the others' results are still "
    "written).";

/// Under mpirun (main joins the job): this process's member of the group of ranks that share
/// each load; null otherwise. make_load_spec hands it to every load.
extern std::shared_ptr<load_group> job_group;
/// True on the ranks other than 0 under mpirun: they print nothing and write no file.
bool secondary_rank() noexcept;
/// Under mpirun every rank must load one server given on the command line (a built-in
/// responder would be one per rank): throws setup_error otherwise.
void require_server_under_mpirun(bool server_given);

/// Set by SIGINT/SIGTERM; a second SIGINT exits at once with 130.
extern std::atomic<bool> stop_requested;
/// The signal that set stop_requested (SIGINT: a user's Ctrl-C; SIGTERM: a process manager,
/// or the tool stopping a responder it started); 0 before one came.
extern std::atomic<int> stop_signal;
void install_signal_handlers();

/// Everything `run` and `sweep` accept; `sweep` takes lists for the transport, clients and
/// queries-per-connection axes instead.
struct run_options {
  std::string server;  // empty: built-in responder
  std::string transport = "udp";
  std::string queries_file;
  std::string query_format = "auto";
  std::vector<std::uint16_t> pcap_ports;  // empty: 53
  std::string replay;                     // empty: fast (with a capture)
  double speed = 1;
  unsigned clients = 8;
  bool clients_given = false;   // --clients on the command line
  bool duration_given = false;  // --duration on the command line
  unsigned outstanding = 100;
  double duration = 10;
  std::uint64_t count = 0;
  double timeout = 2;
  double warmup = 0;
  double rate = 0;
  double client_rate = 0;
  std::optional<double> idle;   // given: must be positive
  std::string arrivals;         // empty: constant with a rate
  bool rates_searched = false;  // search (or sweep --search) offers the rates: none given
  double interval = 1;
  unsigned threads = 1;
  std::string cpus;
  std::string xdp_interface;    // --xdp
  std::string xdp_gateway_mac;  // --xdp-gateway-mac
  std::string queries_per_connection = "unlimited";
  std::string close = "fin";
  std::vector<std::string> sources;
  std::string source_mode = "auto";
  std::uint64_t distinct_sources = 0;  // load_spec::connections.distinct_sources
  // PROXY protocol headers (load_spec::connections.proxy).
  std::string proxy_protocol = "none";
  std::vector<std::string> proxy_sources;
  std::string proxy_source_order = "in-order";
  std::uint64_t seed = 1;
  std::vector<std::string> proxy_tlvs;  // TYPE=HEX
  bool proxy_inside_tls = false;
  bool tcp_fastopen = false;
  bool no_nodelay = false;
  bool one_write_per_query = false;
  std::string tc_retry = "none";
  std::optional<unsigned> coalesce_us;  // unset: the library's default for the arrivals
  // EDNS and header bits of generated queries.
  bool edns = false;
  bool dnssec_ok = false;
  unsigned edns_payload = 1232;
  bool no_rd = false;
  // EDNS options real clients send (RFC 7828, RFC 7830).
  bool edns_keepalive = false;
  std::string edns_padding;  // "block:N"; empty: none
  // EDNS Client Subnet (load_spec::traffic.client_subnet): CIDR[/SOURCE-PREFIX].
  std::string ecs;
  std::string ecs_mode = "per-client";
  bool honour_keepalive = false;
  // TLS.
  std::string tls_backend;  // empty: openssl, or gnutls for a transport that needs it (doq)
  std::string tls_version;
  std::string tls_min_version;
  std::string tls_max_version;
  bool tls_resume = false;
  bool early_data = false;
  std::string sni;
  std::string alpn = "dot";
  std::string doh_path = "/dns-query";
  std::string doh_method = "post";
  std::string ca_file;
  bool verify = false;
  bool insecure = false;
  std::string tls_priority;
  // Built-in responder used when --server is absent.
  unsigned server_threads = 1;
  std::string server_cpus;
  std::string server_mode = "answer";
  std::string server_tls_backend;
  double server_cost_answer_us = 0;     // a known cost (serve --cost-answer-us)
  double server_cost_handshake_us = 0;  // ... per set-up (serve --cost-handshake-us)
  bool server_process = false;          // run it as a child process of its own, monitored
  // Server processes to monitor (--monitor-pid).
  std::vector<int> monitor_pids;
  std::vector<std::string> monitor_cgroups;
  // --monitor-command: one, or one NAME=COMMAND per sweep --target.
  std::vector<std::string> monitor_commands;
  // Output.
  std::string label;
  std::string json_file;
  bool quiet = false;
  bool progress = false;
};

/// The PROXY protocol flags into `proxy`; throws setup_error naming the flag at fault.
void set_proxy(proxy_settings& proxy, const run_options& o);
// --ecs, --ecs-mode and --seed into load_spec::traffic.client_subnet. Throws setup_error
// naming the flag for a value that does not read.
void set_client_subnet(client_subnet_settings& subnet, const run_options& o);

/// Adds every `run` flag to `app`; `with_axes` adds --transport, --clients and
/// --queries-per-connection too (a sweep takes lists for those instead).
void add_run_options(CLI::App& app, run_options& options, bool with_axes);

/// --query-format's value; throws setup_error naming the flag for another.
query_file_format parse_query_format(const std::string& text);
/// The capture options from --pcap-port (53 when none is given).
pcap_options pcap_options_of(const std::vector<std::uint16_t>& ports);
/// --idle in seconds: 0 when absent; throws setup_error naming it unless positive.
double idle_seconds_of(const run_options& options);

/// The flag (with its value where the setting is one value of it: "--tc-retry tcp") that sets
/// a library setting a setup_error names ("load_spec::traffic.rate" gives "--rate"); the
/// path itself for a setting no flag sets.
std::string flag_of_setting(std::string_view path);
/// From now on flag_of_setting(path) is `flag`: the flag the user gave for a setting that
/// several flags set (--tls-version sets load_spec::tls.max_version, as --tls-max-version does).
void name_setting_as(std::string_view path, std::string_view flag);

/// Builds the spec (without server address when the built-in responder is used).
/// Throws setup_error naming the flag for a bad value.
load_spec make_load_spec(const run_options& options);

/// A built-in responder for a spec that has no --server; it listens on loopback on a free
/// port for each of `transports` and the spec is pointed at the one for its transport. With
/// --server-process it is a child process, and the spec monitors it.
std::unique_ptr<builtin_responder> start_builtin_server(const run_options& options, load_spec& spec,
                                                        std::vector<transport_kind> transports);

/// The command line as a shell would take it back (program name without its directory).
std::string command_line(int argc, char** argv);

/// Prints a one-line progress display on stderr when it is a terminal (or when forced).
class progress_printer {
 public:
  explicit progress_printer(bool enabled) : enabled_(enabled) {}
  void operator()(const load_progress& p, const std::string& prefix = "");
  void finish();

 private:
  bool enabled_;
  bool printed_ = false;
};

/// True when stderr is a terminal.
bool stderr_is_terminal();

/// Writes `text` to `path` through a temporary file and a rename, so a reader never sees a
/// half-written file. Throws setup_error naming the path.
void write_file(const std::filesystem::path& path, const std::string& text);

/// Reads a whole file; throws setup_error naming the path.
std::string read_file(const std::filesystem::path& path);

}  // namespace dnstransport::cli
