#pragma once
/// \file
/// Test support (GoogleTest): a load run against a hostile responder with its wall time
/// measured, the checks every hostile case makes (bounded time, every query accounted for
/// exactly once), and a one-line summary of what dnstransport reported.

#include <chrono>
#include <cstdint>
#include <iostream>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <dnstransport/load.hpp>

namespace dnstransport::hostile {

/// A transport and, for TLS, the library on each side: what a hostile case runs over.
struct transport_variant {
  const char* name;
  transport_kind transport;
  tls_backend client = tls_backend::openssl;
  tls_backend server = tls_backend::openssl;
};

/// Test name suffix of a variant.
inline std::string variant_name(const ::testing::TestParamInfo<transport_variant>& param) {
  return param.param.name;
}

/// Test name suffix of a TLS library.
inline std::string backend_name(const ::testing::TestParamInfo<tls_backend>& param) {
  return std::string(tls_backend_name(param.param));
}

/// A finished load and how long run_load took.
struct bounded_run {
  run_result result;
  double seconds = 0;
};

/// The other TLS library: a client of one against a server of the other.
inline tls_backend other_backend(tls_backend backend) {
  return backend == tls_backend::openssl ? tls_backend::gnutls : tls_backend::openssl;
}

/// What a run reported, in one line: the counters a hostile case is about.
inline std::string summary(const run_result& r) {
  std::string text = fmt::format(
      "sent {} answered {} lost {} lost_on_close {} malformed {} mismatched {} late {} "
      "duplicates {} unexpected {} truncated {} oversized {} tc_retried {} tc_retry_answered {} "
      "out_of_order {}",
      r.queries_sent, r.responses_received, r.lost, r.lost_on_close, r.malformed, r.mismatched,
      r.late, r.duplicates, r.unexpected, r.truncated, r.oversized, r.tc_retried,
      r.tc_retry_answered, r.out_of_order);
  if (r.transport != transport_kind::udp) {
    const auto& c = r.connections;
    text += fmt::format(
        " | opened {} closed_by_client {} closed_idle {} closed_by_server {} reset_by_server {} "
        "failed {}",
        c.opened, c.closed_by_client, c.closed_idle, c.closed_by_server, c.reset_by_server,
        c.failed);
  }
  for (const auto& [cause, n] : r.connections.failures) text += fmt::format(" {}={}", cause, n);
  if (r.http_failed != 0) text += fmt::format(" | http_failed {}", r.http_failed);
  if (r.quic_failed != 0) text += fmt::format(" | quic_failed {}", r.quic_failed);
  for (const auto& [cause, n] : r.http_failures) text += fmt::format(" {}={}", cause, n);
  if (r.connections.goaway != 0) text += fmt::format(" goaway {}", r.connections.goaway);
  if (r.unprocessed_retried != 0)
    text += fmt::format(" unprocessed_retried {}", r.unprocessed_retried);
  if (r.connections.closed_protocol_error != 0) {
    text += fmt::format(" closed_protocol_error {}", r.connections.closed_protocol_error);
  }
  return text;
}

/// A timeout for runs in which every query must be answered (or end in one bucket): long
/// enough that a responder thread left unscheduled on a loaded (or sanitized) machine never
/// turns an answer into a loss. It costs nothing when the answers come.
inline constexpr double generous_timeout_seconds = 10;

/// Every query sent ended in `bucket`: nothing lost, nothing elsewhere. Runs that use it
/// give their queries generous_timeout_seconds.
inline void expect_all_in(std::uint64_t bucket, const run_result& r) {
  EXPECT_EQ(bucket, r.queries_sent) << summary(r);
  EXPECT_EQ(r.lost, 0u) << summary(r);
}

/// The longest a run may take: twice its warm-up, duration (or `count_seconds` in count
/// mode) and one timeout for the last queries, and a second more. What it catches is a run
/// that does not end with its own timeout: one that waits for an answer or a close that never
/// comes (for ever), or for a limit of its own (a handshake's, the kernel's connect retries:
/// seconds to minutes). The factor is for a loaded, sanitized machine, which stretches the
/// whole run (it was + 0.5 s: 1.1 s in all for the 0.3 s cases, which a stall of 0.5 s
/// failed); a run that ends with its timeout is never near it.
inline double allowed_seconds(const load_spec& spec, double count_seconds = 3) {
  constexpr double factor = 2;
  constexpr double slack = 1;
  return factor * (spec.traffic.warmup_seconds +
                   (spec.traffic.count != 0 ? count_seconds : spec.traffic.duration_seconds) +
                   spec.traffic.timeout_seconds) +
         slack;
}

/// Runs `spec` and checks what must hold whatever the server did: run_load returns in
/// time and every query sent is accounted for exactly once. Logs the summary.
inline bounded_run run_checked(const load_spec& spec) {
  bounded_run run;
  const auto started = std::chrono::steady_clock::now();
  run.result = run_load(spec);
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_LE(run.seconds, allowed_seconds(spec)) << summary(run.result);
  EXPECT_EQ(queries_ended(run.result), run.result.queries_sent) << summary(run.result);
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  std::cout << fmt::format("[ hostile  ] {}.{} ({:.2f} s): {}\n", test->test_suite_name(),
                           test->name(), run.seconds, summary(run.result));
  return run;
}

}  // namespace dnstransport::hostile
