#pragma once
/// \file
/// Sweeps: many loads over a grid of transports, client counts and queries per connection,
/// each repeated and summarized, and the two answers the tool exists for: TCP/TLS throughput
/// as a percentage of UDP, and how many queries a connection must carry before its set-up
/// (TCP and TLS handshakes) stops mattering. The plan is in sweep_plan.hpp, the results in
/// sweep_result.hpp, the fit in fit.hpp; the sweep's JSON, CSV, tables and report directory
/// in report.hpp.

#include <cstddef>
#include <functional>
#include <optional>

#include <dnstransport/load.hpp>
#include <dnstransport/sweep_plan.hpp>
#include <dnstransport/sweep_result.hpp>

namespace dnstransport {

/// Where a sweep is, for a progress display.
struct sweep_progress {
  std::size_t point_index = 0;       ///< 0-based
  std::size_t point_count = 0;       ///< points in the plan
  unsigned repeat = 0;               ///< 0-based
  unsigned repeats = 0;              ///< runs per point
  sweep_point point;                 ///< the point being measured
  double elapsed_seconds = 0;        ///< since the sweep started
  double eta_seconds = 0;            ///< estimated time left, from the runs so far
  std::optional<load_progress> run;  ///< the current run; nothing when it is just starting
};

/// Hooks called from the thread that called run_sweep (async_run_sweep: on its executor).
struct sweep_callbacks {
  /// At the start of each run and about once per second during it.
  std::function<void(const sweep_progress&)> on_progress;
  /// After each point, with everything measured so far (derived results included), so a
  /// caller can save partial results.
  std::function<void(const sweep_result&)> on_point_done;
};

/// Runs every point of the plan `plan.repeats` times with run_load, pausing between runs.
/// Checks the whole plan first (throws setup_error before sending anything). When
/// plan.base.stop becomes true the sweep stops within about 50 ms and returns what was
/// measured: complete repeats are kept, the interrupted run is discarded (and said so in the
/// warnings), and `interrupted` is set. async_run_sweep (async_sweep.hpp) runs the same sweep
/// on an executor of the caller's; this runs it on an io_context of its own.
sweep_result run_sweep(const sweep_plan& plan, const sweep_callbacks& callbacks = {});

}  // namespace dnstransport
