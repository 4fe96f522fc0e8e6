#pragma once
// Internal: the search with its steps run by a function of the caller's instead of
// run_load, so that tests drive its decisions (ramp, bisection, repeats, the edge moving
// down) with a model of a server: no sockets, and no clock but the search's own.

#include <functional>

#include <boost/asio/awaitable.hpp>

#include <dnstransport/search.hpp>

namespace dnstransport::detail {

// Runs one step's load (its rate, duration and callbacks set) and returns what it measured.
using step_runner = std::function<run_result(const load_spec& step)>;
// The same, awaited in the search's coroutine.
using step_awaitable = std::function<boost::asio::awaitable<run_result>(load_spec step)>;

// The search with `run_step` for its loads, on an io_context of its own.
search_result run_search_with(const search_spec& spec, const step_runner& run_step);

// The search as a coroutine on the executor it is spawned on, each step awaited from
// `run_step`; throws setup_error when `spec` is not valid.
boost::asio::awaitable<search_result> search_steps(search_spec spec, step_awaitable run_step);

// The search of `spec` as a coroutine on the executor it is spawned on, its steps
// async_run_load's. `may_block`: a search run by a group of processes (load_spec::group) may
// run its steps with the blocking run_load (run_search's case); otherwise it is refused with a
// setup_error (async_run_search's).
boost::asio::awaitable<search_result> search_coroutine(search_spec spec, bool may_block);

}  // namespace dnstransport::detail
