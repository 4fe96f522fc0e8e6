// dnstransport: measures what a DNS server can do over UDP, TCP, DoT, DoH and DoQ.

#include <cstdio>
#include <exception>
#include <optional>
#include <string>

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <dnstransport/error.hpp>
#include <dnstransport/mpi.hpp>
#include <dnstransport/tls.hpp>
#include <dnstransport/version.hpp>

#include "cli_common.hpp"
#include "commands.hpp"
#include "manual_page.hpp"

namespace {

using namespace dnstransport;
using namespace dnstransport::cli;

// Where a rank other than 0 reports an error that rank 0 cannot know of (it failed outside
// a load); -1 on rank 0 and outside mpirun.
int rank_error_fd = -1;

// The ranks other than 0 print nothing: rank 0 prints the merged results, and every error a
// rank meets at set-up is reported by rank 0 (load_group::start_together).
void silence_output() {
  const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (null < 0) return;
  std::fflush(stdout);
  std::fflush(stderr);
  rank_error_fd = ::fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
  ::dup2(null, STDOUT_FILENO);
  ::dup2(null, STDERR_FILENO);
  ::close(null);
}

// Joins the mpirun job this process was started in, if any; an exit status when it cannot.
std::optional<int> join_job() {
  const unsigned launched = mpi_launch_size();
  if (launched == 0) return std::nullopt;
  if (!mpi_compiled_in()) {
    if (launched == 1) return std::nullopt;
    fmt::print(stderr,
               "error: started by mpirun as one of {} processes, but this dnstransport was built "
               "without MPI (DNSTRANSPORT_WITH_MPI=OFF, or libopenmpi-dev was not installed "
               "when it was built): each process would run the whole load on its own. Rebuild "
               "it with MPI, or run it without mpirun\n",
               launched);
    return exit_usage;
  }
  job_group = join_mpi_job();
  if (secondary_rank()) silence_output();
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "dnstransport measures what a DNS server can do over UDP, TCP, DNS over TLS, DNS over "
      "HTTPS and DNS over QUIC: throughput, latency percentiles, connection and handshake "
      "costs."};
  app.require_subcommand(1);
  app.footer(std::string("Run 'dnstransport SUBCOMMAND --help' for its flags.\n") +
             exit_codes_help);
  app.set_version_flag("--version", std::string(library_version()));
  std::vector<action> actions{add_run_command(app),
                              add_serve_command(app),
                              add_sweep_command(app, command_line(argc, argv)),
                              add_report_command(app),
                              add_calibrate_command(app),
                              add_queries_command(app),
                              add_monitor_command(app),
                              add_search_command(app)};

  // The build writes the manual page and the completion from these definitions.
  if (const auto status = write_generated_file(app, argc, argv)) return *status;
  if (const auto status = join_job()) return *status;
  // Leaves the MPI job (when in one) before exiting with `status`.
  const auto leave = [](int status, const std::string& error = {}) {
    if (job_group) {
      if (job_group->broken() &&
          (status == exit_ok || status == exit_interrupted || status == exit_incomplete)) {
        fmt::print(stderr,
                   "error: a rank of this mpirun job sent no result (it failed, hung or was "
                   "killed); the results written are those of the ranks that reported\n");
        status = exit_incomplete;
      }
      leave_mpi_job(*job_group, status, error);
    }
    return status;
  };

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return leave(app.exit(e));
  } catch (const CLI::CallForAllHelp& e) {
    return leave(app.exit(e));
  } catch (const CLI::CallForVersion& e) {
    return leave(app.exit(e));
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return leave(exit_usage, e.what());
  }

  install_signal_handlers();
  try {
    if (job_group) {
      const auto* sub = app.get_subcommands().front();
      if (sub->get_name() != "run" && sub->get_name() != "sweep" && sub->get_name() != "search") {
        throw setup_error(fmt::format(
            "`{}` does not run under mpirun: only run, sweep and search share their load over "
            "ranks (start `dnstransport serve` on its own)",
            sub->get_name()));
      }
    }
    for (auto& a : actions) {
      const int status = a();
      if (status >= 0) return leave(status);
    }
    return leave(exit_usage);
  } catch (const setup_error& e) {
    const std::string message = e.message_naming(flag_of_setting);
    fmt::print(stderr, "error: {}\n", message);
    return leave(exit_usage, message);
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    if (rank_error_fd >= 0) {
      const std::string text = fmt::format("error: rank {}: {}\n", job_group->rank(), e.what());
      [[maybe_unused]] const auto written = ::write(rank_error_fd, text.data(), text.size());
    }
    return leave(exit_no_answers, e.what());
  }
}
