#include <dnstransport/calibrate.hpp>

#include <gtest/gtest.h>

namespace dnstransport {
namespace {

TEST(calibrate_test, every_case_measures_a_ceiling) {
  calibration_options options;
  options.cases = {{transport_kind::udp, tls_backend::openssl, 0},
                   {transport_kind::tcp, tls_backend::openssl, 1},
                   {transport_kind::tls, tls_backend::gnutls, 0}};
  options.duration_seconds = 0.3;
  options.clients = 2;
  options.outstanding = 10;
  std::size_t announced = 0;
  options.on_case = [&](std::size_t, std::size_t n) {
    EXPECT_EQ(n, 3u);
    ++announced;
  };
  const auto results = calibrate(options);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(announced, 3u);
  for (const auto& r : results) {
    EXPECT_GT(r.run.responses_received, 0u) << transport_name(r.which.transport);
    EXPECT_GT(r.qps_per_client_cpu, r.run.qps * 0.5);  // the client was not busier than 2x
    EXPECT_EQ(r.client_bound, r.run.max_thread_cpu_share >= client_bound_threshold);
  }
  // One query per connection: every connection carried one query, except at most one per
  // client that was established just as the run ended.
  const auto& per_query = results[1].run;
  EXPECT_GE(per_query.connections.opened, per_query.queries_sent);
  EXPECT_LE(per_query.connections.opened, per_query.queries_sent + options.clients);
  const std::string table = format_calibration(results);
  EXPECT_NE(table.find("tls (gnutls)"), std::string::npos);
  EXPECT_NE(table.find("ceiling"), std::string::npos);
}

}  // namespace
}  // namespace dnstransport
