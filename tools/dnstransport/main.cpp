// dnstransport: measures what a DNS server can do over UDP, TCP and DNS-over-TLS.

#include <exception>

#include <fmt/format.h>

#include <dnstransport/error.hpp>
#include <dnstransport/tls.hpp>
#include <dnstransport/version.hpp>

#include "cli_common.hpp"
#include "commands.hpp"

int main(int argc, char** argv) {
  using namespace dnstransport;
  using namespace dnstransport::cli;

  CLI::App app{
      "dnstransport measures what a DNS server can do over UDP, TCP and DNS-over-TLS: "
      "throughput, latency percentiles, connection and handshake costs."};
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

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return exit_usage;
  }

  install_signal_handlers();
  try {
    for (auto& a : actions) {
      const int status = a();
      if (status >= 0) return status;
    }
    return exit_usage;
  } catch (const setup_error& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return exit_usage;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return exit_no_answers;
  }
}
