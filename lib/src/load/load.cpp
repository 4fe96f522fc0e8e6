// run_load: one process's load (set up, run the workers while watching them, make the
// result), or a member's share of a load run by a group of processes.
#include <dnstransport/load.hpp>

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <utility>

#include <boost/asio/io_context.hpp>

#include <dnstransport/error.hpp>
#include <dnstransport/group.hpp>

#include "load/load_operation.hpp"

namespace dnstransport {

namespace {

// One process's load, on an io_context of its own (the operation async_run_load runs on the
// caller's executor). `ready`: see load_operation.
run_result run_alone(const load_spec& spec, std::function<bool()> ready) {
  boost::asio::io_context io;
  std::exception_ptr error;
  run_result result;
  const auto operation = std::make_shared<detail::load_operation>(
      io.get_executor(), spec, nullptr, std::move(ready), [&](std::exception_ptr e, run_result r) {
        error = e;
        result = std::move(r);
      });
  operation->start();
  io.run();
  if (error) std::rethrow_exception(error);
  return result;
}

// How long a member waits for the others at the start, and for their results after its own
// load: the start waits for set-up (reading captures, resolving, TLS contexts), the results
// for the timeout of the last queries and the members' drift.
constexpr double group_start_wait_seconds = 120;
constexpr double group_result_margin_seconds = 10;
// Interrupted (SIGINT, or mpirun ending the job because a member died, which sends SIGTERM
// and SIGKILL a second later), a member waits only briefly, so member 0 can still write.
constexpr double group_interrupted_wait_seconds = 0.3;

run_result run_in_group(const load_spec& spec) {
  load_group& group = *spec.group;
  bool told = false;
  const auto ready = [&] {
    told = true;
    const bool stopping = spec.stop != nullptr && spec.stop->load(std::memory_order_relaxed);
    return group.start_together({}, stopping, group_start_wait_seconds);
  };
  run_result own;
  try {
    load_spec mine = share_of(spec, group.rank(), group.size());
    mine.group = nullptr;
    own = run_alone(mine, ready);
  } catch (const setup_error& e) {
    // A member that cannot run tells the others, so none waits for it; the settings its
    // message names stay marked, for each member's caller to name in its own words.
    if (!told) group.start_together(e.marked_message(), false, group_start_wait_seconds);
    throw;
  } catch (const std::exception& e) {
    if (!told) group.start_together(e.what(), false, group_start_wait_seconds);
    throw;
  }
  const double wait =
      own.interrupted
          ? group_interrupted_wait_seconds
          : spec.traffic.timeout_seconds + group_result_margin_seconds +
                (spec.traffic.count > 0 || spec.traffic.duration_seconds == 0 ? own.elapsed_seconds
                                                                              : 0);
  run_result merged = merge_results(group.gather(own, wait), group.hosts());
  detail::add_open_loop_warnings(merged, spec);
  detail::add_warmup_warning(merged, spec);
  detail::add_case_warning(merged, spec);
  detail::add_proxy_warning(merged, spec);
  detail::add_distinct_sources_warning(merged, spec);
  return merged;
}

}  // namespace

run_result run_load(const load_spec& spec) {
  if (spec.group) return run_in_group(spec);
  return run_alone(spec, {});
}

}  // namespace dnstransport
