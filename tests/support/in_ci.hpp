#pragma once
// Whether the tests run in CI (CI=true in the environment). There a missing prerequisite
// (kdig, a network namespace of its own) is a failure, not a skip, so that CI always runs
// every test it claims to.

#include <cstdlib>
#include <string_view>

namespace dnstransport::hostile {

inline bool in_ci() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string_view(ci) == "true";
}

}  // namespace dnstransport::hostile
