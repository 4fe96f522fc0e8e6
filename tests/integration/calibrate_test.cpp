#include <dnstransport/calibrate.hpp>

#include <gtest/gtest.h>

#include <sys/resource.h>

#include <string>
#include <vector>

#include <fmt/format.h>

namespace dnstransport {
namespace {

// CPU time this whole process has used so far: the calibration's worker threads, its
// in-process responder and this thread.
double process_cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

TEST(calibrate_test, every_case_measures_a_ceiling) {
  calibration_options options;
  options.cases = {{transport_kind::udp, tls_backend::openssl, 0},
                   {transport_kind::tcp, tls_backend::openssl, 1},
                   {transport_kind::tls, tls_backend::gnutls, 0},
                   {transport_kind::tls, tls_backend::openssl, 1, true}};
#ifdef DNSTRANSPORT_HAVE_DOQ
  options.cases.push_back({transport_kind::doq, tls_backend::gnutls, 0});
#endif
  options.duration_seconds = 0.3;
  options.clients = 2;
  options.outstanding = 10;
  // The process's CPU time at the start of each case and at the end: what every case cost
  // the whole process, measured apart from the library.
  std::vector<double> process_cpu;
  options.on_case = [&](std::size_t i, std::size_t n) {
    EXPECT_EQ(n, options.cases.size());
    EXPECT_EQ(i, process_cpu.size());
    process_cpu.push_back(process_cpu_seconds());
  };
  const auto results = calibrate(options);
  process_cpu.push_back(process_cpu_seconds());
  ASSERT_EQ(results.size(), options.cases.size());
  ASSERT_EQ(process_cpu.size(), options.cases.size() + 1);
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    const std::string what = fmt::format(
        "{}: answered {} client CPU {} s, process CPU {} s, busiest thread {}",
        transport_name(r.which.transport), r.run.responses_received, r.run.client_cpu_seconds,
        process_cpu[i + 1] - process_cpu[i], r.run.max_thread_cpu_share);
    EXPECT_EQ(r.which.transport, options.cases[i].transport) << what;
    EXPECT_GT(r.run.responses_received, 0u) << what;
    EXPECT_EQ(r.run.lost + r.run.malformed + r.run.mismatched, 0u) << what;
    // The responder in this process answers every query sent, and the queries per second
    // are those answers over the measured window, which is the 0.3 s of sending or more.
    EXPECT_EQ(r.run.responses_received, r.run.queries_sent) << what;
    EXPECT_GE(r.run.elapsed_seconds, options.duration_seconds - 1e-9) << what;
    EXPECT_NEAR(r.run.qps * r.run.elapsed_seconds, static_cast<double>(r.run.responses_received),
                1e-9 * static_cast<double>(r.run.responses_received))
        << what;
    // The worker threads are part of the process, and the responder in the same process
    // worked too (it answered every query): the client's CPU is some, not all, of it. A
    // figure taken from the whole process, or from the idle calling thread, fails here.
    const double process = process_cpu[i + 1] - process_cpu[i];
    EXPECT_GT(r.run.client_cpu_seconds, 0) << what;
    EXPECT_LT(r.run.client_cpu_seconds, process) << what;
    // One worker thread cannot use more than one CPU.
    EXPECT_GT(r.run.max_thread_cpu_share, 0) << what;
    EXPECT_LE(r.run.max_thread_cpu_share, 1.02) << what;
    // The ceiling is answers per second of client CPU.
    EXPECT_NEAR(r.qps_per_client_cpu * r.run.client_cpu_seconds,
                static_cast<double>(r.run.responses_received), 1e-6 * r.qps_per_client_cpu)
        << what;
    EXPECT_EQ(r.client_bound, r.run.max_thread_cpu_share >= client_bound_threshold) << what;
  }
  // One query per connection, one in flight per client: each counted connection carried
  // exactly one answer, but at most one per client opened as the run ended and closed unused.
  const auto& per_query = results[1].run;
  EXPECT_EQ(per_query.connections.answered, per_query.responses_received);
  EXPECT_GE(per_query.connections.opened, per_query.responses_received);
  EXPECT_LE(per_query.connections.opened, per_query.responses_received + options.clients);
  EXPECT_EQ(per_query.connect_latency.count(), per_query.connections.opened);
  // Persistent TLS: one full handshake per client, nothing more.
  EXPECT_EQ(results[2].run.connections.opened, options.clients);
  EXPECT_EQ(results[2].run.handshakes_full, options.clients);

  // One query per connection resumed: every connection after a client's first resumes. A
  // connection counts as opened when TCP connects; at most one per client was still in its
  // handshake when the run ended (its query not yet sent) and closed without one.
  const auto& resumed = results[3].run;
  EXPECT_EQ(resumed.handshakes_full, options.clients);
  EXPECT_GT(resumed.handshakes_resumed, 0u);
  EXPECT_GE(resumed.connections.opened, resumed.handshakes_resumed + options.clients);
  EXPECT_LE(resumed.connections.opened, resumed.handshakes_resumed + 2 * options.clients);
  EXPECT_EQ(resumed.connections.answered, resumed.responses_received);

  const std::string table = format_calibration(results);
  EXPECT_NE(table.find("tls (gnutls)"), std::string::npos) << table;
  EXPECT_NE(table.find("tls (openssl), resumed"), std::string::npos) << table;
  // Client CPU per connection, for the cases at one query per connection only.
  EXPECT_NE(table.find(fmt::format("{:.1f}", resumed.client_cpu_seconds * 1e6 /
                                                 static_cast<double>(resumed.connections.opened))),
            std::string::npos)
      << table;
#ifdef DNSTRANSPORT_HAVE_DOQ
  // Persistent DoQ: one QUIC connection per client.
  EXPECT_EQ(results[4].run.connections.opened, options.clients);
  EXPECT_NE(table.find("doq (gnutls)"), std::string::npos) << table;
#endif
  EXPECT_NE(table.find("ceiling"), std::string::npos) << table;
  for (const auto& r : results) {
    EXPECT_NE(table.find(fmt::format("{:.0f}", r.run.qps)), std::string::npos) << table;
    EXPECT_NE(table.find(fmt::format("{:.0f}", r.qps_per_client_cpu)), std::string::npos) << table;
  }
}

}  // namespace
}  // namespace dnstransport
