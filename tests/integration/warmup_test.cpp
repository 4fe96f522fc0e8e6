// The warm-up is left out of every figure: queries, and for TCP/TLS the connections whose
// set-up began before the measured window (opened, handshakes, set-up latencies, answers
// per connection). One query per connection makes each connection's share exact.
#include <dnstransport/load.hpp>

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <string>

#include <dnstransport/server.hpp>

#include "hostile_checks.hpp"

namespace dnstransport {
namespace {

class warmup_test : public ::testing::TestWithParam<transport_kind> {};

TEST_P(warmup_test, connections_of_the_warmup_are_left_out) {
  const transport_kind transport = GetParam();
  server_options o;
  if (transport == transport_kind::tcp) o.listen[transport_kind::tcp] = endpoint{"127.0.0.1", 0};
  if (transport == transport_kind::tls) o.listen[transport_kind::tls] = endpoint{"127.0.0.1", 0};
  o.certificate_directory =
      (std::filesystem::path(::testing::TempDir()) / ("warmup-" + std::to_string(getpid())))
          .string();
  server responder(o);

  // 0.4 s of warm-up, then 200 measured queries (50 per client), one per connection.
  load_spec spec;
  spec.target.transport = transport;
  spec.target.port = transport == transport_kind::tcp ? responder.port(transport_kind::tcp)
                                                      : responder.port(transport_kind::tls);
  spec.traffic.clients = 4;
  spec.traffic.outstanding = 1;
  spec.connections.queries_per_connection = 1;
  spec.traffic.warmup_seconds = 0.4;
  spec.traffic.count = 200;
  spec.traffic.timeout_seconds = 10;
  spec.tls.resume = true;
  const run_result r = run_load(spec);
  const auto& c = r.connections;
  const std::string what = fmt::format(
      "sent {} answered {} opened {} carried {} full {} resumed {} connect histogram {} first "
      "query histogram {}",
      r.queries_sent, r.responses_received, c.opened, c.answered, r.handshakes_full,
      r.handshakes_resumed, r.connect_latency.count(), r.first_query_latency.count());

  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  std::cout << fmt::format("[ hostile  ] {}.{} (0 s): {}\n", test->test_suite_name(), test->name(),
                           hostile::summary(r));
  EXPECT_EQ(r.queries_sent, 200u) << what;
  EXPECT_EQ(r.responses_received, 200u) << what;
  // One query per connection, and no connection is opened once a client's count is done:
  // every counted connection carried its one answer ...
  EXPECT_EQ(c.opened, c.answered) << what;
  EXPECT_EQ(c.closed_by_client, c.opened) << what;
  EXPECT_EQ(c.failed, 0u) << what;
  // ... and the answers of the window include at most one per client whose connection
  // was set up in the warm-up.
  EXPECT_LE(c.answered, r.responses_received) << what;
  EXPECT_LE(r.responses_received, c.answered + spec.traffic.clients) << what;
  EXPECT_EQ(r.connect_latency.count(), c.opened) << what;
  EXPECT_EQ(r.first_query_latency.count(), c.answered) << what;
  EXPECT_EQ(r.queries_per_connection_achieved(), 1.0) << what;
  // The warm-up's connections are not in the figures, but the responder accepted them.
  responder.stop();
  EXPECT_GT(responder.stats().connections_accepted, c.opened + spec.traffic.clients) << what;
  if (transport == transport_kind::tls) {
    EXPECT_EQ(r.handshakes_full + r.handshakes_resumed, c.opened) << what;
    EXPECT_EQ(r.handshake_latency.count(), c.opened) << what;
    // Every client resumed from a ticket it got in the warm-up.
    EXPECT_EQ(r.handshakes_full, 0u) << what;
  } else {
    EXPECT_EQ(r.handshakes_full + r.handshakes_resumed, 0u) << what;
  }
}

INSTANTIATE_TEST_SUITE_P(stream, warmup_test,
                         ::testing::Values(transport_kind::tcp, transport_kind::tls),
                         [](const ::testing::TestParamInfo<transport_kind>& param) {
                           return std::string(transport_name(param.param));
                         });

}  // namespace
}  // namespace dnstransport
