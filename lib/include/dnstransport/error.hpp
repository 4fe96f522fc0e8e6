#pragma once
/// \file
/// Errors that stop a measurement before it starts.

#include <stdexcept>
#include <string>

namespace dnstransport {

/// A problem with what the user asked for: a bad flag value, an unreadable or malformed
/// query file, a certificate that does not load, an unknown TLS backend. The message is
/// written for the person at the terminal (it names the file, line or option); the CLI
/// prints it and exits with status 2. Per-query failures are never reported this way:
/// they are counted in run_result.
class setup_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace dnstransport
