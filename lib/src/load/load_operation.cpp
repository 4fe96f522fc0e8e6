// One process's load as an asynchronous operation (load_operation.hpp), and the entry points
// of dnstransport/async_load.hpp.
#include "load/load_operation.hpp"

#include <chrono>
#include <cstdint>
#include <utility>

#include <fmt/format.h>
#include <boost/asio/post.hpp>

#include <dnstransport/error.hpp>

#include "util/clock.hpp"

namespace dnstransport::detail {

load_operation::load_operation(boost::asio::any_io_executor executor, const load_spec& spec,
                               std::shared_ptr<const load_spec> owned, std::function<bool()> ready,
                               load_completion done)
    : executor_(std::move(executor)),
      spec_(spec),
      owned_(std::move(owned)),
      ready_(std::move(ready)),
      done_(std::move(done)),
      timer_(executor_) {}

void load_operation::start() {
  try {
    set_up_and_start();
  } catch (...) {
    // Any worker already started is stopped and joined (~run_watch) before they go.
    ended_ = true;
    timer_.cancel();
    watch_.reset();
    workers_.clear();
    complete(std::current_exception(), {});
  }
}

void load_operation::set_up_and_start() {
  if (spec_.group && !ready_) {
    throw setup_error(
        fmt::format("{}: a load run by a group of processes is run by run_load, not async_run_load",
                    setting("load_spec::group")));
  }
  prepared_ = make_run_plan(spec_, feed_.get());
  result_ = std::move(prepared_->result);
  run_plan& plan = prepared_->plan;
  watch_ = std::make_unique<run_watch>(spec_, plan, prepared_->duration_seconds);
  workers_ = make_workers(spec_, plan, prepared_->threads);
  if (ready_ && !ready_()) {
    result_.interrupted = true;
    complete({}, std::move(result_));
    return;
  }
  plan.start_ns = monotonic_ns();
  plan.measure_start_ns = plan.start_ns + seconds_to_ns(spec_.traffic.warmup_seconds);
  plan.send_end_ns = spec_.traffic.count == 0 && spec_.traffic.duration_seconds > 0
                         ? plan.measure_start_ns + seconds_to_ns(spec_.traffic.duration_seconds)
                         : UINT64_MAX;
  watch_->start();
  watch_->start_workers(workers_, [self = shared_from_this()] {
    boost::asio::post(self->executor_, [self] { self->workers_ended(); });
  });
  watch_soon();
}

void load_operation::watch_soon() {
  timer_.expires_after(std::chrono::nanoseconds(run_watch::tick_ns));
  timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (ec || self->ended_) return;
    try {
      self->watch_->tick(monotonic_ns(), self->stop_asked_.load(std::memory_order_relaxed));
      if (const auto* answers = self->prepared_->on_answer.get(); answers != nullptr) {
        if (auto error = answers->error()) std::rethrow_exception(error);
      }
    } catch (...) {
      // A progress or answer callback that threw: the load stops, and ends with that error
      // once its workers have ended.
      self->stop();
      if (!self->error_) self->error_ = std::current_exception();
    }
    self->watch_soon();
  });
}

void load_operation::workers_ended() {
  if (ended_) return;  // given up at the start (start's catch)
  ended_ = true;
  timer_.cancel();
  watch_->join();
  if (const auto* answers = prepared_->on_answer.get(); answers != nullptr && !error_) {
    error_ = answers->error();  // thrown after the last look
  }
  if (error_) {
    complete(error_, {});
    return;
  }
  try {
    complete({}, make_result());
  } catch (...) {
    complete(std::current_exception(), {});
  }
}

run_result load_operation::make_result() {
  const run_plan& plan = prepared_->plan;
  const run_ends ends{watch_->stop_ns(), monotonic_ns()};
  run_result result = std::move(result_);
  const std::uint64_t window_end = add_workers(result, workers_, plan, spec_, ends);
  watch_->close_window(window_end);
  fill_timeline(result, workers_, plan,
                static_cast<double>(ends.end_ns - plan.measure_start_ns) / 1e9);
  watch_->add_server_figures(result);
  watch_->deliver_last_rows(result);
  // In a group, the merged result gets them once, from every member's counts.
  if (!ready_) {
    add_open_loop_warnings(result, spec_);
    add_warmup_warning(result, spec_);
    add_case_warning(result, spec_);
    add_proxy_warning(result, spec_);
    add_distinct_sources_warning(result, spec_);
  }
  return result;
}

void load_operation::complete(std::exception_ptr error, run_result result) {
  if (completed_) return;
  completed_ = true;
  boost::asio::post(executor_, [done = std::move(done_), error, ran = std::move(result)]() mutable {
    done(error, std::move(ran));
  });
}

std::shared_ptr<load_operation> start_load(const boost::asio::any_io_executor& executor,
                                           load_spec spec, load_completion done) {
  auto owned = std::make_shared<const load_spec>(std::move(spec));
  const load_spec& held = *owned;
  auto operation = std::make_shared<load_operation>(executor, held, std::move(owned),
                                                    std::function<bool()>{}, std::move(done));
  operation->start();
  return operation;
}

std::shared_ptr<load_operation> start_fed_load(const boost::asio::any_io_executor& executor,
                                               load_spec spec, std::shared_ptr<query_feed> feed,
                                               load_completion done) {
  auto owned = std::make_shared<const load_spec>(std::move(spec));
  const load_spec& held = *owned;
  auto operation = std::make_shared<load_operation>(executor, held, std::move(owned),
                                                    std::function<bool()>{}, std::move(done));
  operation->feed_from(std::move(feed));
  operation->start();
  return operation;
}

void stop_load(load_operation& operation) noexcept {
  operation.stop();
}

}  // namespace dnstransport::detail
