#pragma once
// One function per subcommand: registers its flags and returns the action to run after parsing.

#include <functional>
#include <string>

#include <CLI/CLI.hpp>

namespace dnstransport::cli {

using action = std::function<int()>;

action add_run_command(CLI::App& app);
action add_serve_command(CLI::App& app);
/// `command` is the command line, kept in the sweep's JSON.
action add_sweep_command(CLI::App& app, std::string command);
action add_report_command(CLI::App& app);
action add_calibrate_command(CLI::App& app);
action add_queries_command(CLI::App& app);
action add_monitor_command(CLI::App& app);
action add_search_command(CLI::App& app);

}  // namespace dnstransport::cli
