// The report's plot of the cost model against the measured: a point per run and side, where
// the model's prediction lies on the diagonal when the costs are exact.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <dnstransport/sweep_result.hpp>

#include "report/report_detail.hpp"

namespace dnstransport::detail {
namespace {

// A TCP server whose answers cost 20 us and connections 150 us; the generator's 10 us and
// 60 us. Runs of 1, 10 and persistent queries per connection, two repeats each.
sweep_result tcp_sweep(bool monitored) {
  sweep_result r;
  const sweep_transport tcp{transport_kind::tcp, std::nullopt};
  r.plan.transports = {tcp};
  for (std::uint64_t per_connection : {1u, 10u, 0u}) {
    sweep_point_result p;
    p.point.transport = tcp;
    p.point.clients = 4;
    p.point.queries_per_connection = per_connection;
    for (double answers : {10000.0, 12000.0}) {
      run_result run;
      run.transport = transport_kind::tcp;
      run.responses_received = static_cast<std::uint64_t>(answers);
      const double opened = per_connection == 0 ? 4 : answers / double(per_connection);
      run.connections.opened = static_cast<std::uint64_t>(opened);
      if (monitored) {
        run.server_usage.pids = {1};
        run.server_usage.cpu_user_seconds = 20e-6 * answers + 150e-6 * opened;
      }
      run.client_cpu_seconds = 10e-6 * answers + 60e-6 * opened;
      p.repeats.push_back(run);
    }
    r.points.push_back(p);
  }
  r.costs = compute_costs(r.points);
  return r;
}

// The rows of the data block `name`: measured, predicted.
std::vector<std::pair<double, double>> rows_of(const std::string& body, const std::string& name) {
  std::smatch block;
  EXPECT_TRUE(std::regex_search(body, block, std::regex("\\$" + name + " << EOD\n([^E]*)EOD")))
      << name << " in\n"
      << body;
  std::vector<std::pair<double, double>> rows;
  std::istringstream in(block[1].str());
  double measured = 0;
  double predicted = 0;
  while (in >> measured >> predicted) rows.emplace_back(measured, predicted);
  return rows;
}

TEST(cost_plot_test, a_point_per_run_and_side_on_the_diagonal_when_the_costs_are_exact) {
  const sweep_result r = tcp_sweep(true);
  plot_set plots;
  add_cost_plot({{"", &r}}, plots);
  ASSERT_EQ(plots.plots.size(), 1u);
  EXPECT_TRUE(plots.skipped.empty());
  const plot_script& p = plots.plots[0];
  EXPECT_EQ(p.name, "cost_model");
  EXPECT_NE(p.body.find("title 'tcp, server'"), std::string::npos) << p.body;
  EXPECT_NE(p.body.find("title 'tcp, generator'"), std::string::npos) << p.body;
  EXPECT_NE(p.body.find("set logscale xy"), std::string::npos);
  EXPECT_NE(p.description.find("filled points the server"), std::string::npos);
  const auto server = rows_of(p.body, "c0_0s");
  const auto generator = rows_of(p.body, "c0_0g");
  ASSERT_EQ(server.size(), 6u);
  ASSERT_EQ(generator.size(), 6u);
  for (const auto& [measured, predicted] : server)
    EXPECT_NEAR(predicted, measured, 1e-3 * measured);
  // One query per connection: 20 + 150 us per answer for the server, 10 + 60 for the generator.
  EXPECT_NEAR(server[0].first, 170, 1e-3);
  EXPECT_NEAR(generator[0].first, 70, 1e-3);
  // Both axes hold every point, from below the cheapest to above the dearest.
  std::smatch range;
  ASSERT_TRUE(std::regex_search(p.body, range, std::regex("set xrange \\[([^:]+):([^\\]]+)\\]")));
  EXPECT_NE(p.body.find("set yrange [" + range[1].str() + ":" + range[2].str() + "]"),
            std::string::npos);
  for (const auto& rows : {server, generator}) {
    for (const auto& [measured, predicted] : rows) {
      EXPECT_LT(std::stod(range[1]), std::min(measured, predicted));
      EXPECT_GT(std::stod(range[2]), std::max(measured, predicted));
    }
  }
}

TEST(cost_plot_test, without_the_servers_cpu_only_the_generator_is_drawn) {
  const sweep_result r = tcp_sweep(false);
  plot_set plots;
  add_cost_plot({{"", &r}}, plots);
  ASSERT_EQ(plots.plots.size(), 1u);
  const plot_script& p = plots.plots[0];
  EXPECT_EQ(p.body.find("server"), std::string::npos) << p.body;
  EXPECT_EQ(rows_of(p.body, "c0_0g").size(), 6u);
  EXPECT_EQ(p.description.find("filled"), std::string::npos) << p.description;
}

TEST(cost_plot_test, servers_compared_each_have_their_colour) {
  const sweep_result a = tcp_sweep(true);
  const sweep_result b = tcp_sweep(true);
  plot_set plots;
  add_cost_plot({{"unbound", &a}, {"dnsdist", &b}}, plots);
  ASSERT_EQ(plots.plots.size(), 1u);
  const std::string& body = plots.plots[0].body;
  EXPECT_NE(body.find("lc 1 title 'unbound: tcp, server'"), std::string::npos) << body;
  EXPECT_NE(body.find("lc 2 title 'dnsdist: tcp, server'"), std::string::npos) << body;
}

// A sweep of two targets lists its costs interleaved (udp of A, of B, tcp of A, of B): still
// one colour per server.
TEST(cost_plot_test, the_targets_of_one_sweep_each_have_their_colour) {
  sweep_result r = tcp_sweep(true);
  const sweep_transport udp{transport_kind::udp, std::nullopt};
  r.plan.transports.insert(r.plan.transports.begin(), udp);
  std::vector<sweep_point_result> points;
  for (const std::string target : {"a", "b"}) {
    for (auto p : r.points) {
      p.point.target = target;
      points.push_back(p);
      p.point.transport = udp;
      for (auto& run : p.repeats) {
        run.transport = transport_kind::udp;
        run.connections.opened = 0;
      }
      points.push_back(p);
    }
  }
  r.points = points;
  r.costs = compute_costs(r.points);
  plot_set plots;
  add_cost_plot({{"", &r}}, plots);
  ASSERT_EQ(plots.plots.size(), 1u);
  const std::string& body = plots.plots[0].body;
  EXPECT_NE(body.find("lc 1 title 'a: tcp, server'"), std::string::npos) << body;
  EXPECT_NE(body.find("lc 1 title 'a: udp, server'"), std::string::npos) << body;
  EXPECT_NE(body.find("lc 2 title 'b: tcp, server'"), std::string::npos) << body;
  EXPECT_NE(body.find("lc 2 title 'b: udp, server'"), std::string::npos) << body;
}

TEST(cost_plot_test, a_sweep_without_a_model_says_why_it_has_no_plot) {
  sweep_result r;
  plot_set plots;
  add_cost_plot({{"", &r}}, plots);
  EXPECT_TRUE(plots.plots.empty());
  ASSERT_EQ(plots.skipped.size(), 1u);
  EXPECT_NE(plots.skipped[0].find("cost model"), std::string::npos);
}

}  // namespace
}  // namespace dnstransport::detail
