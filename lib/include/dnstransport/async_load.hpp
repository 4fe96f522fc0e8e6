#pragma once
/// \file
/// A load run on the caller's executor: `async_run_load(executor, spec, token)` in Asio's
/// style, completed through any completion token (a callback, `boost::asio::use_future`,
/// `boost::asio::use_awaitable` in a C++20 coroutine, `deferred`), cancellable through the
/// token's cancellation slot. run_load (load.hpp) is this on an io_context of its own.
///
/// `executor` must not run the load's handlers at once on several threads: an io_context run
/// by one thread, or a strand.
///
/// The engine's workers still run each on a thread of its own (one per
/// generator_settings::threads, pinned as asked); what runs on `executor` is the watching:
/// every 20 ms it passes a stop on, reads the monitored server and calls
/// load_spec::output.on_progress, and at the end it makes the result. So the executor's
/// thread stays free for other work, several loads can run at once on one io_context, and
/// a progress callback runs where the caller's other handlers do.
#include <exception>
#include <functional>
#include <memory>
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>

#include <dnstransport/load.hpp>

namespace dnstransport {

namespace detail {

class load_operation;

/// What a load started by start_load calls when it ends, through its executor: the error
/// that stopped it (a setup_error before anything was sent) or null, and the result.
using load_completion = std::function<void(std::exception_ptr, run_result)>;

/// Starts `spec` watched on `executor`; `done` is posted to `executor` once, never called
/// from within start_load. The returned operation may be stopped (stop_load) while it runs.
std::shared_ptr<load_operation> start_load(const boost::asio::any_io_executor& executor,
                                           load_spec spec, load_completion done);

/// Asks a running load to stop, as load_spec::stop does: the workers stop within about
/// 50 ms, and the load completes with the result so far (run_result::interrupted).
void stop_load(load_operation& operation) noexcept;

}  // namespace detail

namespace detail {

/// How the library's operations meet Asio's completion tokens. `start(executor, done)` starts
/// an operation and returns a shared_ptr to it; `done` (void(std::exception_ptr, Result)) is
/// posted to `executor` once when it ends. The token completes with what `done` got, through
/// the handler's own executor (which has work until then), and a cancellation through the
/// token's slot calls `stop(operation)`, which must be safe from any thread.
template <typename Result, typename CompletionToken, typename Start, typename Stop>
auto initiate_operation(CompletionToken&& token, const boost::asio::any_io_executor& executor,
                        Start start, Stop stop) {
  return boost::asio::async_initiate<CompletionToken, void(std::exception_ptr, Result)>(
      [](auto handler, const boost::asio::any_io_executor& watch_executor, Start begin, Stop end) {
        using handler_type = decltype(handler);
        // The handler may be move-only (a coroutine's): held once, shared by the callbacks.
        auto held = std::make_shared<handler_type>(std::move(handler));
        // The handler's executor has work until the handler has run.
        auto guard = boost::asio::make_work_guard(
            boost::asio::get_associated_executor(*held, watch_executor));
        auto work = std::make_shared<decltype(guard)>(std::move(guard));
        auto slot = boost::asio::get_associated_cancellation_slot(*held);
        // Called once: the handler moves on to its executor, so that it is destroyed there
        // (its captures may own the object that started it), not where `done` was called.
        auto operation =
            begin(watch_executor, [held, work](std::exception_ptr error, Result result) mutable {
              auto on = work->get_executor();
              // The slot is the handler's: cleared where the handler runs.
              boost::asio::dispatch(on, [held = std::move(held), work = std::move(work), error,
                                         ran = std::move(result)]() mutable {
                boost::asio::get_associated_cancellation_slot(*held).clear();
                work->reset();
                std::move (*held)(error, std::move(ran));
              });
            });
        if (slot.is_connected()) {
          using operation_type = typename decltype(operation)::element_type;
          slot.assign([weak = std::weak_ptr<operation_type>(operation),
                       end](boost::asio::cancellation_type) {
            if (const auto running = weak.lock()) end(*running);
          });
        }
      },
      token, executor, std::move(start), std::move(stop));
}

}  // namespace detail

/// Runs the load `spec` on `executor` and completes `token` with
/// `void(std::exception_ptr error, run_result result)`: `error` is null when the load ran
/// (interrupted or not: every per-query failure is a counter in `result`), or holds the
/// setup_error (or other exception) that kept it from running. Nothing is sent, nothing
/// thrown and no handler called within this call. Cancelling through the token's
/// cancellation slot (any cancellation type) stops the load as load_spec::stop does; the
/// token then completes with the result so far, `interrupted` set. A load run by a group
/// of processes (load_spec::group) is run by run_load only: here its error says so.
template <typename CompletionToken>
auto async_run_load(const boost::asio::any_io_executor& executor, load_spec spec,
                    CompletionToken&& token) {
  return detail::initiate_operation<run_result>(
      std::forward<CompletionToken>(token), executor,
      [load = std::move(spec)](const boost::asio::any_io_executor& on,
                               detail::load_completion done) mutable {
        return detail::start_load(on, std::move(load), std::move(done));
      },
      [](detail::load_operation& running) { detail::stop_load(running); });
}

}  // namespace dnstransport
