#pragma once
/// \file
/// The highest rate a server answers in full: open-loop loads at chosen rates, a coarse
/// ramp (doubling from a start rate, or halving when the start rate already fails), then
/// bisection between the highest rate that passed and the lowest that failed, each
/// bisection step repeated at the edge. A step passes when at least `min_answered_percent`
/// of the queries scheduled were answered (and, when asked, the 99th percentile latency,
/// from the scheduled send times, stays within `max_p99_ms`).

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <dnstransport/load.hpp>

namespace dnstransport {

/// What to search, and how.
struct search_spec {
  /// The load of every step: transport, clients, outstanding, queries per connection, ...;
  /// its rate and duration are set per step, its stop flag is the search's. Its arrivals
  /// must be open-loop (constant or poisson).
  load_spec load;
  double min_answered_percent = 100;  ///< a step passes at or above this (0 < x <= 100)
  double max_p99_ms = 0;              ///< and with p99 latency at or below this; 0: no bound
  double start_rate = 1000;           ///< queries per second of the first step
  double max_rate = 0;                ///< never offer more than this; 0: no ceiling
  double step_seconds = 2;            ///< measured time per step (load.traffic.duration_seconds)
  double settle_seconds = 1;          ///< pause between steps, so queues drain
  unsigned repeats = 2;               ///< bisection steps run this often; all must pass
  /// Bisection ends when the gap between the highest passing and lowest failing rate is at
  /// most this fraction of the passing one.
  double precision = 0.02;
  double max_time_seconds = 0;  ///< no step starts that would end after this; 0: no bound
  /// Called before each step (after its settling pause) with its index, phase, repeat and
  /// rate set and nothing measured yet, from the thread that called run_search
  /// (async_run_search: on its executor).
  std::function<void(const struct search_step&)> on_step_start;
  /// Called after each step, from the thread that called run_search (async_run_search: on
  /// its executor).
  std::function<void(const struct search_step&)> on_step;
  /// Progress of the step that runs (load_spec::output.on_progress).
  std::function<void(const load_progress&)> on_progress;
  const std::atomic<bool>* stop = nullptr;  ///< set: the search ends, keeping its steps
};

/// "ramp" (doubling or halving to find a passing and a failing rate) or "bisect".
enum class search_phase { ramp, bisect };
/// "ramp" or "bisect".
std::string_view search_phase_name(search_phase phase) noexcept;

/// One load of the search.
struct search_step {
  unsigned index = 0;  ///< 0-based, in the order run
  /// The ramp, or the bisection.
  search_phase phase = search_phase::ramp;
  unsigned repeat = 0;  ///< 0-based repetition at this rate
  double rate = 0;      ///< offered queries per second
  /// Answers as a percentage of the queries scheduled (run_result::answered_percent).
  double answered_percent = 0;
  double qps = 0;               ///< answers per second
  double p50_ms = 0;            ///< median latency, from the scheduled send time
  double p99_ms = 0;            ///< 99th percentile latency, likewise
  std::uint64_t scheduled = 0;  ///< queries whose time came after the warm-up
  std::uint64_t answered = 0;   ///< answers received
  std::uint64_t lost = 0;       ///< lost and lost on close
  std::uint64_t not_sent = 0;   ///< the generator could not send them on time
  double client_cpu_share = 0;  ///< busiest generator thread's CPU share
  bool passed = false;          ///< it met the criteria (verdict "pass")
  std::string verdict;          ///< "pass", or why not ("answered 97.31 % < 100 %", "p99 ...")
  run_result run;               ///< everything the step measured
};

/// What the search found.
struct search_result {
  search_spec criteria;            ///< as run (callbacks and stop flag cleared)
  std::vector<search_step> steps;  ///< every step, in the order run
  /// The highest rate that passed (all its repetitions, in bisection); 0 when none did.
  double max_rate = 0;
  /// The lowest rate that failed above it; 0 when none did (the ceiling or the time ran
  /// out first).
  double failed_rate = 0;
  bool interrupted = false;  ///< stopped by the stop flag
  /// Why the search ended: "converged", "max_rate" (the ceiling passed), "max_time",
  /// "interrupted", "no_passing_rate" (even the lowest rate tried failed).
  std::string end_reason;
  double elapsed_seconds = 0;  ///< wall time of the whole search, pauses included
};

/// Runs the search. Throws setup_error for an unusable spec before sending anything; once
/// traffic flows nothing is thrown but what a callback throws. async_run_search
/// (async_search.hpp) runs the same search on an executor of the caller's; this runs it on an
/// io_context of its own.
search_result run_search(const search_spec& spec);

/// Checks a spec without running it; throws setup_error naming the offending flag.
void validate(const search_spec& spec);

}  // namespace dnstransport
