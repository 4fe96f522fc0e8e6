// A sweep whose axis is the number of distinct client addresses (sweep_plan::
// distinct_sources), against a responder that limits each client address
// (server_options::rate_limit_per_client): the server sees each point's number of addresses,
// the throughput follows the limit per address, and the report has the table and the plot.
#include <dnstransport/sweep.hpp>

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <fmt/format.h>

#include <dnstransport/report.hpp>
#include <dnstransport/server.hpp>

#include "responder/rate_limiter.hpp"
#include "scratch_dir.hpp"

namespace dnstransport {
namespace {

using hostile::contents;

constexpr double per_client = 500;  // answers per second per client address

sweep_plan limited_sweep(std::uint16_t port) {
  sweep_plan plan;
  plan.base.target.server = "127.0.0.1";
  plan.ports[transport_kind::tcp] = port;
  plan.base.traffic.outstanding = 10;
  plan.base.traffic.timeout_seconds = 5;
  plan.base.connections.proxy.version = proxy_protocol::v2;
  plan.base.connections.proxy.sources = {"10.7.0.0/16"};
  plan.transports = {sweep_transport{transport_kind::tcp, std::nullopt}};
  plan.clients = {4};
  plan.queries_per_connection = {10};  // connections turn over: each claims the next address
  plan.distinct_sources = {1, 8};
  plan.repeats = 1;
  plan.duration_seconds = 0.5;
  plan.pause_seconds = 0;
  return plan;
}

TEST(distinct_sources_sweep_test, throughput_follows_a_limit_per_client_address) {
  server_options options;
  options.listen[transport_kind::tcp] = endpoint{"127.0.0.1", 0};
  options.set_proxy_protocol(proxy_policy::required);
  options.rate_limit_per_client = per_client;
  server responder(options);
  const sweep_plan plan = limited_sweep(responder.port(transport_kind::tcp));
  const auto since = std::chrono::steady_clock::now();
  const sweep_result r = run_sweep(plan);
  const double window =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
  responder.stop();

  ASSERT_EQ(r.points.size(), 2u);
  EXPECT_EQ(r.points[0].point.distinct_sources, 1u);
  EXPECT_EQ(r.points[1].point.distinct_sources, 8u);
  const run_result& one = r.points[0].repeats.at(0);
  const run_result& eight = r.points[1].repeats.at(0);
  EXPECT_EQ(one.proxy_addresses, 1u);
  EXPECT_EQ(eight.proxy_addresses, 8u);
  EXPECT_EQ(one.lost + eight.lost, 0u);  // stream answers wait for the limit; none is lost
  // One address: at most its limit over the sweep's whole time (whatever the machine's
  // speed); eight addresses share no bucket, so they get well over one address's worth.
  const double one_most =
      per_client * window + static_cast<double>(detail::rate_limiter(per_client).burst());
  EXPECT_LE(static_cast<double>(one.responses_received), one_most);
  EXPECT_GT(static_cast<double>(eight.responses_received), 2 * one_most);
  // The responder saw the eight addresses (10.7.0.1 among them in both points).
  EXPECT_EQ(responder.stats().client_addresses, 8u);
  // The results derived from the points are per number of sources.
  ASSERT_EQ(r.amortization.size(), 0u);
  ASSERT_EQ(r.costs.size(), 2u);
  EXPECT_EQ(r.costs[0].distinct_sources, 1u);
  EXPECT_EQ(r.costs[1].distinct_sources, 8u);

  // The JSON keeps the axis; the tables and the report show it.
  const sweep_result read = sweep_result_from_json(to_json(r), "distinct.json");
  EXPECT_EQ(read.plan.distinct_sources, (std::vector<std::uint64_t>{1, 8}));
  EXPECT_EQ(read.points.at(1).point.distinct_sources, 8u);
  const std::string tables = format_tables(read);
  EXPECT_NE(tables.find("Throughput against distinct client addresses"), std::string::npos)
      << tables;
  EXPECT_NE(tables.find("1 source"), std::string::npos) << tables;
  EXPECT_NE(tables.find("8 sources"), std::string::npos) << tables;
  EXPECT_NE(to_csv(read).find("distinct_sources,"), std::string::npos);
  const auto directory = std::filesystem::path(hostile::scratch_directory("distinct-report"));
  std::filesystem::remove_all(directory);
  write_report(read, directory, "distinct.json");
  EXPECT_NE(contents(directory / "qps_vs_distinct_sources.gp")
                .find("Throughput against the number of distinct client addresses"),
            std::string::npos);
  EXPECT_NE(contents(directory / "qps_vs_distinct_sources.gp").find("tcp, 4 clients"),
            std::string::npos);
  std::filesystem::remove_all(directory);
}

TEST(distinct_sources_sweep_test, the_axis_needs_addresses_to_choose_from) {
  sweep_plan plan = limited_sweep(9);  // nothing is sent: refused before the first run
  plan.base.connections.proxy = {};
  try {
    run_sweep(plan);
    FAIL() << "a distinct-sources axis without PROXY sources or a source range was taken";
  } catch (const setup_error& e) {
    EXPECT_NE(std::string(e.what()).find("distinct_sources"), std::string::npos) << e.what();
  }
  plan.distinct_sources = {1, 1};
  EXPECT_THROW(run_sweep(plan), setup_error);
  EXPECT_THROW(parse_distinct_sources_list("1,0"), setup_error);
  EXPECT_THROW(parse_distinct_sources_list("1,2000000"), setup_error);
  EXPECT_EQ(parse_distinct_sources_list("1,100,10000"),
            (std::vector<std::uint64_t>{1, 100, 10000}));
}

#ifdef DNSTRANSPORT_CLI_PATH
TEST(distinct_sources_sweep_test, the_cli_sweeps_the_axis) {
  server_options options;
  options.listen[transport_kind::udp] = endpoint{"127.0.0.1", 0};
  options.set_proxy_protocol(proxy_policy::required);
  server responder(options);
  const auto directory = std::filesystem::path(hostile::scratch_directory("distinct-cli"));
  std::filesystem::create_directories(directory);
  const auto json = directory / "s.json";
  const std::string command = fmt::format(
      "{} sweep --server 127.0.0.1:{} --transports udp --clients 2 --distinct-sources 2,6 "
      "--proxy-protocol v2 --proxy-source 10.7.0.0/24 --repeats 1 --duration 0.2 --pause 0 "
      "--json {} >{} 2>&1",
      DNSTRANSPORT_CLI_PATH, responder.port(transport_kind::udp), json.string(),
      (directory / "log").string());
  const int status = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << contents(directory / "log");
  responder.stop();
  EXPECT_EQ(responder.stats().client_addresses, 6u);  // UDP: each datagram claims the next
  const sweep_result r = sweep_result_from_json(contents(json), json.string());
  ASSERT_EQ(r.points.size(), 2u);
  EXPECT_EQ(r.points[1].repeats.at(0).proxy_addresses, 6u);
  EXPECT_NE(contents(directory / "log").find("6 sources"), std::string::npos)
      << contents(directory / "log");
  std::filesystem::remove_all(directory);
}
#endif

}  // namespace
}  // namespace dnstransport
