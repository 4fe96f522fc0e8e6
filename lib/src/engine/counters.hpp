#pragma once
// Internal: what the engine and the transports count on one worker thread. Each worker owns
// one `counters`; the load merges them once at the end and turns the sum into the public
// run_result (load/load.cpp), so nothing below the load knows about run_result.

#include <array>
#include <cstdint>
#include <map>
#include <string>

#include <dnstransport/counts.hpp>
#include <dnstransport/histogram.hpp>

#include "util/syscall_counter.hpp"

namespace dnstransport::detail {

// Per query, kept by client_base for every transport: the public counts (counts.hpp) and
// what goes with them.
struct query_counters : query_counts {
  std::map<std::string, std::uint64_t> http_failures;  // http_failed by cause
  std::map<std::string, std::uint64_t> quic_failures;  // quic_failed by cause
  std::array<std::uint64_t, 16> rcodes{};
  // Answers' EDNS options, read when the run asked for them (run_plan::read_edns_options).
  std::uint64_t keepalive_answers = 0;
  std::uint32_t keepalive_min = UINT32_MAX;  // advertised TIMEOUT, units of 100 ms
  std::uint32_t keepalive_max = 0;
  std::uint64_t padded_answers = 0;
  std::map<std::uint32_t, std::uint64_t> padded_sizes;  // padded answers by message size
  // Answers that echoed the query's client subnet, by SCOPE PREFIX-LENGTH (0 to 128; a
  // longer scope, which no address has, under 128).
  std::uint64_t client_subnet_echoed = 0;
  std::array<std::uint64_t, 129> client_subnet_scopes{};
  latency_histogram latency;
  latency_histogram send_lag;       // open loop: scheduled time to send
  std::uint32_t in_flight_max = 0;  // the most queries one client had in flight at once

  void merge(const query_counters& other);
};

// Per connection, kept by the transports that have connections (TCP, TLS), for connections
// whose set-up began after the warm-up.
struct connection_counters : connection_counts {
  std::uint64_t handshakes_full = 0;
  std::uint64_t handshakes_resumed = 0;
  // Open connections (all of them, warm-up ones too) times nanoseconds, summed over the
  // measured window: divided by the window, the mean number open at once.
  std::uint64_t open_ns = 0;
  std::map<std::string, std::uint64_t> failures;  // by cause: "ECONNREFUSED", "tls_certificate"
  std::string first_failure;                      // the first failure's full message
  latency_histogram first_query_latency;
  latency_histogram connect_latency;
  latency_histogram handshake_latency;

  // Counts one failure under `cause` and keeps `message` if it is the first.
  void record_failure(const std::string& cause, const std::string& message);
  // Counts a socket failure under its errno name; `what` says which call ("tcp connect").
  void record_socket_error(const char* what, int error);
  void merge(const connection_counters& other);
};

// TLS 1.3 early data (0-RTT: DoT, DoH, DoQ), for connections whose set-up began after the
// warm-up: the public counts themselves.
using early_data_counters = early_data_stats;

// Per QUIC connection (DoQ), for connections whose set-up began after the warm-up.
struct quic_counters : quic_counts {
  std::map<std::string, std::uint64_t> closes;  // CONNECTION_CLOSE from the server, by code
  // Sampled as each connection ends, over the connections that had an RTT sample
  // (quic_counts::rtt_samples).
  std::uint64_t smoothed_rtt_ns_sum = 0;
  std::uint64_t min_rtt_ns = 0;  // 0: none
  std::uint64_t cwnd_sum = 0;

  void merge(const quic_counters& other);
};

// What the generator itself spends on I/O. The worker counts from the start and, at its
// first wake-up past the warm-up, keeps what it had counted by then to subtract at the end
// of the run (worker::run): what remains is the measured window's, up to the end of the run.
struct generator_counters {
  // Handlers the worker's event loop ran because one of its sockets became ready (a
  // readiness wait that completed, not one cancelled) or one of its timers expired (the
  // worker's tick and arrival timers, DoQ's connection timers).
  std::uint64_t wakeups = 0;
  syscall_counter syscalls;
  // The worker thread's voluntary context switches: read from the kernel when the window
  // opens and when the run ends, not counted as they happen.
  std::uint64_t sleeps = 0;
  // Reads put off by coalesced receiving (client_base::delay_next_read).
  std::uint64_t reads_delayed = 0;

  void merge(const generator_counters& other) noexcept {
    wakeups += other.wakeups;
    syscalls.merge(other.syscalls);
    sleeps += other.sleeps;
    reads_delayed += other.reads_delayed;
  }
  // What was counted since `earlier`, a copy taken before.
  void subtract(const generator_counters& earlier) noexcept {
    wakeups -= earlier.wakeups;
    sleeps -= earlier.sleeps;
    reads_delayed -= earlier.reads_delayed;
    syscalls.calls -= earlier.syscalls.calls;
    syscalls.would_block -= earlier.syscalls.would_block;
  }
};

// Everything one worker counts.
struct counters {
  query_counters queries;
  connection_counters connections;
  early_data_counters early_data;
  quic_counters quic;
  generator_counters generator;

  void merge(const counters& other) {
    queries.merge(other.queries);
    connections.merge(other.connections);
    early_data += other.early_data;
    quic.merge(other.quic);
    generator.merge(other.generator);
  }
};

}  // namespace dnstransport::detail
