#pragma once
// One function per subcommand: registers its flags and returns the action to run after parsing.

#include <functional>

#include <CLI/CLI.hpp>

namespace dnstransport::cli {

using action = std::function<int()>;

action add_run_command(CLI::App& app);
action add_serve_command(CLI::App& app);

}  // namespace dnstransport::cli
