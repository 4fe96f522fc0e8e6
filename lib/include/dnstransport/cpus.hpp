#pragma once
/// \file
/// CPU lists, as given to --cpus and --server-cpus: which CPUs worker threads are pinned to.

#include <string_view>
#include <vector>

namespace dnstransport {

/// Parses "0", "0,2" or "0-3,6". Throws setup_error naming `flag` for an empty item, a value
/// that is not a number, a backwards range, or a CPU this machine does not have.
std::vector<int> parse_cpu_list(std::string_view text, std::string_view flag);

/// Throws setup_error naming `flag` when a CPU in `cpus` does not exist on this machine.
void check_cpus(const std::vector<int>& cpus, std::string_view flag);

}  // namespace dnstransport
