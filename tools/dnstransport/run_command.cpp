#include <fmt/format.h>

#include <dnstransport/report.hpp>
#include <dnstransport/text.hpp>

#include "cli_common.hpp"
#include "commands.hpp"
#include "live_metrics.hpp"

namespace dnstransport::cli {

action add_run_command(CLI::App& app) {
  auto* run = app.add_subcommand("run", "Run one load against a server and print what it measured");
  run->footer(
      std::string(
          "Examples:\n"
          "  dnstransport run                                  # built-in responder, UDP\n"
          "  dnstransport run --server 192.0.2.53 --transport tls --queries-per-connection 10\n"
          "  dnstransport run --server [::1]:5300 --clients 16 --outstanding 200 --json "
          "out.json\n"
          "  mpirun -np 4 dnstransport run --server 192.0.2.53 --clients 40000 --client-rate 1   "
          "# one load from 4 processes (or hosts: --hostfile); rank 0 prints the merged "
          "result\n\n") +
      exit_codes_help);
  auto options = std::make_shared<run_options>();
  add_run_options(*run, *options, true);
  run->add_option("--json", options->json_file, "Write the full result (histograms included) here");
  auto metrics = std::make_shared<metrics_flags>();
  add_metrics_flags(*run, *metrics, "the run");
  return [run, options, metrics]() -> int {
    if (!run->parsed()) return -1;
    const run_options& o = *options;
    load_spec spec = make_load_spec(o);
    require_server_under_mpirun(!o.server.empty());
    std::unique_ptr<builtin_responder> responder;
    if (o.server.empty()) {
      responder = start_builtin_server(o, spec, {spec.target.transport});
      if (!o.quiet) {
        fmt::print(stderr,
                   "no --server given: using the built-in responder on 127.0.0.1:{} ({}, {}, "
                   "{})\n",
                   spec.target.port, transport_name(spec.target.transport),
                   counted(o.server_threads, "thread"), responder->where());
      }
    }
    if (traits_of(spec.target.transport).has_tls && !spec.tls.verify && !o.quiet) {
      fmt::print(stderr,
                 "note: TLS certificate verification is off; use --verify --ca-file FILE "
                 "[--sni NAME] to check the server's certificate\n");
    }
    const auto live = open_live_metrics(*metrics, spec, metrics_labels_of(spec), o.quiet);
    if (live) spec.output.on_figures = [&live = *live](const live_figures& f) { live.update(f); };
    progress_printer progress(!o.quiet && (o.progress || stderr_is_terminal()));
    spec.output.on_progress = [&progress](const load_progress& p) { progress(p); };
    spec.stop = &stop_requested;
    const run_result result = run_load(spec);
    progress.finish();
    if (!o.json_file.empty()) write_file(o.json_file, to_json(result));
    if (!o.quiet) {
      fmt::print("{}", format_table(result, flag_of_setting));
      // Clients that claim addresses of their own: whether each one reached the responder.
      if (responder && (!spec.connections.sources.empty() ||
                        spec.connections.proxy.version != proxy_protocol::none)) {
        if (const auto stats = responder->stop()) {
          fmt::print("  responder's clients     {}\n", describe_clients(*stats));
        }
      }
      if (!o.json_file.empty()) fmt::print("  result written to {}\n", o.json_file);
    }
    if (result.ranks_failed() > 0) {
      fmt::print(stderr,
                 "error: {} of {} ranks failed (no result, or no answer): see the per-rank "
                 "table\n",
                 result.ranks_failed(), result.ranks.size());
      return exit_incomplete;
    }
    if (result.interrupted) return exit_interrupted;
    if (result.responses_received == 0) {
      std::string why = result.connections.first_failure;
      fmt::print(stderr, "error: no answers were received{}{}\n", why.empty() ? "" : ": ", why);
      return exit_no_answers;
    }
    return exit_ok;
  };
}

}  // namespace dnstransport::cli
