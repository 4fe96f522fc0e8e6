// `dnstransport sweep`: a grid of loads with progress and an ETA, saved as JSON and CSV.
#include <algorithm>
#include <cstdio>
#include <ctime>

#include <fmt/format.h>

#include <dnstransport/error.hpp>
#include <dnstransport/report.hpp>
#include <dnstransport/sweep.hpp>
#include <dnstransport/text.hpp>

#include "cli_common.hpp"
#include "commands.hpp"
#include "live_metrics.hpp"

namespace dnstransport::cli {

namespace {

// Every transport this build has, the default grid.
std::string default_transports() {
  std::string list;
  for (const transport_traits& t : all_transports()) {
    if (!t.compiled) continue;
    if (!list.empty()) list += ',';
    list += t.name;
  }
  return list;
}

// The sweep's own flags; every `run` flag except the axes comes from run_options.
struct sweep_flags {
  std::string preset;
  std::string transports = default_transports();
  std::string clients = "1,4,16";
  std::string queries_per_connection = "1,10,100,unlimited";
  std::string distinct_sources;  // empty: not an axis
  unsigned repeats = sweep_plan{}.repeats;
  double pause = sweep_plan{}.pause_seconds;
  std::string csv_file;
  std::string out_dir;
  // --tls-port, --doh-port, --doq-port: a --server's port per transport; 0: not given.
  per_transport<std::uint16_t> ports{};
  std::vector<std::string> targets;
  bool search = false;
  double min_answered = 100;
  double max_p99 = 0;
  double start_rate = 1000;
  double precision = 0.02;
  metrics_flags metrics;
};

std::string clock_text(double seconds) {
  const auto total = static_cast<long>(seconds + 0.5);
  if (total >= 3600)
    return fmt::format("{}:{:02}:{:02}", total / 3600, total / 60 % 60, total % 60);
  return fmt::format("{}:{:02}", total / 60, total % 60);
}

// Progress on stderr: a live line on a terminal, and one line per point in any case.
class sweep_display {
 public:
  sweep_display(bool live, bool quiet) : live_(live && !quiet), quiet_(quiet) {}

  void on_progress(const sweep_progress& p) {
    eta_ = p.eta_seconds;
    if (!live_) return;
    const std::string rate =
        p.run ? fmt::format(", {:.0f} queries/s", p.run->recent_qps) : std::string();
    fmt::print(stderr, "\r\033[K[{}/{}] {}, run {}/{}{}  ETA {}", p.point_index + 1, p.point_count,
               describe(p.point), p.repeat + 1, p.repeats, rate, clock_text(p.eta_seconds));
    std::fflush(stderr);
  }

  void on_point_done(const sweep_result& r) {
    if (quiet_ || r.points.empty()) return;
    const auto& p = r.points.back();
    const auto& q = p.summary.qps;
    const std::string server_cpu = p.summary.server_monitored
                                       ? fmt::format(", server CPU {:.2f} ms per 1,000 answers",
                                                     p.summary.server_cpu_per_1k_answers() * 1e3)
                                       : std::string();
    fmt::print(stderr, "{}[{}/{}] {}: {:.0f} queries/s (runs {:.0f} to {:.0f}){}{}  ETA {}\n",
               live_ ? "\r\033[K" : "", r.points.size(), r.planned_points, describe(p.point),
               q.mean, q.min, q.max, server_cpu, p.summary.client_bound ? ", client-bound" : "",
               clock_text(eta_));
  }

  void finish() {
    if (live_) fmt::print(stderr, "\r\033[K");
  }

 private:
  bool live_;
  bool quiet_;
  double eta_ = 0;
};

std::string local_time_stamp() {
  const std::time_t now = std::time(nullptr);
  std::tm parts{};
  localtime_r(&now, &parts);
  char text[32];
  std::strftime(text, sizeof text, "%Y%m%d-%H%M%S", &parts);
  return text;
}

// "--tls-port": the flag of a --server's port for one transport.
std::string port_flag(transport_kind transport) {
  return fmt::format("--{}-port", transport_name(transport));
}

void register_flags(CLI::App& sweep, run_options& o, sweep_flags& f) {
  sweep.add_option("--preset", f.preset,
                   "A classic study: load (udp/tcp/tls/doh x clients 1-16, persistent connections, "
                   "3 x 5 s) or amortization (tcp/tls/doh x 1-20000 and unlimited queries per "
                   "connection, 8 clients, 3 x 3 s). Flags given as well override its values");
  sweep
      .add_option("--transports", f.transports,
                  "Transports to sweep: udp, tcp, tls, tls-openssl, tls-gnutls, doh, doh-openssl, "
                  "doh-gnutls, doq (tls and doh use --tls-backend; doq always runs on gnutls)")
      ->capture_default_str();
  sweep.add_option("--clients", f.clients, "Client counts to sweep, e.g. 1,2,4,8,16")
      ->capture_default_str();
  sweep
      .add_option("--queries-per-connection", f.queries_per_connection,
                  "tcp/tls/doh: queries per connection to sweep, 'unlimited' for persistent "
                  "connections (UDP runs once per client count)")
      ->capture_default_str();
  sweep.add_option("--distinct-sources", f.distinct_sources,
                   "Distinct client addresses to sweep, e.g. 1,100,10000: how many addresses "
                   "the server sees (from --proxy-source with --proxy-protocol, else from "
                   "--source), whatever --clients, to show what its per-client state (rate "
                   "limits, per-client TCP limits) does to throughput. Default: not an axis");
  sweep.add_option("--repeats", f.repeats, "Runs per point")->capture_default_str();
  sweep.add_option("--pause", f.pause, "Seconds of pause between runs")->capture_default_str();
  sweep.add_flag("--search", f.search,
                 "Measure each point as the highest rate it answers in full (a `search` per "
                 "point: open-loop steps of --duration, --pause apart, --repeats at the edge), "
                 "so that TCP/TLS as % of UDP compares lossless rates instead of saturation");
  sweep
      .add_option("--min-answered", f.min_answered,
                  "--search: a step passes when at least this % of scheduled queries were "
                  "answered")
      ->capture_default_str();
  sweep
      .add_option("--max-p99", f.max_p99,
                  "--search: ... and its p99 latency is at most this many ms (0: no bound)")
      ->capture_default_str();
  sweep.add_option("--start-rate", f.start_rate, "--search: queries per second of each first step")
      ->capture_default_str();
  sweep
      .add_option("--precision", f.precision,
                  "--search: bisection stops within this fraction of the rate found")
      ->capture_default_str();
  sweep.add_option("--json", o.json_file,
                   "Write the sweep here (default: dnstransport-sweep-DATE-TIME.json in --out)");
  sweep.add_option("--csv", f.csv_file,
                   "Write one CSV row per point here (default: the JSON name with .csv)");
  sweep.add_option("--out", f.out_dir,
                   "Directory for the default-named JSON and CSV (default: the current one)");
  add_metrics_flags(sweep, f.metrics, "each run of the sweep");
  sweep.add_option(
      "--target", f.targets,
      "NAME=HOST[:PORT][,tls=PORT][,doh=PORT][,doq=PORT][,pid=PID]: a server to measure "
      "(repeat it for several); each point is run against every target in turn, and the report "
      "compares them. pid=PID (repeatable) monitors its processes on this machine. Instead of "
      "--server");
  // UDP and TCP take the --server port; every other transport has a flag of its own.
  for (const auto& traits : all_transports()) {
    if (traits.default_port == 53) continue;
    sweep.add_option(port_flag(traits.kind), f.ports[traits.kind],
                     fmt::format("With --server: {}port of its {} listener (default {}, or the "
                                 "--server port when every transport is {})",
                                 traits.over_quic ? "UDP " : "", traits.long_name,
                                 traits.default_port, traits.name));
  }
}

// The first --tls-port, --doh-port or --doq-port given; empty for none.
std::string port_flag_given(const sweep_flags& f) {
  for (const auto& traits : all_transports()) {
    if (f.ports[traits.kind] != 0) return port_flag(traits.kind);
  }
  return {};
}

// --monitor-command NAME=COMMAND with --target: the named target's command.
void give_monitor_command(sweep_plan& plan, const std::string& text) {
  const std::size_t equals = text.find('=');
  const std::string name = text.substr(0, equals == std::string::npos ? 0 : equals);
  for (auto& t : plan.targets) {
    if (equals == std::string::npos || t.name != name) continue;
    if (!t.monitor.command.empty()) {
      throw setup_error(fmt::format("--monitor-command: target {} has two commands", name));
    }
    t.monitor.command = text.substr(equals + 1);
    if (t.monitor.command.find_first_not_of(" \t") == std::string::npos) {
      throw setup_error(fmt::format("--monitor-command {}=: the command is empty", name));
    }
    return;
  }
  throw setup_error(fmt::format(
      "--monitor-command \"{}\": with --target it is NAME=COMMAND, NAME one of the targets", text));
}

sweep_plan make_plan(const CLI::App& sweep, const run_options& o, const sweep_flags& f,
                     std::string command) {
  sweep_plan plan;
  run_options base = o;
  if (!f.targets.empty()) {
    // Given to each target below (NAME=COMMAND), or refused there (cgroups).
    base.monitor_commands.clear();
    base.monitor_cgroups.clear();
  }
  if (o.replay == "timing") {
    throw setup_error(
        "--replay timing does not apply to sweep: its clients and times are the capture's "
        "(sweep a capture with --replay fast, or replay it with `run`)");
  }
  // Each point sets its own transport, and run_sweep checks --edns-keepalive against it;
  // the base's (udp unless given) must not refuse the flag first.
  if (base.edns_keepalive) base.transport = "tcp";
  // --idle is for the points with connections and --early-data for those with TLS
  // (point_spec); the base is a UDP spec.
  base.idle.reset();
  base.early_data = false;
  base.rates_searched = f.search;
  plan.base = make_load_spec(base);
  plan.base.connections.idle_seconds = idle_seconds_of(o);
  plan.base.tls.early_data = o.early_data;
  plan.base.stop = &stop_requested;
  plan.command_line = std::move(command);
  const bool preset = !f.preset.empty();
  if (preset) apply_preset(plan, f.preset);
  // A preset's values stand unless the flag is given; without a preset the flags' defaults
  // are the plan.
  auto use = [&](const char* flag) { return !preset || sweep.count(flag) > 0; };
  if (use("--transports")) {
    plan.transports = parse_sweep_transports(f.transports, plan.base.tls.backend);
  }
  if (use("--clients")) plan.clients = parse_client_counts(f.clients);
  if (use("--queries-per-connection")) {
    plan.queries_per_connection = parse_queries_per_connection_list(f.queries_per_connection);
  }
  const bool streams =
      std::any_of(plan.transports.begin(), plan.transports.end(),
                  [](const sweep_transport& t) { return traits_of(t.transport).has_connections; });
  if (!streams && sweep.count("--queries-per-connection") == 0) plan.queries_per_connection = {0};
  if (!f.distinct_sources.empty()) {
    plan.distinct_sources = parse_distinct_sources_list(f.distinct_sources);
  }
  if (use("--repeats")) plan.repeats = f.repeats;
  if (use("--duration")) plan.duration_seconds = o.duration;
  if (use("--pause")) plan.pause_seconds = f.pause;
  for (const char* flag : {"--min-answered", "--max-p99", "--start-rate", "--precision"}) {
    if (!f.search && sweep.count(flag) > 0) {
      throw setup_error(fmt::format("{} applies with --search", flag));
    }
  }
  if (f.search) {
    plan.search = true;
    plan.search_criteria.min_answered_percent = f.min_answered;
    plan.search_criteria.max_p99_ms = f.max_p99;
    plan.search_criteria.start_rate = f.start_rate;
    plan.search_criteria.precision = f.precision;
  }
  if (!f.targets.empty()) {
    if (!o.server.empty()) throw setup_error("--target and --server: give one or the other");
    if (!o.monitor_pids.empty()) {
      throw setup_error("--monitor-pid with --target: give each target its pid=PID instead");
    }
    if (!o.monitor_cgroups.empty()) {
      throw setup_error("--monitor-cgroup with --target: give each target its cgroup=PATH instead");
    }
    if (o.server_process) {
      throw setup_error("--server-process applies to the built-in responder, not to --target");
    }
    if (const std::string flag = port_flag_given(f); !flag.empty()) {
      throw setup_error(
          fmt::format("{} applies to --server; give a --target its ports as "
                      "NAME=HOST:PORT,tls=PORT,doh=PORT,doq=PORT",
                      flag));
    }
    for (const auto& text : f.targets) plan.targets.push_back(parse_sweep_target(text));
    for (const auto& text : o.monitor_commands) give_monitor_command(plan, text);
    plan.base.target.server = plan.targets.front().server;
    plan.ports = plan.targets.front().ports;
    plan.target_description = fmt::format("{} targets", plan.targets.size());
  }
  return plan;
}

// Points the plan at --server, or at a built-in responder listening for every transport.
std::unique_ptr<builtin_responder> set_target(sweep_plan& plan, const run_options& o,
                                              const sweep_flags& f) {
  require_server_under_mpirun(!plan.targets.empty() || !o.server.empty());
  if (!plan.targets.empty()) return nullptr;
  if (o.server.empty()) {
    if (const std::string flag = port_flag_given(f); !flag.empty()) {
      throw setup_error(fmt::format("{} applies to a --server only", flag));
    }
    std::vector<transport_kind> kinds;
    for (const auto& t : plan.transports) {
      if (std::find(kinds.begin(), kinds.end(), t.transport) == kinds.end()) {
        kinds.push_back(t.transport);
      }
    }
    auto responder = start_builtin_server(o, plan.base, kinds);
    plan.ports = responder->ports();
    plan.target_description = fmt::format("built-in responder, {}, {}, {} mode", responder->where(),
                                          counted(o.server_threads, "thread"), o.server_mode);
    return responder;
  }
  const endpoint where = parse_endpoint(o.server, 0, "--server");
  const auto only = [&plan](transport_kind kind) {
    return std::all_of(plan.transports.begin(), plan.transports.end(),
                       [kind](const sweep_transport& t) { return t.transport == kind; });
  };
  // The --server port is the DNS port (UDP and TCP), and every transport's when the sweep
  // has only one; a transport's own flag wins.
  const std::uint16_t given = where.port;
  for (const auto& traits : all_transports()) {
    const bool takes_given = traits.default_port == 53 || only(traits.kind);
    plan.ports[traits.kind] = f.ports[traits.kind] != 0   ? f.ports[traits.kind]
                              : takes_given && given != 0 ? given
                                                          : traits.default_port;
  }
  return nullptr;
}

// Where the JSON and CSV go; checked before anything is sent.
std::pair<std::filesystem::path, std::filesystem::path> output_paths(const run_options& o,
                                                                     const sweep_flags& f) {
  const std::filesystem::path directory = f.out_dir.empty() ? "." : f.out_dir;
  if (!f.out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(directory, ec);
    if (ec)
      throw setup_error(fmt::format("--out: cannot create \"{}\": {}", f.out_dir, ec.message()));
  }
  std::filesystem::path json =
      o.json_file.empty()
          ? directory / fmt::format("dnstransport-sweep-{}.json", local_time_stamp())
          : std::filesystem::path(o.json_file);
  std::filesystem::path csv = f.csv_file;
  if (csv.empty()) csv = std::filesystem::path(json).replace_extension(".csv");
  for (const auto& path : {json, csv}) {
    const auto parent = path.parent_path();
    if (!parent.empty() && !std::filesystem::is_directory(parent)) {
      throw setup_error(fmt::format("cannot write \"{}\": directory \"{}\" does not exist",
                                    path.string(), parent.string()));
    }
  }
  return {json, csv};
}

}  // namespace

action add_sweep_command(CLI::App& app, std::string command) {
  auto* sweep = app.add_subcommand(
      "sweep",
      "Run loads over a grid of transports, client counts and queries per connection, each "
      "repeated; report each transport as % of UDP and the handshake amortization; save JSON and "
      "CSV");
  auto o = std::make_shared<run_options>();
  auto f = std::make_shared<sweep_flags>();
  o->duration = sweep_plan{}.duration_seconds;
  register_flags(*sweep, *o, *f);
  add_run_options(*sweep, *o, false);
  sweep->footer(
      std::string(
          "The default grid (udp,tcp,tls,doh,doq x 1,4,16 clients x 1,10,100,unlimited queries "
          "per connection, 3 runs of 0.5 s) takes about two minutes against the built-in "
          "responder.\n"
          "Examples:\n"
          "  dnstransport sweep --out results\n"
          "  dnstransport sweep --server-process --cpus 0 --server-cpus 1   # responder apart, "
          "on its own CPU\n"
          "  dnstransport sweep --target unbound=127.0.0.1:53,tls=853,pid=$(pidof unbound) "
          "--target dnsdist=127.0.0.1:5301,tls=8531,pid=$(pidof dnsdist)\n"
          "  dnstransport sweep --preset amortization --server 192.0.2.53 --json amort.json\n"
          "  dnstransport sweep --transports udp,tls-openssl,tls-gnutls --clients 1,8 "
          "--queries-per-connection unlimited\n"
          "Then: dnstransport report FILE.json --out DIR (plots and index.html)\n\n") +
      exit_codes_help);
  return [sweep, o, f, command]() -> int {
    if (!sweep->parsed()) return -1;
    sweep_plan plan = make_plan(*sweep, *o, *f, command);
    const auto points = expand(plan);
    // Not a structured binding: a lambda below captures json_path (clang 14 cannot).
    const auto paths = output_paths(*o, *f);
    const std::filesystem::path& json_path = paths.first;
    const std::filesystem::path& csv_path = paths.second;
    const auto responder = set_target(plan, *o, *f);
    if (!o->quiet) {
      const std::string each = plan.base.traffic.count != 0
                                   ? fmt::format("{} queries", plan.base.traffic.count)
                                   : fmt::format("{:g} s", plan.duration_seconds);
      std::string against = plan.base.target.server;
      if (!plan.targets.empty()) {
        against.clear();
        for (const auto& t : plan.targets) {
          against += fmt::format("{}{} ({})", against.empty() ? "" : ", ", t.name, t.server);
        }
      }
      fmt::print(stderr, "sweep: {} points x {} of {} against {}{}; results go to {}\n",
                 points.size(), counted(plan.repeats, "run"), each, against,
                 responder ? " (built-in responder)" : "", json_path.string());
    }
    sweep_display display(o->progress || stderr_is_terminal(), o->quiet);
    sweep_callbacks callbacks;
    callbacks.on_progress = [&display](const sweep_progress& p) { display.on_progress(p); };
    callbacks.on_point_done = [&](const sweep_result& partial) {
      display.on_point_done(partial);
      write_file(json_path, to_json(partial));
    };
    const auto live = open_live_metrics(f->metrics, plan.base, {}, o->quiet);
    if (live) watch_sweep(*live, plan, callbacks);
    const sweep_result result = run_sweep(plan, callbacks);
    display.finish();
    write_file(json_path, to_json(result));
    write_file(csv_path, to_csv(result));
    if (!o->quiet) {
      fmt::print(
          "{}\nresults written to {} and {}\nplots and a web page: dnstransport report {} "
          "--out DIR\n",
          format_tables(result, flag_of_setting), json_path.string(), csv_path.string(),
          json_path.string());
    }
    if (result.interrupted) return exit_interrupted;
    const bool silent_point =
        result.points.empty() ||
        std::any_of(result.points.begin(), result.points.end(),
                    [](const sweep_point_result& p) { return p.summary.responses_received == 0; });
    return silent_point ? exit_no_answers : exit_ok;
  };
}

}  // namespace dnstransport::cli
