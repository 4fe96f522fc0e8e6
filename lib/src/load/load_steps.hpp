#pragma once
// Internal: the steps of one process's load, which load.cpp runs: what the load needs
// before its first query (run_setup.cpp) and the result made from what the workers counted
// (run_result.cpp).

#include <memory>
#include <vector>

#include <dnstransport/load.hpp>

#include "engine/engine.hpp"

namespace dnstransport::detail {

// What a load needs before its first query, made from its spec alone: nothing is sent and
// no thread is started. The plan points at the queries, the transport and the gauge, so
// the whole is made once and not moved.
struct prepared_load {
  run_result result;  // what was run, and the warnings of the set-up
  std::shared_ptr<const query_set> queries;
  std::unique_ptr<client_transport> transport;
  run_plan plan;
  run_plan::connection_gauge connections_gauge;
  unsigned threads = 1;  // worker threads: at most one per client
  // What the run is planned to last, for progress and the monitor's readings: a timing
  // replay without a duration lasts as long as its capture, at its speed.
  double duration_seconds = 0;
};

// Validates the spec, resolves the server, checks the descriptors and ports the clients
// will hold, reads the queries (adding the run's EDNS options), builds the transport and
// plans the run. Throws setup_error naming the setting.
std::unique_ptr<prepared_load> make_run_plan(const load_spec& spec);

// The workers' counters, summed, into the public result.
void fill_result(run_result& r, const counters& total);
// Merges the workers' timeline rows (by interval) into the result's timeline.
void fill_timeline(run_result& result, const std::vector<std::unique_ptr<worker>>& workers,
                   const run_plan& plan, double seconds_until_end);
// Closed loop with persistent connections: says when some were set up inside the window.
void add_warmup_warning(run_result& r, const load_spec& spec);
// Open loop: says when the generator did not keep to its schedule.
void add_open_loop_warnings(run_result& r);

}  // namespace dnstransport::detail
