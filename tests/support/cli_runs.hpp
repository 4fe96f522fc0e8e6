#pragma once
/// \file
/// Test support: the command-line tool of this build (the integration tests' target defines
/// DNSTRANSPORT_CLI_PATH), and a check that it refuses a command line as a usage error.

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "child_process.hpp"

#ifdef DNSTRANSPORT_CLI_PATH

namespace dnstransport::hostile {

inline const std::string cli = DNSTRANSPORT_CLI_PATH;

/// The tool, run with `arguments`, exits with status 2 (usage) in time and its error names
/// `mentions` (the flag, file or line at fault), in the CLI's words: no setting of the
/// library ("load_spec::traffic.rate") is left unnamed by its flag.
inline void expect_refused(const std::vector<std::string>& arguments, const std::string& mentions,
                           std::chrono::milliseconds limit = std::chrono::seconds(20)) {
  const process_result r = run_process(cli, arguments, limit);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(mentions), std::string::npos) << "stderr: " << r.err;
  for (const char* library_word : {"_spec::", "sweep_plan::", "\x1e"}) {
    EXPECT_EQ(r.err.find(library_word), std::string::npos) << "stderr: " << r.err;
  }
}

}  // namespace dnstransport::hostile

#endif
