#pragma once
// One process's load as an asynchronous operation: set up, the workers started on threads of
// their own, watched every 20 ms on an executor, the result made when the last one ends.
// async_run_load (dnstransport/async_load.hpp) runs it on the caller's executor; run_load
// on an io_context of its own, so both are the same code.

#include <atomic>
#include <exception>
#include <functional>
#include <memory>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <dnstransport/async_load.hpp>
#include <dnstransport/load.hpp>

#include "load/load_steps.hpp"

namespace dnstransport::detail {

class load_operation : public std::enable_shared_from_this<load_operation> {
 public:
  // `spec` must outlive the operation (run_load's caller's, or async_run_load's own copy
  // held in `owned`). `ready`, when given, is called once the set-up is done, just before the
  // first query: false means "do not send" (the result is then an interrupted, empty run);
  // a member of a group waits there for the others, and its result gets the warnings of the
  // whole group later, not its own.
  load_operation(boost::asio::any_io_executor executor, const load_spec& spec,
                 std::shared_ptr<const load_spec> owned, std::function<bool()> ready,
                 load_completion done);

  // Before start: the load sends the program's queries from `feed` (run_plan::feed).
  void feed_from(std::shared_ptr<query_feed> feed) { feed_ = std::move(feed); }
  // Sets up and starts the workers; every error ends in `done`, posted, never thrown.
  void start();
  void stop() noexcept { stop_asked_.store(true, std::memory_order_relaxed); }

 private:
  void set_up_and_start();
  void watch_soon();
  void workers_ended();
  run_result make_result();
  void complete(std::exception_ptr error, run_result result);

  boost::asio::any_io_executor executor_;
  const load_spec& spec_;
  std::shared_ptr<const load_spec> owned_;
  std::function<bool()> ready_;
  load_completion done_;
  boost::asio::steady_timer timer_;
  std::atomic<bool> stop_asked_{false};
  bool ended_ = false;        // the workers ended, or never started
  bool completed_ = false;    // done_ was posted
  std::exception_ptr error_;  // what stopped the load on the watching side
  std::shared_ptr<query_feed> feed_;
  std::unique_ptr<prepared_load> prepared_;
  run_result result_;
  std::vector<std::unique_ptr<worker>> workers_;
  // After workers_: destroyed first, it stops and joins any worker still running.
  std::unique_ptr<run_watch> watch_;
};

// start_load of a load fed by `feed` (a spec of one client, one thread, outstanding equal to
// the feed's cells).
std::shared_ptr<load_operation> start_fed_load(const boost::asio::any_io_executor& executor,
                                               load_spec spec, std::shared_ptr<query_feed> feed,
                                               load_completion done);

}  // namespace dnstransport::detail
