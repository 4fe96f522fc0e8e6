#pragma once
/// \file
/// Test support: a run of the engine on the calling thread, one worker, for clients whose
/// connections or datagrams are scripted (scripted_socket.hpp, scripted_datagram.hpp): the built-in
/// query set, a count of queries dealt over the clients, closed loop or a constant rate per client.

#include <cstdint>

#include "engine/engine.hpp"

namespace dnstransport::scripted {

/// The run's shape.
struct run_shape {
  std::uint64_t count = 0;     ///< queries, dealt as evenly as possible over the clients
  unsigned clients = 1;        ///< each with its own connections
  unsigned outstanding = 1;    ///< queries in flight per client
  double timeout_seconds = 5;  ///< a query unanswered this long is lost
  double rate_per_client = 0;  ///< queries per second on a constant schedule; 0: closed loop
};

/// Runs `shape` with `transport`'s clients until every client is done; the worker's counts.
detail::counters run_on_one_worker(const detail::client_transport& transport,
                                   const run_shape& shape);

}  // namespace dnstransport::scripted
