// Running a sweep: every point of the plan, repeated, with progress, an ETA and a clean stop.
#include <dnstransport/sweep.hpp>

#include <chrono>
#include <ctime>
#include <thread>

#include <dnstransport/error.hpp>
#include <dnstransport/search.hpp>
#include <dnstransport/version.hpp>

#include <fmt/format.h>

namespace dnstransport {

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm parts{};
  gmtime_r(&now, &parts);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &parts);
  return text;
}

bool stopped(const std::atomic<bool>* stop) {
  return stop != nullptr && stop->load(std::memory_order_relaxed);
}

// Sleeps for `seconds`, returning early when the stop flag is raised.
void pause_unless_stopped(double seconds, const std::atomic<bool>* stop) {
  const auto end = clock_type::now() + std::chrono::duration<double>(seconds);
  while (!stopped(stop) && clock_type::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Estimates the time left from the wall time the runs so far took (pauses included), or from
// the plan before the first run ends.
class eta_estimator {
 public:
  eta_estimator(const sweep_plan& plan, std::size_t runs)
      : planned_run_seconds_(plan.base.warmup_seconds + plan.duration_seconds + plan.pause_seconds),
        runs_(runs) {}

  void run_done(double wall_seconds) {
    spent_seconds_ += wall_seconds;
    ++done_;
  }

  double seconds_left(double current_run_elapsed) const {
    const double per_run =
        done_ > 0 ? spent_seconds_ / static_cast<double>(done_) : planned_run_seconds_;
    const double left = per_run * static_cast<double>(runs_ - done_) - current_run_elapsed;
    return left > 0 ? left : 0;
  }

 private:
  double planned_run_seconds_;
  std::size_t runs_;
  std::size_t done_ = 0;
  double spent_seconds_ = 0;
};

}  // namespace

namespace {

// sweep --search: the search of one point, with the plan's criteria, step length, pause and
// repeats.
search_spec point_search_spec(const sweep_plan& plan, const sweep_point& point,
                              const std::atomic<bool>* stop) {
  search_spec spec = plan.search_criteria;
  spec.load = point_spec(plan, point);
  spec.load.stop = nullptr;
  spec.load.on_progress = nullptr;
  spec.step_seconds = plan.duration_seconds;
  spec.settle_seconds = plan.pause_seconds;
  spec.repeats = plan.repeats;
  spec.on_step = nullptr;
  spec.on_progress = nullptr;
  spec.stop = stop;
  return spec;
}

}  // namespace

sweep_result run_sweep(const sweep_plan& plan, const sweep_callbacks& callbacks) {
  const std::vector<sweep_point> points = expand(plan);
  sweep_plan prepared = plan;
  // Encode the default queries once, not once per run.
  if (!prepared.base.queries) {
    prepared.base.queries = std::make_shared<const query_set>(default_queries());
  }
  for (const auto& point : points) validate(point_spec(prepared, point));
  if (plan.search) {
    if (plan.base.rate != 0 || plan.base.client_rate != 0) {
      throw setup_error(fmt::format("{} with --search: the search chooses the rates (--start-rate)",
                                    plan.base.rate != 0 ? "--rate" : "--client-rate"));
    }
    for (const auto& point : points) validate(point_search_spec(prepared, point, nullptr));
  }
  const std::atomic<bool>* stop = plan.base.stop;

  sweep_result result;
  result.plan = prepared;
  result.plan.base.stop = nullptr;
  result.plan.base.on_progress = nullptr;
  result.query_origin = prepared.base.queries->origin();
  result.query_count = prepared.base.queries->size();
  result.tool_version = std::string(library_version());
  result.machine = this_machine();
  result.started_at = utc_now();
  result.planned_points = points.size();

  const auto start = clock_type::now();
  eta_estimator eta(plan, points.size() * plan.repeats);
  bool first_run = true;
  // Shared by several processes: every member must run each point, so a stop is decided
  // together at the start of the next load (load_group::start_together), not here.
  const bool lockstep = plan.base.group != nullptr;
  for (std::size_t i = 0; i < points.size() && !result.interrupted; ++i) {
    sweep_point_result measured;
    measured.point = points[i];
    sweep_progress progress;
    progress.point_index = i;
    progress.point_count = points.size();
    progress.repeats = plan.repeats;
    progress.point = points[i];
    if (plan.search) {
      if (!first_run) pause_unless_stopped(plan.pause_seconds, stop);
      first_run = false;
      if (!lockstep && stopped(stop)) {
        result.interrupted = true;
        break;
      }
      progress.elapsed_seconds = seconds_since(start);
      if (callbacks.on_progress) callbacks.on_progress(progress);
      search_spec spec = point_search_spec(prepared, points[i], stop);
      if (callbacks.on_progress) {
        spec.on_progress = [&](const load_progress& p) {
          progress.run = p;
          progress.elapsed_seconds = seconds_since(start);
          callbacks.on_progress(progress);
        };
      }
      search_result found = run_search(spec);
      if (found.interrupted) {
        result.interrupted = true;
        break;
      }
      measured.search = point_search{found.max_rate, found.failed_rate, found.end_reason,
                                     static_cast<unsigned>(found.steps.size())};
      for (auto& step : found.steps) {
        if (step.passed && step.rate == found.max_rate)
          measured.repeats.push_back(std::move(step.run));
      }
      if (measured.repeats.empty()) {
        result.warnings.push_back(fmt::format("{}: no rate tried was answered in full ({})",
                                              describe(points[i]), found.end_reason));
      }
    }
    for (unsigned repeat = 0; repeat < (plan.search ? 0u : plan.repeats); ++repeat) {
      const auto run_start = clock_type::now();
      if (!first_run) pause_unless_stopped(plan.pause_seconds, stop);
      first_run = false;
      if (!lockstep && stopped(stop)) {
        result.interrupted = true;
        break;
      }
      progress.repeat = repeat;
      progress.run.reset();
      progress.elapsed_seconds = seconds_since(start);
      progress.eta_seconds = eta.seconds_left(0);
      if (callbacks.on_progress) callbacks.on_progress(progress);

      load_spec spec = point_spec(prepared, points[i]);
      spec.stop = stop;
      if (callbacks.on_progress) {
        spec.on_progress = [&](const load_progress& p) {
          progress.run = p;
          progress.elapsed_seconds = seconds_since(start);
          progress.eta_seconds = eta.seconds_left(seconds_since(run_start));
          callbacks.on_progress(progress);
        };
      }
      run_result run = run_load(spec);
      eta.run_done(seconds_since(run_start));
      // A member that went missing ends the sweep like a stop: the points done are kept.
      if (run.interrupted || run.ranks_missing() > 0) {
        result.interrupted = true;
        break;
      }
      measured.repeats.push_back(std::move(run));
    }
    if (!measured.repeats.empty()) {
      measured.summary = summarize(measured.repeats);
      result.points.push_back(std::move(measured));
    }
    result.elapsed_seconds = seconds_since(start);
    derive_results(result);
    if (callbacks.on_point_done && !result.interrupted) callbacks.on_point_done(result);
  }
  result.elapsed_seconds = seconds_since(start);
  derive_results(result);
  return result;
}

}  // namespace dnstransport
