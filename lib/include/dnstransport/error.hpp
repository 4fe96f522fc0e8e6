#pragma once
/// \file
/// Errors that stop a measurement before it starts.

#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace dnstransport {

/// Marks a setting inside a setup_error's message, by its path from the options object the
/// caller filled: `setting("load_spec::traffic.rate")`. The message names it so (what());
/// a program with other names for its settings (the CLI: its flags) renders the message with
/// those (setup_error::message_naming).
std::string setting(std::string_view path);

/// How a program names the library's settings in the texts it shows (errors, warnings, the
/// report's notes): the CLI gives its flags (`--rate` for `load_spec::traffic.rate`). Empty:
/// each setting is named by its path.
using setting_namer = std::function<std::string(std::string_view)>;

/// `marked` (a text holding settings marked by setting(): a setup_error's marked_message(), a
/// warning) with each setting named by `name_of(path)`, or by its path when name_of is empty.
std::string naming_settings(std::string_view marked, const setting_namer& name_of);

/// A problem with what the user asked for: a bad value, a rule two settings break together,
/// an unreadable or malformed query file, a certificate that does not load, an unknown TLS
/// backend. The message is written for a person (it names the file, line or setting); the
/// CLI prints it, with its own flags for the settings, and exits with status 2. Per-query
/// failures are never reported this way: they are counted in run_result.
class setup_error : public std::runtime_error {
 public:
  /// `message` may hold settings marked by setting(); what() names them by their paths.
  explicit setup_error(const std::string& message);
  /// The same, from a C string.
  explicit setup_error(const char* message) : setup_error(std::string(message)) {}

  /// The settings the message names, in order (paths as given to setting()).
  const std::vector<std::string>& settings() const noexcept { return settings_; }

  /// The message with its settings still marked, to build another setup_error from it (one
  /// that adds context, or one in another process of a group) that names them the same way.
  const std::string& marked_message() const noexcept { return marked_; }

  /// The message with each setting named by `name_of(path)` instead of its path.
  std::string message_naming(const setting_namer& name_of) const;

 private:
  std::string marked_;
  std::vector<std::string> settings_;
};

}  // namespace dnstransport
