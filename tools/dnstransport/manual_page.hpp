#pragma once
// The manual page dnstransport(1) and the bash completion, written from the option
// definitions of the command line itself (the CLI::App that main builds), so that neither can
// drift from `--help`. The build writes both with the hidden first arguments
// --write-manual-page FILE and --write-bash-completion FILE.

#include <optional>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

namespace dnstransport::cli {

/// dnstransport(1) in roff with the man(7) macros: every subcommand with its description and
/// its options by group, each option as `--help` shows it (its names, value type, default and
/// text), then the exit status.
std::string manual_page(const CLI::App& app, std::string_view version);

/// A bash completion script (function _dnstransport, `complete -o default`): subcommands
/// first, then the flags of the subcommand given; after a flag that takes a value, bash's own
/// file name completion.
std::string bash_completion(const CLI::App& app);

/// Handles `--write-manual-page FILE` and `--write-bash-completion FILE` as the only
/// arguments: writes the file and returns the exit status; nullopt for any other command line.
std::optional<int> write_generated_file(const CLI::App& app, int argc, char** argv);

}  // namespace dnstransport::cli
