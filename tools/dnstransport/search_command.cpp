// `dnstransport search`: the highest rate a server answers in full.
#include <fmt/format.h>

#include <dnstransport/error.hpp>
#include <dnstransport/report.hpp>
#include <dnstransport/search.hpp>

#include "cli_common.hpp"
#include "commands.hpp"
#include "live_metrics.hpp"

namespace dnstransport::cli {

namespace {

struct search_flags {
  run_options run;
  double min_answered = 100;
  double max_p99 = 0;
  double start_rate = 1000;
  double max_rate = 0;
  double settle = 1;
  unsigned repeats = 2;
  double precision = 0.02;
  double max_time = 0;
  std::string json_file;
  std::string report_dir;
  metrics_flags metrics;
};

void add_search_flags(CLI::App& search_app, search_flags& flags) {
  search_app
      .add_option("--min-answered", flags.min_answered,
                  "A step passes when at least this percentage of the queries scheduled "
                  "were answered")
      ->capture_default_str();
  search_app
      .add_option("--max-p99", flags.max_p99,
                  "... and its 99th percentile latency (from the scheduled send) is at most "
                  "this many milliseconds (0: no latency bound)")
      ->capture_default_str();
  search_app.add_option("--start-rate", flags.start_rate, "Queries per second of the first step")
      ->capture_default_str();
  search_app
      .add_option("--max-rate", flags.max_rate,
                  "Never offer more queries per second (0: no ceiling)")
      ->capture_default_str();
  search_app
      .add_option("--settle", flags.settle, "Seconds of pause between steps, so queues drain")
      ->capture_default_str();
  search_app
      .add_option("--repeats", flags.repeats, "Bisection steps run this many times; all must pass")
      ->capture_default_str();
  search_app
      .add_option("--precision", flags.precision,
                  "Stop when the lowest failing rate is within this fraction of the highest "
                  "passing one")
      ->capture_default_str();
  search_app
      .add_option("--max-time", flags.max_time,
                  "Start no step that would end after this many seconds (0: no bound)")
      ->capture_default_str();
  search_app.add_option("--json", flags.json_file,
                        "Write the search (criteria, max_rate, every step with its full run) here; "
                        "rewritten after each step");
  search_app.add_option("--report", flags.report_dir,
                        "Write the steps table, steps.csv and the plot (answered % and p99 against "
                        "offered rate) into this directory");
  add_metrics_flags(search_app, flags.metrics, "each step");
}

search_spec search_spec_of(const search_flags& flags) {
  if (flags.run.rate != 0 || flags.run.client_rate != 0) {
    throw setup_error(fmt::format(
        "{} does not apply to search: it chooses the rates; use --start-rate and --max-rate",
        flags.run.rate != 0 ? "--rate" : "--client-rate"));
  }
  if (flags.run.replay == "timing") {
    throw setup_error(
        "--replay timing does not apply to search: it chooses the rates (a capture is "
        "searched with --replay fast)");
  }
  search_spec spec;
  run_options load = flags.run;
  load.rates_searched = true;  // --arrivals spreads the rates each step offers
  spec.load = make_load_spec(load);
  spec.min_answered_percent = flags.min_answered;
  spec.max_p99_ms = flags.max_p99;
  spec.start_rate = flags.start_rate;
  spec.max_rate = flags.max_rate;
  spec.step_seconds = flags.run.duration;
  spec.settle_seconds = flags.settle;
  spec.repeats = flags.repeats;
  spec.precision = flags.precision;
  spec.max_time_seconds = flags.max_time;
  return spec;
}

void print_step(const search_step& s) {
  const std::string phase = fmt::format("{}{}", search_phase_name(s.phase),
                                        s.repeat > 0 ? fmt::format(" #{}", s.repeat + 1) : "");
  fmt::print(
      "step {:>2}  {:<9} {:>9.0f} q/s offered  {:>9.0f} answered/s  answered "
      "{:>7.3f} %  p99 {:>8.3f} ms  {}\n",
      s.index + 1, phase, s.rate, s.qps, s.answered_percent, s.p99_ms, s.verdict);
  std::fflush(stdout);
}

// The search so far, rewritten after each step so that an interrupted search keeps its steps.
void write_partial(const search_result& partial, const search_spec& spec,
                   const std::string& json_file) {
  search_result so_far = partial;
  so_far.criteria = spec;
  so_far.criteria.on_step = nullptr;
  so_far.criteria.on_step_start = nullptr;
  so_far.criteria.load.output.on_figures = nullptr;
  so_far.criteria.on_progress = nullptr;
  so_far.criteria.stop = nullptr;
  so_far.end_reason = "running";
  write_file(json_file, to_json(so_far));
}

}  // namespace

action add_search_command(CLI::App& app) {
  auto* search = app.add_subcommand(
      "search",
      "Find the highest rate a server answers in full: open-loop steps, a ramp, then bisection");
  search->footer(
      std::string(
          "Each step sends --duration seconds of queries at one rate on a schedule that does not "
          "wait for answers (--arrivals constant or poisson) and passes when at least "
          "--min-answered % of the queries scheduled were answered (and p99 <= --max-p99 when "
          "given). The ramp doubles the rate from --start-rate while steps pass (halves it while "
          "they fail), then bisection narrows the edge to --precision, repeating each bisection "
          "step --repeats times.\n\n"
          "Examples:\n"
          "  dnstransport serve --listen 127.0.0.1:5300 --rate-limit 20000 &\n"
          "  dnstransport search --server 127.0.0.1:5300 --clients 4 --json search.json\n"
          "  dnstransport search --server 192.0.2.53 --transport tls --queries-per-connection 10 "
          "--max-p99 50 --max-time 600 --report search-report\n\n") +
      exit_codes_help);
  auto f = std::make_shared<search_flags>();
  f->run.duration = 2;
  add_run_options(*search, f->run, true);
  add_search_flags(*search, *f);
  return [search, f]() -> int {
    if (!search->parsed()) return -1;
    search_spec spec = search_spec_of(*f);
    const bool quiet = f->run.quiet;
    require_server_under_mpirun(!f->run.server.empty());
    std::unique_ptr<builtin_responder> responder;
    if (f->run.server.empty()) {
      validate(spec);  // before starting anything
      responder = start_builtin_server(f->run, spec.load, {spec.load.target.transport});
      if (!quiet) {
        fmt::print(stderr,
                   "no --server given: searching the built-in responder on 127.0.0.1:{} ({}); "
                   "its limit is this machine's, give --server for a real one\n",
                   spec.load.target.port, responder->where());
      }
    }
    validate(spec);
    progress_printer progress(!quiet && (f->run.progress || stderr_is_terminal()));
    spec.on_progress = [&progress](const load_progress& p) { progress(p); };
    spec.stop = &stop_requested;
    search_result partial;
    spec.on_step = [&](const search_step& s) {
      progress.finish();
      partial.steps.push_back(s);
      if (!quiet) print_step(s);
      if (!f->json_file.empty()) write_partial(partial, spec, f->json_file);
    };
    const auto live = open_live_metrics(f->metrics, spec.load, metrics_labels_of(spec.load), quiet);
    if (live) watch_search(*live, spec);
    const search_result result = run_search(spec);
    progress.finish();
    if (!f->json_file.empty()) write_file(f->json_file, to_json(result));
    if (!quiet) {
      fmt::print("\n{}", format_search(result, flag_of_setting));
      if (!f->json_file.empty()) fmt::print("search written to {}\n", f->json_file);
    }
    if (!f->report_dir.empty() && !secondary_rank()) {
      const report_output written = write_search_report(
          result, f->report_dir, f->json_file.empty() ? "search" : f->json_file, flag_of_setting);
      if (!written.plot_problem.empty()) fmt::print(stderr, "note: {}\n", written.plot_problem);
      if (!quiet) fmt::print("report written: {}\n", f->report_dir);
    }
    if (result.interrupted) return exit_interrupted;
    if (result.max_rate <= 0) return exit_no_answers;
    return exit_ok;
  };
}

}  // namespace dnstransport::cli
