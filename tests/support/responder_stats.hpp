#pragma once
/// \file
/// Test support: waiting for the built-in responder's counters. Its threads count on their
/// own, after the client may already have what it waited for (a datagram read later, a
/// handshake's end seen after the client closed); server::stats() offers no notification,
/// so a test asks it again until the counters say what it waits for.

#include <chrono>
#include <thread>

#include <dnstransport/server.hpp>

namespace dnstransport::hostile {

/// Waits until `done(responder.stats())`: at most 30 s, which only a responder that never
/// gets there reaches (a loaded machine makes it later, not false).
template <typename Predicate>
bool responder_stats_reach(const server& responder, Predicate done) {
  for (int i = 0; i < 3000; ++i) {
    if (done(responder.stats())) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace dnstransport::hostile
