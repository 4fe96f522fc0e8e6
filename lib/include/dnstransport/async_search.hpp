#pragma once
/// \file
/// A search run on the caller's executor: `async_run_search(executor, spec, token)` in Asio's
/// style, as async_run_load (async_load.hpp) is for one load. Each step is an
/// async_run_load on `executor`, the pauses between steps are timers there, and the search's
/// callbacks (on_step_start, on_step, on_progress) are called there. run_search (search.hpp)
/// is the same coroutine on an io_context of its own. `executor` must not run the search's
/// handlers at once on several threads: an io_context run by one thread, or a strand.
#include <exception>
#include <functional>
#include <memory>
#include <utility>

#include <boost/asio/any_io_executor.hpp>

#include <dnstransport/async_load.hpp>
#include <dnstransport/search.hpp>

namespace dnstransport {

namespace detail {

class search_operation;

/// What a search started by start_search calls when it ends, through its executor.
using search_completion = std::function<void(std::exception_ptr, search_result)>;

/// Starts the search of `spec` as a coroutine on `executor`; `done` is posted to `executor`
/// once, never called from within start_search.
std::shared_ptr<search_operation> start_search(const boost::asio::any_io_executor& executor,
                                               search_spec spec, search_completion done);

/// Asks a running search to stop (from any thread): the step running stops within about
/// 50 ms, and the search completes with the steps so far (search_result::interrupted).
void stop_search(search_operation& operation) noexcept;

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
  return detail::initiate_operation<search_result>(
      std::forward<CompletionToken>(token), executor,
      [held = std::move(spec)](const boost::asio::any_io_executor& on,
                               detail::search_completion done) mutable {
        return detail::start_search(on, std::move(held), std::move(done));
      },
      [](detail::search_operation& running) { detail::stop_search(running); });
}

}  // namespace dnstransport
