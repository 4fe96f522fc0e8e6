#pragma once
/// \file
/// A search run on the caller's executor: `async_run_search(executor, spec, token)` in Asio's
/// style, as async_run_load (async_load.hpp) is for one load. Each step is an
/// async_run_load on `executor`, the pauses between steps are timers there, and the search's
/// callbacks (on_step_start, on_step, on_progress) are called there. run_search (search.hpp)
/// is the same coroutine on an io_context of its own. `executor` must not run the search's
/// handlers at once on several threads: an io_context run by one thread, or a strand.
#include <exception>
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>

#include <dnstransport/search.hpp>

namespace dnstransport {

namespace detail {

/// The search of `spec` as a coroutine on the executor it is spawned on. `may_block`: a
/// search run by a group of processes (load_spec::group) may run its steps with the blocking
/// run_load (run_search's case); otherwise it is refused with a setup_error.
boost::asio::awaitable<search_result> search_coroutine(search_spec spec, bool may_block);

}  // namespace detail

/// Runs the search `spec` on `executor` and completes `token` with
/// `void(std::exception_ptr error, search_result result)`: `error` is null when the search
/// ran (to its end, or stopped: `result.interrupted`), or holds what ended it: the
/// setup_error of a spec that does not hold (validate), or an exception a callback threw.
/// Nothing is sent or called within this call. Cancelling through the token's cancellation
/// slot stops the search as spec.stop does: the step running stops within about 50 ms and
/// the search completes with the steps so far, `interrupted` set. A search run by a group of
/// processes (spec.load.group) is run by run_search only: here its error says so.
template <typename CompletionToken>
auto async_run_search(const boost::asio::any_io_executor& executor, search_spec spec,
                      CompletionToken&& token) {
  return boost::asio::co_spawn(executor, detail::search_coroutine(std::move(spec), false),
                               std::forward<CompletionToken>(token));
}

}  // namespace dnstransport
