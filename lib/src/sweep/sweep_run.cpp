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
      : planned_run_seconds_(plan.base.traffic.warmup_seconds + plan.duration_seconds +
                             plan.pause_seconds),
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
  spec.load.output.on_progress = nullptr;
  spec.step_seconds = plan.duration_seconds;
  spec.settle_seconds = plan.pause_seconds;
  spec.repeats = plan.repeats;
  spec.on_step = nullptr;
  spec.on_progress = nullptr;
  spec.stop = stop;
  return spec;
}

// The settings a target gives its points, named in `what`'s setup_errors as parts of the
// target (sweep_plan::targets NAME), the setting the caller gave them in.
template <typename What>
void naming_target(const sweep_point& point, What&& what) {
  try {
    what();
  } catch (const setup_error& e) {
    if (point.target.empty()) throw;
    const std::string target = fmt::format("{} {}", setting("sweep_plan::targets"), point.target);
    throw setup_error(e.message_naming([&](std::string_view path) -> std::string {
      if (path == "load_spec::target.server") return target;
      if (path == "load_spec::target.port") return target + ": port";
      if (path == "load_spec::monitor.pids") return target + ": pid";
      if (path == "load_spec::monitor.cgroups") return target + ": cgroup";
      return setting(path);
    }));
  }
}

// The plan with what every run shares made once (the default queries encoded), every
// point's spec validated before the first run.
sweep_plan prepare(const sweep_plan& plan, const std::vector<sweep_point>& points) {
  sweep_plan prepared = plan;
  if (!prepared.base.traffic.queries) {
    prepared.base.traffic.queries = std::make_shared<const query_set>(default_queries());
  }
  for (const auto& point : points) {
    naming_target(point, [&] { validate(point_spec(prepared, point)); });
  }
  if (plan.search) {
    if (plan.base.traffic.rate != 0 || plan.base.traffic.client_rate != 0) {
      throw setup_error(
          fmt::format("{} with {}: the search chooses the rates (from {})",
                      setting(plan.base.traffic.rate != 0 ? "load_spec::traffic.rate"
                                                          : "load_spec::traffic.client_rate"),
                      setting("sweep_plan::search"), setting("search_spec::start_rate")));
    }
    for (const auto& point : points) validate(point_search_spec(prepared, point, nullptr));
  }
  return prepared;
}

// One sweep in progress: the points measured in turn, each by its repeats or by a search.
class sweep_runner {
 public:
  sweep_runner(const sweep_plan& plan, const sweep_callbacks& callbacks,
               std::vector<sweep_point> points)
      : plan_(plan),
        callbacks_(callbacks),
        points_(std::move(points)),
        prepared_(prepare(plan, points_)),
        stop_(plan.base.stop),
        // Shared by several processes: every member must run each point, so a stop is
        // decided together at the start of the next load (load_group::start_together).
        lockstep_(plan.base.group != nullptr),
        eta_(plan, points_.size() * plan.repeats) {}

  sweep_result run() {
    describe_sweep();
    for (std::size_t i = 0; i < points_.size() && !result_.interrupted; ++i) {
      sweep_point_result measured;
      measured.point = points_[i];
      progress_ = {};
      progress_.point_index = i;
      progress_.point_count = points_.size();
      progress_.repeats = plan_.repeats;
      progress_.point = points_[i];
      naming_target(measured.point, [&] {
        if (plan_.search) {
          search_point(measured);
        } else {
          repeat_point(measured);
        }
      });
      if (!measured.repeats.empty()) {
        measured.summary = summarize(measured.repeats);
        result_.points.push_back(std::move(measured));
      }
      result_.elapsed_seconds = seconds_since(start_);
      derive_results(result_);
      if (callbacks_.on_point_done && !result_.interrupted) callbacks_.on_point_done(result_);
    }
    result_.elapsed_seconds = seconds_since(start_);
    derive_results(result_);
    return std::move(result_);
  }

 private:
  void describe_sweep() {
    result_.plan = prepared_;
    result_.plan.base.stop = nullptr;
    result_.plan.base.output.on_progress = nullptr;
    result_.query_origin = prepared_.base.traffic.queries->origin();
    result_.query_count = prepared_.base.traffic.queries->size();
    result_.tool_version = std::string(library_version());
    result_.machine = this_machine();
    result_.started_at = utc_now();
    result_.planned_points = points_.size();
  }

  // The pause between runs (none before the first); false when a stop came.
  bool pause() {
    if (!first_run_) pause_unless_stopped(plan_.pause_seconds, stop_);
    first_run_ = false;
    if (!lockstep_ && stopped(stop_)) {
      result_.interrupted = true;
      return false;
    }
    return true;
  }

  void report(double run_seconds, bool with_eta) {
    progress_.elapsed_seconds = seconds_since(start_);
    if (with_eta) progress_.eta_seconds = eta_.seconds_left(run_seconds);
    callbacks_.on_progress(progress_);
  }

  // sweep --search: the highest rate answered in full, and its passing steps as repeats.
  void search_point(sweep_point_result& measured) {
    if (!pause()) return;
    if (callbacks_.on_progress) report(0, false);
    search_spec spec = point_search_spec(prepared_, measured.point, stop_);
    if (callbacks_.on_progress) {
      spec.on_progress = [this](const load_progress& p) {
        progress_.run = p;
        report(0, false);
      };
    }
    search_result found = run_search(spec);
    if (found.interrupted) {
      result_.interrupted = true;
      return;
    }
    measured.search = point_search{found.max_rate, found.failed_rate, found.end_reason,
                                   static_cast<unsigned>(found.steps.size())};
    for (auto& step : found.steps) {
      if (step.passed && step.rate == found.max_rate)
        measured.repeats.push_back(std::move(step.run));
    }
    if (measured.repeats.empty()) {
      result_.warnings.push_back(fmt::format("{}: no rate tried was answered in full ({})",
                                             describe(measured.point), found.end_reason));
    }
  }

  void repeat_point(sweep_point_result& measured) {
    for (unsigned repeat = 0; repeat < plan_.repeats; ++repeat) {
      const auto run_start = clock_type::now();
      if (!pause()) return;
      progress_.repeat = repeat;
      progress_.run.reset();
      if (callbacks_.on_progress) report(0, true);
      load_spec spec = point_spec(prepared_, measured.point);
      spec.stop = stop_;
      if (callbacks_.on_progress) {
        spec.output.on_progress = [this, run_start](const load_progress& p) {
          progress_.run = p;
          report(seconds_since(run_start), true);
        };
      }
      run_result run = run_load(spec);
      eta_.run_done(seconds_since(run_start));
      // A member that went missing ends the sweep like a stop: the points done are kept.
      if (run.interrupted || run.ranks_missing() > 0) {
        result_.interrupted = true;
        return;
      }
      measured.repeats.push_back(std::move(run));
    }
  }

  const sweep_plan& plan_;
  const sweep_callbacks& callbacks_;
  const std::vector<sweep_point> points_;
  const sweep_plan prepared_;
  const std::atomic<bool>* const stop_;
  const bool lockstep_;
  const clock_type::time_point start_ = clock_type::now();
  eta_estimator eta_;
  bool first_run_ = true;
  sweep_progress progress_;
  sweep_result result_;
};

}  // namespace

sweep_result run_sweep(const sweep_plan& plan, const sweep_callbacks& callbacks) {
  return sweep_runner(plan, callbacks, expand(plan)).run();
}

}  // namespace dnstransport
