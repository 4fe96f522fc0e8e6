#pragma once
/// \file
/// Several processes running one load together: each takes its share of the clients, the
/// rate, the query count and the source addresses, all start sending together, and every
/// member ends with the same merged result. MPI ranks under `mpirun` are one such group
/// (mpi.hpp); the interface keeps MPI out of the load, sweep and search code.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dnstransport {

struct load_spec;
struct run_result;

/// One member of a group of processes that share a load (load_spec::group). run_load calls
/// start_together once its set-up is done and gather once its result is in; every member
/// calls them in the same order, so sweeps and searches step through their points together.
class load_group {
 public:
  virtual ~load_group() = default;

  /// This member's number, 0 to size() - 1. Member 0 prints and writes the results.
  virtual unsigned rank() const noexcept = 0;
  /// How many members the group has.
  virtual unsigned size() const noexcept = 0;
  /// Every member's host name, in rank order, for the per-rank breakdown (known once
  /// start_together has returned).
  virtual std::vector<std::string> hosts() const = 0;

  /// Tells every member that this one is ready to send (`error` empty), cannot run (`error`:
  /// why; setup_error's message) or was asked to stop (`stopping`), and waits until every
  /// member has said so. Returns true when all are ready; false when one was stopping (the
  /// load then ends at once as interrupted). Throws setup_error naming the member that
  /// failed, or the members that said nothing within `wait_seconds`.
  virtual bool start_together(const std::string& error, bool stopping, double wait_seconds) = 0;

  /// Hands this member's result to the group and returns every member's, in rank order, the
  /// same on every member; a member that sent none within `wait_seconds` (it failed, hung or
  /// was killed) is nullopt, and the group is then broken: later calls throw setup_error.
  virtual std::vector<std::optional<run_result>> gather(const run_result& mine,
                                                        double wait_seconds) = 0;

  /// True once a member went missing: a sweep or search stops rather than wait for it.
  virtual bool broken() const noexcept = 0;
};

/// This member's share of a load of `size` members: clients, rate (or the per-client rate,
/// unchanged), query count and source addresses dealt as evenly as the totals allow (member
/// r gets one more client than the others while r < clients % size; sources round-robin
/// when there are at least `size` of them, all of them otherwise), the server processes
/// monitored only by member 0. Throws setup_error when there are fewer clients than members.
load_spec share_of(const load_spec& spec, unsigned rank, unsigned size);

/// The result of a load run by several members, from each member's result (nullopt: the
/// member sent none): counters, maps and histograms added, the window the longest of the
/// members', q/s over it, client CPU added, the busiest thread's share the highest, the
/// server's usage member 0's, timeline rows added by index (their percentiles the highest
/// member's), and `ranks` holding each member's own figures. `hosts` names each member's
/// host. The members present must have run the same load (transport, server, port).
run_result merge_results(const std::vector<std::optional<run_result>>& members,
                         const std::vector<std::string>& hosts);

}  // namespace dnstransport
