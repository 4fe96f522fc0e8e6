#include <dnstransport/search.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <future>

#include <fmt/format.h>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <dnstransport/async_load.hpp>
#include <dnstransport/async_search.hpp>
#include <dnstransport/error.hpp>

#include "search/search_steps.hpp"
#include "util/clock.hpp"

// GCC 12 takes the release of an Asio coroutine frame (its recycling allocator's
// operator delete) for a mismatch with the aligned_alloc that allocated it.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace dnstransport {

std::string_view search_phase_name(search_phase phase) noexcept {
  return phase == search_phase::bisect ? "bisect" : "ramp";
}

namespace {

// A setting of search_spec as a setup_error names it: search_setting("start_rate").
std::string search_setting(std::string_view member) {
  return setting(fmt::format("search_spec::{}", member));
}

}  // namespace

void validate(const search_spec& spec) {
  if (!(spec.min_answered_percent > 0 && spec.min_answered_percent <= 100)) {
    throw setup_error(fmt::format("{} must be a percentage above 0 and at most 100 (got {})",
                                  search_setting("min_answered_percent"),
                                  spec.min_answered_percent));
  }
  if (!(spec.max_p99_ms >= 0))
    throw setup_error(search_setting("max_p99_ms") + " cannot be negative");
  if (!(spec.start_rate > 0)) {
    throw setup_error(fmt::format("{} must be above 0 queries per second (got {})",
                                  search_setting("start_rate"), spec.start_rate));
  }
  if (!(spec.max_rate >= 0)) throw setup_error(search_setting("max_rate") + " cannot be negative");
  if (!(spec.step_seconds > 0)) {
    throw setup_error(search_setting("step_seconds") +
                      " (seconds per step) must be greater than 0");
  }
  if (!(spec.settle_seconds >= 0)) {
    throw setup_error(search_setting("settle_seconds") + " cannot be negative");
  }
  if (spec.repeats == 0) throw setup_error(search_setting("repeats") + " must be at least 1");
  if (!(spec.precision > 0 && spec.precision < 1)) {
    throw setup_error(fmt::format("{} must be a fraction between 0 and 1 (got {})",
                                  search_setting("precision"), spec.precision));
  }
  if (!(spec.max_time_seconds >= 0)) {
    throw setup_error(search_setting("max_time_seconds") + " cannot be negative");
  }
  if (spec.load.traffic.arrivals == arrival_mode::closed) {
    throw setup_error(fmt::format(
        "{} closed: search offers each rate open-loop (constant or poisson arrivals), so that "
        "a server that falls behind shows it",
        setting("load_spec::traffic.arrivals")));
  }
  if (spec.load.traffic.count != 0) {
    throw setup_error(fmt::format("{} does not apply to search: each step runs for {} seconds",
                                  setting("load_spec::traffic.count"),
                                  search_setting("step_seconds")));
  }
  load_spec step = spec.load;
  step.traffic.rate = spec.start_rate;
  step.traffic.duration_seconds = spec.step_seconds;
  validate(step);
}

namespace {

namespace asio = boost::asio;
using detail::monotonic_ns;
using detail::step_awaitable;

std::string verdict_of(const search_spec& spec, const run_result& r, bool& passed) {
  passed = false;
  if (r.interrupted) return "interrupted";
  const double answered = r.answered_percent();
  const double p99 = static_cast<double>(r.latency.percentile(99)) / 1e6;
  std::string why;
  if (answered < spec.min_answered_percent) {
    why = fmt::format("answered {:.2f} % < {:g} %", answered, spec.min_answered_percent);
  } else if (spec.max_p99_ms > 0 && (r.responses_received == 0 || p99 > spec.max_p99_ms)) {
    why = fmt::format("p99 {:.2f} ms > {:g} ms", p99, spec.max_p99_ms);
  } else {
    passed = true;
    return "pass";
  }
  // A generator that could not keep up failed the step itself: say so.
  if (r.max_thread_cpu_share > 0.9) {
    why += fmt::format(" (generator busy: a thread at {:.0f} % CPU)", r.max_thread_cpu_share * 100);
  }
  return why;
}

}  // namespace

namespace detail {

// The search, as a coroutine on the executor it runs on: each step's load awaited, the pauses
// between steps timers there. Ended by search_spec::stop, or by a cancellation of the
// coroutine (async_run_search's token), which the step's load takes too.
class searcher {
 public:
  searcher(const search_spec& spec, const step_awaitable& run_step)
      : spec_(spec), run_step_(run_step), started_(monotonic_ns()) {
    result_.criteria = spec;
    result_.criteria.on_step = nullptr;
    result_.criteria.on_step_start = nullptr;
    result_.criteria.on_progress = nullptr;
    result_.criteria.stop = nullptr;
    result_.criteria.load.output.on_progress = nullptr;
    result_.criteria.load.output.on_figures = nullptr;
    result_.criteria.load.stop = nullptr;
  }

  asio::awaitable<search_result> run() {
    // A cancellation is seen here (stopping), not thrown from the next wait.
    co_await asio::this_coro::throw_if_cancelled(false);
    cancellation_ = co_await asio::this_coro::cancellation_state;
    double rate =
        spec_.max_rate > 0 ? std::min(spec_.start_rate, spec_.max_rate) : spec_.start_rate;
    // Ramp: double while steps pass (to the ceiling), halve while they fail.
    std::optional<bool> first;
    for (;;) {
      const auto passed = co_await step(search_phase::ramp, rate, 0);
      if (!passed) co_return finish();
      if (!first) first = *passed;
      if (*passed) {
        note_pass(rate, 1);
        if (!*first) break;  // halving found a passing rate; the one above it failed
        if (spec_.max_rate > 0 && rate >= spec_.max_rate) co_return finish("max_rate");
        rate = spec_.max_rate > 0 ? std::min(rate * 2, spec_.max_rate) : rate * 2;
      } else {
        note_fail(rate);
        if (*first) break;
        rate /= 2;
        if (rate < 1) co_return finish("no_passing_rate");
      }
    }
    // Bisection between the highest pass and the lowest fail above it; the pass it ends on
    // must have passed `repeats` times.
    for (;;) {
      if (high_ - low_ <= spec_.precision * low_) {
        if (runs_at_low_ >= spec_.repeats) co_return finish("converged");
        const double at = low_;
        for (unsigned k = runs_at_low_; k < spec_.repeats; ++k) {
          const auto passed = co_await step(search_phase::bisect, at, k);
          if (!passed) co_return finish();
          if (!*passed) {
            note_fail(at);
            break;
          }
          ++runs_at_low_;
        }
        if (low_ == 0) {
          // The only passing rate failed on repetition: look below it again.
          low_ = high_ / 2;
          runs_at_low_ = 0;
          if (low_ < 1) co_return finish("no_passing_rate");
        }
        continue;
      }
      const double mid = (low_ + high_) / 2;
      bool all = true;
      for (unsigned k = 0; k < spec_.repeats && all; ++k) {
        const auto passed = co_await step(search_phase::bisect, mid, k);
        if (!passed) co_return finish();
        all = *passed;
      }
      if (all) {
        note_pass(mid, spec_.repeats);
      } else {
        note_fail(mid);
      }
    }
  }

 private:
  bool stopping() const noexcept {
    return (spec_.stop != nullptr && spec_.stop->load(std::memory_order_relaxed)) ||
           cancellation_.cancelled() != asio::cancellation_type::none;
  }

  // Waits `seconds` unless the search is stopped first.
  asio::awaitable<void> settle(double seconds) {
    const auto until =
        std::chrono::steady_clock::now() + std::chrono::nanoseconds(detail::seconds_to_ns(seconds));
    asio::steady_timer timer(co_await asio::this_coro::executor);
    while (!stopping() && std::chrono::steady_clock::now() < until) {
      timer.expires_after(std::min<std::chrono::steady_clock::duration>(
          std::chrono::milliseconds(20), until - std::chrono::steady_clock::now()));
      boost::system::error_code ignored;  // cancelled: stopping() says so
      co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
    }
  }

  // Runs one step; nothing when the search must end (stopped, or out of time).
  asio::awaitable<std::optional<bool>> step(search_phase phase, double rate, unsigned repeat) {
    if (!lockstep_ && stopping()) {
      interrupted_ = true;
      co_return std::nullopt;
    }
    // Shared by several processes, every member must take the same decision: the time spent
    // is then counted from the merged results, which every member holds alike.
    const double elapsed =
        lockstep_ ? lockstep_elapsed_ : static_cast<double>(monotonic_ns() - started_) / 1e9;
    const double settle_first = result_.steps.empty() ? 0 : spec_.settle_seconds;
    if (spec_.max_time_seconds > 0 &&
        elapsed + settle_first + spec_.load.traffic.warmup_seconds + spec_.step_seconds >
            spec_.max_time_seconds) {
      out_of_time_ = true;
      co_return std::nullopt;
    }
    co_await settle(settle_first);
    if (!lockstep_ && stopping()) {
      interrupted_ = true;
      co_return std::nullopt;
    }
    load_spec load = spec_.load;
    load.traffic.rate = rate;
    load.traffic.count = 0;
    load.traffic.duration_seconds = spec_.step_seconds;
    load.stop = spec_.stop;
    load.output.on_progress = spec_.on_progress;
    search_step s;
    s.index = static_cast<unsigned>(result_.steps.size());
    s.phase = phase;
    s.repeat = repeat;
    s.rate = rate;
    if (spec_.on_step_start) spec_.on_step_start(s);
    s.run = co_await run_step_(std::move(load));
    const run_result& r = s.run;
    s.answered_percent = r.answered_percent();
    s.qps = r.qps;
    s.p50_ms = static_cast<double>(r.latency.percentile(50)) / 1e6;
    s.p99_ms = static_cast<double>(r.latency.percentile(99)) / 1e6;
    s.scheduled = r.queries_scheduled();
    s.answered = r.responses_received;
    s.lost = r.lost + r.lost_on_close;
    s.not_sent = r.not_sent_outstanding + r.not_sent_timeout;
    s.client_cpu_share = r.max_thread_cpu_share;
    s.verdict = verdict_of(spec_, r, s.passed);
    result_.steps.push_back(s);
    if (spec_.on_step) spec_.on_step(result_.steps.back());
    lockstep_elapsed_ += settle_first + spec_.load.traffic.warmup_seconds + r.elapsed_seconds;
    // A member that went missing ends the search like a stop.
    if (r.interrupted || r.ranks_missing() > 0) {
      interrupted_ = true;
      co_return std::nullopt;
    }
    co_return s.passed;
  }

  void note_pass(double rate, unsigned runs) {
    if (rate > low_) {
      low_ = rate;
      runs_at_low_ = runs;
    }
  }

  void note_fail(double rate) {
    if (high_ == 0 || rate < high_) high_ = rate;
    if (rate <= low_) {
      // A rate that passed before failed now: the highest pass below it is the new edge.
      double below = 0;
      unsigned runs = 0;
      for (const auto& s : result_.steps) {
        if (s.rate >= rate) continue;
        if (s.rate > below) {
          below = s.rate;
          runs = 0;
        }
        if (s.rate == below) runs = s.passed ? runs + 1 : 0;
      }
      low_ = below;
      runs_at_low_ = runs;
    }
  }

  search_result finish(std::string_view reason = {}) {
    result_.max_rate = low_;
    result_.failed_rate = high_;
    result_.interrupted = interrupted_;
    if (interrupted_) {
      result_.end_reason = "interrupted";
    } else if (out_of_time_) {
      result_.end_reason = "max_time";
    } else {
      result_.end_reason = std::string(reason);
    }
    result_.elapsed_seconds = static_cast<double>(monotonic_ns() - started_) / 1e9;
    return std::move(result_);
  }

  const search_spec& spec_;
  const step_awaitable& run_step_;
  asio::cancellation_state cancellation_;
  std::uint64_t started_;
  const bool lockstep_ = spec_.load.group != nullptr;
  double lockstep_elapsed_ = 0;
  search_result result_;
  double low_ = 0;   // highest rate that passed
  double high_ = 0;  // lowest rate that failed above it (0: none yet)
  unsigned runs_at_low_ = 0;
  bool interrupted_ = false;
  bool out_of_time_ = false;
};

asio::awaitable<search_result> search_steps(search_spec spec, step_awaitable run_step) {
  validate(spec);
  searcher search(spec, run_step);
  co_return co_await search.run();
}

asio::awaitable<search_result> search_coroutine(search_spec spec, bool may_block) {
  if (spec.load.group != nullptr && !may_block) {
    throw setup_error(
        fmt::format("{}: a search run by a group of processes is run by run_search, "
                    "not async_run_search",
                    setting("load_spec::group")));
  }
  const auto executor = co_await asio::this_coro::executor;
  // A group's loads are run_load's only: every member's steps in lockstep.
  const step_awaitable run_step = [executor](load_spec step) -> asio::awaitable<run_result> {
    if (step.group != nullptr) co_return run_load(step);
    co_return co_await async_run_load(executor, std::move(step), asio::use_awaitable);
  };
  co_return co_await search_steps(std::move(spec), run_step);
}

// A search started by start_search: the signal that cancels its coroutine, emitted on its
// executor (the posted emit holds the operation, which the search's end may release first).
class search_operation : public std::enable_shared_from_this<search_operation> {
 public:
  explicit search_operation(asio::any_io_executor executor) : executor_(std::move(executor)) {}
  asio::cancellation_slot slot() { return signal_.slot(); }
  void stop() {
    asio::post(executor_, [self = shared_from_this()] {
      self->signal_.emit(asio::cancellation_type::terminal);
    });
  }

 private:
  asio::any_io_executor executor_;
  asio::cancellation_signal signal_;
};

std::shared_ptr<search_operation> start_search(const asio::any_io_executor& executor,
                                               search_spec spec, search_completion done) {
  auto operation = std::make_shared<search_operation>(executor);
  asio::co_spawn(executor, search_coroutine(std::move(spec), false),
                 asio::bind_cancellation_slot(operation->slot(),
                                              [operation, done = std::move(done)](
                                                  std::exception_ptr error, search_result result) {
                                                done(error, std::move(result));
                                              }));
  return operation;
}

void stop_search(search_operation& operation) noexcept {
  try {
    operation.stop();
  } catch (...) {  // out of memory: the search runs to its end
  }
}

namespace {

// The search coroutine on an io_context of its own, to its end.
search_result run_alone(asio::awaitable<search_result> search) {
  asio::io_context io;
  std::exception_ptr error;
  search_result result;
  asio::co_spawn(io, std::move(search), [&](std::exception_ptr e, search_result r) {
    error = e;
    result = std::move(r);
  });
  io.run();
  if (error) std::rethrow_exception(error);
  return result;
}

}  // namespace

search_result run_search_with(const search_spec& spec, const step_runner& run_step) {
  const step_awaitable awaited = [&run_step](load_spec step) -> asio::awaitable<run_result> {
    co_return run_step(step);
  };
  return run_alone(search_steps(spec, awaited));
}

}  // namespace detail

search_result run_search(const search_spec& spec) {
  return detail::run_alone(detail::search_coroutine(spec, true));
}

}  // namespace dnstransport
