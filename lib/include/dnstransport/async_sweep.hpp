#pragma once
/// \file
/// A sweep run on the caller's executor: `async_run_sweep(executor, plan, callbacks, token)`
/// in Asio's style, as async_run_load (async_load.hpp) is for one load. Each of the sweep's
/// runs is an async_run_load on `executor`, the pauses between them are timers there, and
/// the callbacks (progress, each point done) are called there as they happen. run_sweep
/// (sweep.hpp) is this on an io_context of its own. `executor` must not run the sweep's
/// handlers at once on several threads: an io_context run by one thread, or a strand.
#include <exception>
#include <functional>
#include <memory>

#include <boost/asio/any_io_executor.hpp>

#include <dnstransport/async_load.hpp>
#include <dnstransport/sweep.hpp>

namespace dnstransport {

namespace detail {

class sweep_operation;

/// What a sweep started by start_sweep calls when it ends, through its executor.
using sweep_completion = std::function<void(std::exception_ptr, sweep_result)>;

/// Starts `plan` on `executor`; `done` is posted to `executor` once, never called from
/// within start_sweep.
std::shared_ptr<sweep_operation> start_sweep(const boost::asio::any_io_executor& executor,
                                             sweep_plan plan, sweep_callbacks callbacks,
                                             sweep_completion done);

/// Asks a running sweep to stop, as sweep_plan::base.stop does (from any thread).
void stop_sweep(sweep_operation& operation) noexcept;

}  // namespace detail

/// Runs the sweep `plan` on `executor` and completes `token` with
/// `void(std::exception_ptr error, sweep_result result)`: `error` is null when the sweep ran
/// (to the end, or stopped: `result.interrupted`), or holds what ended it: the setup_error
/// that the whole plan is checked for before anything is sent, or an exception thrown by a
/// callback (`result` then holds the points measured until then). Nothing is sent, thrown or
/// called within this call. Cancelling through the token's cancellation slot stops the sweep
/// as plan.base.stop does: within about 50 ms, keeping every complete repeat. A sweep that
/// searches each point (plan.search) or is run by a group of processes (plan.base.group) is
/// run by run_sweep only: here its error says so.
template <typename CompletionToken>
auto async_run_sweep(const boost::asio::any_io_executor& executor, sweep_plan plan,
                     sweep_callbacks callbacks, CompletionToken&& token) {
  return detail::initiate_operation<sweep_result>(
      std::forward<CompletionToken>(token), executor,
      [held = std::move(plan), calls = std::move(callbacks)](
          const boost::asio::any_io_executor& on, detail::sweep_completion done) mutable {
        return detail::start_sweep(on, std::move(held), std::move(calls), std::move(done));
      },
      [](detail::sweep_operation& running) { detail::stop_sweep(running); });
}

}  // namespace dnstransport
