#pragma once
// Internal: the search with its steps run by a function of the caller's instead of
// run_load, so that tests drive its decisions (ramp, bisection, repeats, the edge moving
// down) with a model of a server: no sockets, and no clock but the search's own.

#include <functional>

#include <dnstransport/search.hpp>

namespace dnstransport::detail {

// Runs one step's load (its rate, duration and callbacks set) and returns what it measured.
using step_runner = std::function<run_result(const load_spec& step)>;

search_result run_search_with(const search_spec& spec, const step_runner& run_step);

}  // namespace dnstransport::detail
