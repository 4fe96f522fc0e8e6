// `dnstransport report`: the tables of a saved sweep, and with --out its plots and web page.
#include <fmt/format.h>

#include <dnstransport/report.hpp>
#include <dnstransport/sweep.hpp>

#include "cli_common.hpp"
#include "commands.hpp"

namespace dnstransport::cli {

namespace {

struct report_flags {
  std::string file;
  std::string out_dir;
  bool quiet = false;
};

}  // namespace

action add_report_command(CLI::App& app) {
  auto* report = app.add_subcommand(
      "report", "Print the tables of a saved sweep; with --out, also write plots and index.html");
  auto f = std::make_shared<report_flags>();
  report->add_option("FILE", f->file, "A JSON file written by dnstransport sweep")->required();
  report->add_option("--out", f->out_dir,
                     "Write tables, CSV, gnuplot scripts, PNG and SVG plots and index.html here");
  report->add_flag("--quiet", f->quiet, "Do not print the tables");
  report->footer(
      "Example: dnstransport report dnstransport-sweep-20250101-120000.json --out report\n"
      "The plots are drawn by gnuplot (apt-get install gnuplot-nox); without it the tables, CSV "
      "and gnuplot scripts are still written.\n"
      "Exit status: 0 written; 2 the file cannot be read or is not a sweep result.");
  return [report, f]() -> int {
    if (!report->parsed()) return -1;
    const sweep_result result = sweep_result_from_json(read_file(f->file), f->file);
    if (!f->quiet) fmt::print("{}", format_tables(result));
    if (f->out_dir.empty()) return exit_ok;
    const report_output written = write_report(result, f->out_dir, f->file);
    for (const auto& skipped : written.skipped_plots)
      fmt::print(stderr, "not plotted: {}\n", skipped);
    if (!written.plot_problem.empty()) fmt::print(stderr, "note: {}\n", written.plot_problem);
    fmt::print("report written: {} ({} files)\n", written.index.string(), written.files.size());
    return exit_ok;
  };
}

}  // namespace dnstransport::cli
