// Running a sweep: every point of the plan, repeated, with progress, an ETA and a clean stop;
// as an operation on an executor (async_run_sweep), which run_sweep runs on an io_context of
// its own.
#include <dnstransport/async_sweep.hpp>
#include <dnstransport/sweep.hpp>

#include <chrono>
#include <ctime>
#include <mutex>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

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
  spec.on_step_start = nullptr;
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

}  // namespace

namespace detail {

// Estimates the time left from the wall time the runs so far took (pauses included), or from
// the plan before the first run ends.
class sweep_eta {
 public:
  sweep_eta(const sweep_plan& plan, std::size_t runs)
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

// One sweep in progress: the points measured in turn, each by its repeats or by a search,
// every run a load on the executor, the pauses between runs timers there. `may_block`: a
// point's search (run_search) and a group's loads (run_load) are run by their blocking calls
// within the executor's handlers: for run_sweep's io_context only.
class sweep_operation : public std::enable_shared_from_this<sweep_operation> {
 public:
  sweep_operation(boost::asio::any_io_executor executor, sweep_plan plan, sweep_callbacks callbacks,
                  bool may_block, sweep_completion done)
      : executor_(std::move(executor)),
        plan_(std::move(plan)),
        callbacks_(std::move(callbacks)),
        may_block_(may_block),
        done_(std::move(done)),
        timer_(executor_),
        stop_(plan_.base.stop),
        // Shared by several processes: every member must run each point, so a stop is
        // decided together at the start of the next load (load_group::start_together).
        lockstep_(plan_.base.group != nullptr),
        eta_(plan_, 0) {}

  void start() {
    boost::asio::post(executor_, [self = shared_from_this()] { self->begin(); });
  }

  // From any thread: the pause or the running load ends within about 50 ms.
  void stop() noexcept {
    stop_asked_.store(true, std::memory_order_relaxed);
    const std::lock_guard lock(running_mutex_);
    if (running_) stop_load(*running_);
  }

 private:
  bool stop_requested() const {
    return stop_asked_.load(std::memory_order_relaxed) || stopped(stop_);
  }

  void begin() {
    try {
      if (!may_block_ && (plan_.search || plan_.base.group)) {
        throw setup_error(fmt::format(
            "{}: a sweep that searches each point or is run by a group of processes is run by "
            "run_sweep, not async_run_sweep",
            setting(plan_.search ? "sweep_plan::search" : "load_spec::group")));
      }
      points_ = expand(plan_);
      prepared_ = prepare(plan_, points_);
      eta_ = sweep_eta(plan_, points_.size() * plan_.repeats);
      describe_sweep();
    } catch (...) {
      finish(std::current_exception());
      return;
    }
    begin_point();
  }

  void describe_sweep() {
    result_.plan = prepared_;
    result_.plan.base.stop = nullptr;
    result_.plan.base.output.on_progress = nullptr;
    result_.plan.base.output.on_interval = nullptr;
    result_.plan.base.output.on_figures = nullptr;
    result_.query_origin = prepared_.base.traffic.queries->origin();
    result_.query_count = prepared_.base.traffic.queries->size();
    result_.tool_version = std::string(library_version());
    result_.machine = this_machine();
    result_.started_at = utc_now();
    result_.planned_points = points_.size();
  }

  void begin_point() {
    if (index_ >= points_.size() || result_.interrupted) {
      finish(nullptr);
      return;
    }
    measured_ = {};
    measured_.point = points_[index_];
    progress_ = {};
    progress_.point_index = index_;
    progress_.point_count = points_.size();
    progress_.repeats = plan_.repeats;
    progress_.point = points_[index_];
    repeat_ = 0;
    if (plan_.search) {
      after_pause([this] { search_point(); });
    } else {
      next_repeat();
    }
  }

  // The pause between runs (none before the first), in slices that notice a stop; then
  // `then`, unless a stop came (the sweep then ends, interrupted).
  void after_pause(std::function<void()> then) {
    if (first_run_) {
      first_run_ = false;
      continue_unless_stopped(then);
      return;
    }
    pause_end_ = clock_type::now() + std::chrono::duration_cast<clock_type::duration>(
                                         std::chrono::duration<double>(plan_.pause_seconds));
    wait_slice(std::move(then));
  }

  void wait_slice(std::function<void()> then) {
    const auto now = clock_type::now();
    // A stop ends the pause at once, in a group too: whether the sweep then ends is decided
    // after it (continue_unless_stopped; a group decides at its next load's start).
    if (now >= pause_end_ || stop_requested()) {
      continue_unless_stopped(then);
      return;
    }
    timer_.expires_after(std::min<clock_type::duration>(pause_end_ - now, pause_slice));
    timer_.async_wait([self = shared_from_this(),
                       then = std::move(then)](const boost::system::error_code&) mutable {
      self->wait_slice(std::move(then));
    });
  }

  void continue_unless_stopped(const std::function<void()>& then) {
    if (!lockstep_ && stop_requested()) {
      result_.interrupted = true;
      point_done();
      return;
    }
    guarded(then);
  }

  // Runs `step`, ending the sweep with what it throws (a callback's exception, a setup_error
  // of a point's target named as the target's).
  void guarded(const std::function<void()>& step) {
    try {
      naming_target(measured_.point, step);
    } catch (...) {
      finish(std::current_exception());
    }
  }

  void report(double run_seconds, bool with_eta) {
    progress_.elapsed_seconds = seconds_since(start_);
    if (with_eta) progress_.eta_seconds = eta_.seconds_left(run_seconds);
    callbacks_.on_progress(progress_);
  }

  void next_repeat() {
    if (repeat_ == plan_.repeats) {
      point_done();
      return;
    }
    run_start_ = clock_type::now();
    after_pause([this] { start_run(); });
  }

  void start_run() {
    progress_.repeat = repeat_;
    progress_.run.reset();
    if (callbacks_.on_progress) report(0, true);
    load_spec spec = point_spec(prepared_, measured_.point);
    spec.stop = stop_;
    if (callbacks_.on_progress) {
      // Called on the executor while the load runs, which holds this operation until its
      // completion has run.
      spec.output.on_progress = [this, began = run_start_](const load_progress& p) {
        progress_.run = p;
        report(seconds_since(began), true);
      };
    }
    if (may_block_ && plan_.base.group) {
      // Completed from the executor, as an asynchronous load is: a long sweep of blocking
      // runs does not nest one call per run.
      boost::asio::post(executor_, [self = shared_from_this(), run = run_load(spec)]() mutable {
        self->run_done(nullptr, std::move(run));
      });
      return;
    }
    auto operation =
        start_load(executor_, std::move(spec),
                   [self = shared_from_this()](std::exception_ptr error, run_result run) {
                     {
                       const std::lock_guard done_lock(self->running_mutex_);
                       self->running_.reset();
                     }
                     self->run_done(error, std::move(run));
                   });
    {
      const std::lock_guard lock(running_mutex_);
      running_ = operation;
    }
    if (stop_asked_.load(std::memory_order_relaxed)) stop_load(*operation);
  }

  void run_done(std::exception_ptr error, run_result run) {
    if (error) {
      guarded([&] { std::rethrow_exception(error); });
      return;
    }
    eta_.run_done(seconds_since(run_start_));
    // A member that went missing ends the sweep like a stop: the points done are kept.
    if (run.interrupted || run.ranks_missing() > 0) {
      result_.interrupted = true;
      point_done();
      return;
    }
    try {
      measured_.repeats.push_back(std::move(run));
    } catch (...) {
      finish(std::current_exception());
      return;
    }
    ++repeat_;
    next_repeat();
  }

  // sweep --search: the highest rate answered in full, and its passing steps as repeats.
  void search_point() {
    if (callbacks_.on_progress) report(0, false);
    search_spec spec = point_search_spec(prepared_, measured_.point, stop_);
    if (callbacks_.on_progress) {
      spec.on_progress = [this](const load_progress& p) {
        progress_.run = p;
        report(0, false);
      };
    }
    search_result found = run_search(spec);
    // The point ends from the executor: a long sweep of searches does not nest calls.
    const auto then = [self = shared_from_this()] { self->point_done(); };
    if (found.interrupted) {
      result_.interrupted = true;
      boost::asio::post(executor_, then);
      return;
    }
    measured_.search = point_search{found.max_rate, found.failed_rate, found.end_reason,
                                    static_cast<unsigned>(found.steps.size())};
    for (auto& step : found.steps) {
      if (step.passed && step.rate == found.max_rate) {
        measured_.repeats.push_back(std::move(step.run));
      }
    }
    if (measured_.repeats.empty()) {
      result_.warnings.push_back(fmt::format("{}: no rate tried was answered in full ({})",
                                             describe(measured_.point), found.end_reason));
    }
    boost::asio::post(executor_, then);
  }

  void point_done() {
    try {
      if (!measured_.repeats.empty()) {
        measured_.summary = summarize(measured_.repeats);
        result_.points.push_back(std::move(measured_));
        measured_ = {};
      }
      result_.elapsed_seconds = seconds_since(start_);
      derive_results(result_);
      if (callbacks_.on_point_done && !result_.interrupted) callbacks_.on_point_done(result_);
    } catch (...) {  // the callback's exception, or out of memory
      finish(std::current_exception());
      return;
    }
    ++index_;
    begin_point();
  }

  void finish(std::exception_ptr error) {
    if (finished_) return;
    finished_ = true;
    result_.elapsed_seconds = seconds_since(start_);
    derive_results(result_);
    boost::asio::post(executor_,
                      [done = std::move(done_), error, result = std::move(result_)]() mutable {
                        done(error, std::move(result));
                      });
  }

  static constexpr clock_type::duration pause_slice = std::chrono::milliseconds(20);

  boost::asio::any_io_executor executor_;
  const sweep_plan plan_;
  const sweep_callbacks callbacks_;
  const bool may_block_;
  sweep_completion done_;
  boost::asio::steady_timer timer_;
  const std::atomic<bool>* const stop_;
  const bool lockstep_;
  std::atomic<bool> stop_asked_{false};
  std::mutex running_mutex_;
  std::shared_ptr<load_operation> running_;  // the load running, if any
  std::vector<sweep_point> points_;
  sweep_plan prepared_;
  const clock_type::time_point start_ = clock_type::now();
  clock_type::time_point run_start_ = start_;
  clock_type::time_point pause_end_ = start_;
  sweep_eta eta_;
  bool first_run_ = true;
  bool finished_ = false;
  std::size_t index_ = 0;
  unsigned repeat_ = 0;
  sweep_point_result measured_;
  sweep_progress progress_;
  sweep_result result_;
};

std::shared_ptr<sweep_operation> start_sweep(const boost::asio::any_io_executor& executor,
                                             sweep_plan plan, sweep_callbacks callbacks,
                                             sweep_completion done) {
  auto operation = std::make_shared<sweep_operation>(executor, std::move(plan),
                                                     std::move(callbacks), false, std::move(done));
  operation->start();
  return operation;
}

void stop_sweep(sweep_operation& operation) noexcept {
  operation.stop();
}

}  // namespace detail

sweep_result run_sweep(const sweep_plan& plan, const sweep_callbacks& callbacks) {
  boost::asio::io_context io;
  std::exception_ptr error;
  sweep_result result;
  const auto operation = std::make_shared<detail::sweep_operation>(
      io.get_executor(), plan, callbacks, true, [&](std::exception_ptr e, sweep_result r) {
        error = e;
        result = std::move(r);
      });
  operation->start();
  io.run();
  if (error) std::rethrow_exception(error);
  return result;
}

}  // namespace dnstransport
