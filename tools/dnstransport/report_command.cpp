// `dnstransport report`: the tables of a saved sweep, and with --out its plots and web page.
#include <fmt/format.h>

#include <dnstransport/error.hpp>
#include <dnstransport/report.hpp>
#include <dnstransport/sweep.hpp>

#include "cli_common.hpp"
#include "commands.hpp"

namespace dnstransport::cli {

namespace {

struct report_flags {
  std::vector<std::string> files;
  std::string out_dir;
  std::string json_file;
  bool quiet = false;
};

}  // namespace

action add_report_command(CLI::App& app) {
  auto* report = app.add_subcommand(
      "report",
      "Print the tables of a saved sweep, run or search, or compare several sweeps; with --out, "
      "also write plots (and index.html for sweeps)");
  auto f = std::make_shared<report_flags>();
  report
      ->add_option("FILE", f->files,
                   "JSON files written by dnstransport sweep; with two or more, the servers are "
                   "compared: each is named by its --label, or its file name. One file of `run "
                   "--json` gives its timeline plot, one of `search --json` its search plot")
      ->required();
  report->add_option("--out", f->out_dir,
                     "Write tables, CSV, gnuplot scripts, PNG and SVG plots and index.html here");
  report->add_option("--json", f->json_file,
                     "With two or more sweeps: write the comparison here as JSON, for scripts "
                     "(each server's points, % of UDP, fits, costs and findings, and the "
                     "findings across servers; --out writes it as comparison.json too)");
  report->add_flag("--quiet", f->quiet, "Do not print the tables");
  report->footer(
      "Examples: dnstransport report dnstransport-sweep-20250101-120000.json --out report\n"
      "          dnstransport report unbound.json knot.json --out compared\n"
      "          dnstransport report unbound.json knot.json --quiet --json compared.json\n"
      "The plots are drawn by gnuplot (apt-get install gnuplot-nox); without it the tables, CSV "
      "and gnuplot scripts are still written.\n"
      "Exit status: 0 written; 2 a file cannot be read or is not a dnstransport result.");
  return [report, f]() -> int {
    if (!report->parsed()) return -1;
    if (!f->json_file.empty() && f->files.size() < 2) {
      throw setup_error(
          "--json writes a comparison of two or more sweeps; a single result is JSON already");
    }
    // A single run (its timeline) or a search is reported on its own.
    if (f->files.size() == 1) {
      const std::string text = read_file(f->files.front());
      // By the format's name, whatever its version: a run or search of another version is
      // refused by its reader, which names the version this build reads.
      const std::string schema = schema_of(text);
      const auto format = [](std::string_view name) { return name.substr(0, name.find('/')); };
      const bool is_run = format(schema) == format(run_schema);
      if (is_run || format(schema) == format(search_schema)) {
        report_output written;
        if (is_run) {
          const run_result run = run_result_from_json(text, f->files.front());
          if (!f->quiet) fmt::print("{}", format_table(run, flag_of_setting));
          if (f->out_dir.empty()) return exit_ok;
          written = write_run_report(run, f->out_dir, f->files.front(), flag_of_setting);
        } else {
          const search_result found = search_result_from_json(text, f->files.front());
          if (!f->quiet) fmt::print("{}", format_search(found, flag_of_setting));
          if (f->out_dir.empty()) return exit_ok;
          written = write_search_report(found, f->out_dir, f->files.front(), flag_of_setting);
        }
        if (!written.plot_problem.empty()) fmt::print(stderr, "note: {}\n", written.plot_problem);
        fmt::print("report written: {} ({} files)\n", f->out_dir, written.files.size());
        return exit_ok;
      }
    }
    std::vector<std::pair<std::string, sweep_result>> read;
    for (const auto& file : f->files) {
      read.emplace_back(file, sweep_result_from_json(read_file(file), file));
    }
    const bool compare = read.size() > 1;
    const auto sweeps = compare ? comparison_of(read) : std::vector<compared_sweep>{};
    if (!f->quiet) {
      fmt::print("{}", compare ? format_comparison(sweeps, flag_of_setting)
                               : format_tables(read.front().second, flag_of_setting));
    }
    if (!f->json_file.empty()) {
      write_file(f->json_file, comparison_to_json(sweeps));
      if (!f->quiet) fmt::print("comparison written to {}\n", f->json_file);
    }
    if (f->out_dir.empty()) return exit_ok;
    const report_output written =
        compare
            ? write_comparison_report(sweeps, f->out_dir, flag_of_setting)
            : write_report(read.front().second, f->out_dir, read.front().first, flag_of_setting);
    for (const auto& skipped : written.skipped_plots)
      fmt::print(stderr, "not plotted: {}\n", skipped);
    if (!written.plot_problem.empty()) fmt::print(stderr, "note: {}\n", written.plot_problem);
    fmt::print("report written: {} ({} files)\n", written.index.string(), written.files.size());
    return exit_ok;
  };
}

}  // namespace dnstransport::cli
