// Sweeps against the built-in responder on 127.0.0.1: the library end to end (points, derived
// results, progress, stop), and the CLI's sweep and report writing JSON, CSV, plots and
// index.html.
#include <dnstransport/sweep.hpp>

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <dnstransport/report.hpp>
#include <dnstransport/server.hpp>

#include "in_ci.hpp"
#include "scratch_dir.hpp"

namespace dnstransport {
namespace {

std::filesystem::path empty_directory(const char* name) {
  auto path = std::filesystem::path(::testing::TempDir()) /
              (std::string(name) + "-" + std::to_string(getpid()));
  std::filesystem::remove_all(path);
  std::filesystem::create_directories(path);
  return path;
}

using hostile::contents;

struct responder_fixture : ::testing::Test {
  responder_fixture()
      : responder([] {
          server_options o;
          o.listen[transport_kind::udp] = endpoint{"127.0.0.1", 0};
          o.listen[transport_kind::tcp] = endpoint{"127.0.0.1", 0};
          o.listen[transport_kind::tls] = endpoint{"127.0.0.1", 0};
          o.listen[transport_kind::doh] = endpoint{"127.0.0.1", 0};
          o.certificate_directory = empty_directory("sweep-certificate").string();
          return o;
        }()) {}

  // udp, tcp, tls, doh x 1, 2 clients x 1, unlimited queries per connection, short runs.
  sweep_plan tiny_plan() const {
    sweep_plan plan;
    plan.ports = responder.ports();
    plan.transports = {{transport_kind::udp, std::nullopt},
                       {transport_kind::tcp, std::nullopt},
                       {transport_kind::tls, tls_backend::openssl},
                       {transport_kind::doh, tls_backend::openssl}};
    plan.clients = {1, 2};
    plan.queries_per_connection = {1, 0};
    plan.repeats = 1;
    plan.duration_seconds = 0.3;
    plan.pause_seconds = 0;
    plan.base.traffic.outstanding = 20;
    return plan;
  }

  server responder;
};

using sweep_integration_test = responder_fixture;

TEST_F(sweep_integration_test, measures_every_point_and_derives_the_answers) {
  // A pause before every run but the first, so that the plan's estimate per run (duration +
  // pause) and the time runs really take differ: the ETA must follow the latter.
  sweep_plan plan = tiny_plan();
  plan.pause_seconds = 0.25;
  constexpr std::size_t runs = 14;
  using steady = std::chrono::steady_clock;
  const auto seconds_since = [](steady::time_point t) {
    return std::chrono::duration<double>(steady::now() - t).count();
  };
  std::size_t progress_calls = 0;
  std::size_t points_done = 0;
  std::vector<double> eta_at_run_start;  // indexed by runs done
  std::vector<double> done_at;           // test's clock when each run was done
  steady::time_point start;
  sweep_callbacks callbacks;
  callbacks.on_progress = [&](const sweep_progress& p) {
    ++progress_calls;
    EXPECT_EQ(p.point_count, runs);
    if (!p.run) eta_at_run_start.push_back(p.eta_seconds);
  };
  callbacks.on_point_done = [&](const sweep_result& partial) {
    done_at.push_back(seconds_since(start));
    ++points_done;
    EXPECT_EQ(partial.points.size(), points_done);
  };
  start = steady::now();
  const sweep_result r = run_sweep(plan, callbacks);
  EXPECT_FALSE(r.interrupted);
  ASSERT_EQ(r.points.size(), runs);
  EXPECT_EQ(points_done, runs);
  EXPECT_GE(progress_calls, runs);
  ASSERT_EQ(eta_at_run_start.size(), runs);
  ASSERT_EQ(done_at.size(), runs);
  // Before any run: the plan, ten runs of 0.3 s plus a 0.25 s pause.
  EXPECT_NEAR(eta_at_run_start[0], runs * (0.3 + 0.25), 1e-9);
  // Then the mean wall time of the runs done so far times the runs left. The runs done took
  // at most done_at[k - 1] (the test's clock, read after the k-th run ended), which bounds
  // the estimate from above exactly; and at least their planned 0.3 s each plus the 0.25 s
  // pauses before all but the first, which bounds it from below whatever the machine's speed.
  // The first run has no pause, so the plan's 0.55 s per run would break the upper bound.
  for (std::size_t k = 1; k < runs; ++k) {
    const double done = static_cast<double>(k);
    const double left = static_cast<double>(runs - k);
    const double most = done_at[k - 1] / done * left;
    const double least = (0.3 * done + 0.25 * (done - 1)) / done * left;
    EXPECT_LE(eta_at_run_start[k], most + 1e-6) << "after " << k << " runs";
    EXPECT_GE(eta_at_run_start[k], least - 1e-6) << "after " << k << " runs";
  }
  for (const auto& p : r.points) {
    ASSERT_EQ(p.repeats.size(), 1u) << describe(p.point);
    EXPECT_GT(p.summary.responses_received, 0u) << describe(p.point);
    EXPECT_EQ(p.repeats[0].port, plan.ports[p.point.transport.transport]);
  }
  EXPECT_EQ(r.percent_of_udp.size(), 12u);
  // tcp, tls, doh x 1, 2 clients, each measured at 1 and unlimited queries per connection: two
  // samples, through which T(N) = t_inf N / (N + h) passes exactly, so t_inf is the
  // unlimited figure and h = T(unlimited) / T(1) - 1. A connection per query costs more than
  // a query on a kept connection (more than twice the time): h > 1.
  ASSERT_EQ(r.amortization.size(), 6u);
  for (const auto& f : r.amortization) {
    double at_one = 0;
    double unlimited = 0;
    for (const auto& p : r.points) {
      if (!(p.point.transport == f.transport) || p.point.clients != f.clients) continue;
      (p.point.queries_per_connection == 1 ? at_one : unlimited) = p.summary.qps.mean;
    }
    ASSERT_GT(at_one, 0);
    ASSERT_GT(unlimited, 0);
    EXPECT_NEAR(f.model.t_inf, unlimited, 1e-9 * unlimited);
    EXPECT_NEAR(f.model.h, unlimited / at_one - 1, 1e-9 * unlimited / at_one);
    EXPECT_NEAR(f.model.residual, 0, 1e-9);
    EXPECT_GT(f.model.h, 1) << "T(1) " << at_one << " T(unlimited) " << unlimited;
  }
  EXPECT_EQ(r.query_count, default_queries().size());
  EXPECT_FALSE(r.machine.kernel.empty());
}

TEST_F(sweep_integration_test, stop_keeps_what_was_measured) {
  std::atomic<bool> stop{false};
  sweep_plan plan = tiny_plan();
  plan.base.stop = &stop;
  sweep_callbacks callbacks;
  callbacks.on_point_done = [&](const sweep_result& partial) {
    if (partial.points.size() == 2) stop = true;
  };
  const sweep_result r = run_sweep(plan, callbacks);
  EXPECT_TRUE(r.interrupted);
  EXPECT_EQ(r.points.size(), 2u);
  EXPECT_EQ(r.planned_points, 14u);
  ASSERT_FALSE(r.warnings.empty());
  EXPECT_NE(r.warnings.front().find("interrupted: 2 of 14 points"), std::string::npos);
}

#ifdef DNSTRANSPORT_CLI_PATH

// Runs the CLI with `arguments`, output into `log`; returns the exit status.
int run_cli_logged(const std::string& arguments, const std::filesystem::path& log) {
  const std::string command =
      fmt::format("{} {} >{} 2>&1", DNSTRANSPORT_CLI_PATH, arguments, log.string());
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The plots a report of these sweeps must hold. "percent_of_udp" only where some UDP point
// measured the server: where every one was client-bound (the built-in responder outruns the
// generator on a quiet machine) there is no % to plot, and the report says why instead.
std::vector<std::string> expected_plots(std::vector<std::string> plots,
                                        const std::vector<sweep_result>& sweeps,
                                        const std::filesystem::path& report,
                                        const std::string& why_not) {
  bool measurable = false;
  for (const sweep_result& r : sweeps) {
    for (const auto& e : r.percent_of_udp) measurable = measurable || e.measurable();
  }
  if (measurable) {
    plots.emplace_back("percent_of_udp");
  } else {
    EXPECT_NE(contents(report / "index.html").find(why_not), std::string::npos)
        << "no % of UDP plot, and no word of why";
    EXPECT_FALSE(std::filesystem::exists(report / "percent_of_udp.png"));
  }
  return plots;
}

TEST(sweep_cli_test, sweep_and_report_write_json_csv_plots_and_index) {
  const auto directory = empty_directory("sweep-cli");
  const auto json = directory / "sweep.json";
  ASSERT_EQ(
      run_cli_logged("sweep --transports udp,tcp,tls --clients 1,2 --queries-per-connection "
                     "1,unlimited --repeats 1 --duration 0.3 --pause 0 --outstanding 20 --json " +
                         json.string(),
                     directory / "sweep.log"),
      0)
      << contents(directory / "sweep.log");
  const sweep_result r = sweep_result_from_json(contents(json), json.string());
  EXPECT_EQ(r.points.size(), 10u);
  EXPECT_NE(r.plan.command_line.find("sweep --transports udp,tcp,tls"), std::string::npos);
  std::istringstream csv(contents(directory / "sweep.csv"));
  std::string line;
  std::size_t lines = 0;
  while (std::getline(csv, line)) ++lines;
  EXPECT_EQ(lines, 11u);
  EXPECT_NE(contents(directory / "sweep.log").find("TCP, TLS and DoH throughput as % of UDP"),
            std::string::npos);

  const auto report = directory / "report";
  ASSERT_EQ(run_cli_logged("report " + json.string() + " --out " + report.string(),
                           directory / "report.log"),
            0)
      << contents(directory / "report.log");
  const std::string index = contents(report / "index.html");
  EXPECT_NE(index.find("<table>"), std::string::npos);
  EXPECT_FALSE(contents(report / "points.csv").empty());
  // What the CLI writes and prints names the library's settings by its flags: no path, no
  // mark left (the library's texts mark them; the CLI names them).
  for (const std::string& text :
       {index, contents(report / "tables.txt"), contents(directory / "report.log"),
        contents(directory / "sweep.log"), contents(json)}) {
    EXPECT_EQ(text.find('\x1e'), std::string::npos);
    EXPECT_EQ(text.find("\\u001e"), std::string::npos);
    EXPECT_EQ(text.find("sweep_plan::"), std::string::npos);
    EXPECT_EQ(text.find("load_spec::"), std::string::npos);
  }
  if (!std::filesystem::exists("/usr/bin/gnuplot")) {
    if (hostile::in_ci()) FAIL() << "gnuplot is not installed (Debian: gnuplot-nox); CI needs it";
    GTEST_SKIP() << "gnuplot is not installed";
  }
  for (const std::string& plot :
       expected_plots({"qps_vs_clients", "amortization_tcp", "amortization_tls-openssl",
                       "latency_1_clients", "latency_2_clients", "connection_setup"},
                      {r}, report, "every UDP reference point was client-bound")) {
    for (const std::string extension : {".png", ".svg"}) {
      EXPECT_GT(std::filesystem::file_size(report / (plot + extension)), 1000u)
          << plot << extension;
    }
    EXPECT_NE(index.find("src=\"" + plot + ".png\""), std::string::npos) << plot;
    EXPECT_NE(index.find("href=\"" + plot + ".svg\""), std::string::npos) << plot;
  }
}

TEST(sweep_cli_test, report_of_two_saved_sweeps_overlays_them_and_lists_what_one_lacks) {
  const auto directory = empty_directory("compare-cli");
  const std::string common = "--repeats 1 --duration 0.2 --pause 0 --outstanding 20 --quiet ";
  // A: udp, tcp and tls with 1 and 2 clients, labelled; B: no tls, but 4 clients as well.
  ASSERT_EQ(run_cli_logged("sweep --transports udp,tcp,tls --clients 1,2 --queries-per-connection "
                           "1,unlimited --label 'server A' " +
                               common + "--json " + (directory / "a.json").string(),
                           directory / "a.log"),
            0)
      << contents(directory / "a.log");
  ASSERT_EQ(run_cli_logged("sweep --transports udp,tcp --clients 1,2,4 --queries-per-connection "
                           "1,unlimited " +
                               common + "--json " + (directory / "b.json").string(),
                           directory / "b.log"),
            0)
      << contents(directory / "b.log");
  EXPECT_EQ(sweep_result_from_json(contents(directory / "a.json"), "a.json").plan.base.output.label,
            "server A");

  const auto report = directory / "report";
  ASSERT_EQ(run_cli_logged("report " + (directory / "a.json").string() + " " +
                               (directory / "b.json").string() + " --out " + report.string(),
                           directory / "report.log"),
            0)
      << contents(directory / "report.log");
  const std::string printed = contents(directory / "report.log");
  // Named by the label, and by the file name where there is none.
  EXPECT_NE(printed.find("server A (from " + (directory / "a.json").string() + "):"),
            std::string::npos)
      << printed;
  EXPECT_NE(printed.find("b (from " + (directory / "b.json").string() + "):"), std::string::npos);
  EXPECT_NE(printed.find("Comparison: UDP queries/s"), std::string::npos);
  EXPECT_NE(printed.find("b: no tls-openssl points (measured for server A)"), std::string::npos);
  EXPECT_NE(printed.find("server A: udp not measured with 4 clients"), std::string::npos);
  const std::string index = contents(report / "index.html");
  EXPECT_NE(index.find("DNS servers compared: server A over UDP, TCP and TLS; b over UDP and TCP"),
            std::string::npos);
  EXPECT_FALSE(contents(report / "comparison.csv").empty());
  if (!std::filesystem::exists("/usr/bin/gnuplot")) {
    if (hostile::in_ci()) FAIL() << "gnuplot is not installed (Debian: gnuplot-nox); CI needs it";
    GTEST_SKIP() << "gnuplot is not installed";
  }
  const std::vector<sweep_result> sweeps{
      sweep_result_from_json(contents(directory / "a.json"), "a.json"),
      sweep_result_from_json(contents(directory / "b.json"), "b.json")};
  for (const std::string& plot :
       expected_plots({"qps_vs_clients", "amortization_tcp", "amortization_tls-openssl",
                       "latency_1_clients", "latency_2_clients", "latency_4_clients"},
                      sweeps, report, "whose UDP point measured the server (not client-bound)")) {
    for (const std::string extension : {".png", ".svg"}) {
      EXPECT_GT(std::filesystem::file_size(report / (plot + extension)), 1000u)
          << plot << extension;
    }
    EXPECT_NE(index.find("src=\"" + plot + ".png\""), std::string::npos) << plot;
  }
  // Both servers are in the SVGs where both were measured; only A where only A was.
  EXPECT_NE(contents(report / "amortization_tcp.svg").find("server A, 2 clients"),
            std::string::npos);
  EXPECT_NE(contents(report / "amortization_tcp.svg").find("b, 4 clients"), std::string::npos);
  EXPECT_EQ(contents(report / "amortization_tls-openssl.svg").find("b, "), std::string::npos);
}

TEST(sweep_cli_test, report_refuses_unreadable_and_foreign_files_by_name) {
  const auto directory = empty_directory("compare-cli-errors");
  std::ofstream(directory / "run.json") << "{\"schema\": \"dnstransport.run/1\"}";
  std::ofstream(directory / "broken.json") << "{\"schema\": ";
  const auto missing = (directory / "missing.json").string();
  EXPECT_EQ(run_cli_logged("report " + (directory / "run.json").string() + " " + missing,
                           directory / "a.log"),
            2);
  EXPECT_NE(contents(directory / "a.log").find("single run"), std::string::npos);
  EXPECT_EQ(run_cli_logged("report " + missing + " " + (directory / "run.json").string(),
                           directory / "b.log"),
            2);
  EXPECT_NE(contents(directory / "b.log").find("cannot read \"" + missing + "\""),
            std::string::npos)
      << contents(directory / "b.log");
  EXPECT_EQ(run_cli_logged("report " + (directory / "broken.json").string() + " " + missing,
                           directory / "c.log"),
            2);
  EXPECT_NE(contents(directory / "c.log").find("broken.json: not valid JSON"), std::string::npos)
      << contents(directory / "c.log");
}

// A responder answering UDP and TCP on one port, as a --target names them: TCP on a free
// port, then UDP on the same number.
struct one_port_responder {
  explicit one_port_responder(std::uint64_t close_after)
      : tcp([close_after] {
          server_options o;
          o.listen[transport_kind::tcp] = endpoint{"127.0.0.1", 0};
          o.close_after_queries = close_after;
          return o;
        }()),
        udp([this] {
          server_options o;
          o.listen[transport_kind::udp] = endpoint{"127.0.0.1", tcp.port(transport_kind::tcp)};
          return o;
        }()) {}

  server tcp;
  server udp;
};

TEST(sweep_cli_test, a_sweep_of_two_targets_interleaves_them_and_reports_both) {
  const auto directory = empty_directory("targets-cli");
  const one_port_responder plain(0);
  const one_port_responder closing(50);  // closes each TCP connection after 50 answers
  const auto json = directory / "two.json";
  ASSERT_EQ(
      run_cli_logged(fmt::format("sweep --target plain=127.0.0.1:{} --target closing=127.0.0.1:{} "
                                 "--transports udp,tcp --clients 1,2 --queries-per-connection "
                                 "unlimited --repeats 1 --duration 0.3 --pause 0 --outstanding 10 "
                                 "--json {}",
                                 plain.tcp.port(transport_kind::tcp),
                                 closing.tcp.port(transport_kind::tcp), json.string()),
                     directory / "sweep.log"),
      0)
      << contents(directory / "sweep.log");
  const sweep_result r = sweep_result_from_json(contents(json), json.string());
  ASSERT_EQ(r.plan.targets.size(), 2u);
  ASSERT_EQ(r.points.size(), 8u);
  for (std::size_t i = 0; i < r.points.size(); ++i) {
    const auto& p = r.points[i];
    // Point by point, each target in turn, each run sent to its target's port.
    EXPECT_EQ(p.point.target, i % 2 == 0 ? "plain" : "closing") << i;
    const auto& responder = i % 2 == 0 ? plain : closing;
    EXPECT_EQ(p.repeats.at(0).port, responder.tcp.port(transport_kind::tcp)) << describe(p.point);
    EXPECT_GT(p.summary.responses_received, 0u) << describe(p.point);
    if (p.point.transport.transport != transport_kind::tcp) continue;
    if (p.point.target == "plain") {
      EXPECT_EQ(p.summary.connections_opened, p.point.clients) << describe(p.point);
    } else {
      // 50 answers per connection: at least one new connection per 50 answers.
      EXPECT_GE(p.summary.connections_opened, p.summary.responses_received / 50)
          << describe(p.point);
    }
  }
  ASSERT_EQ(r.percent_of_udp.size(), 4u);
  EXPECT_EQ(r.percent_of_udp[0].target, "plain");
  EXPECT_EQ(r.percent_of_udp[1].target, "closing");
  const std::string printed = contents(directory / "sweep.log");
  EXPECT_NE(printed.find("Comparison of 2 sweeps"), std::string::npos) << printed;
  EXPECT_NE(printed.find("plain:"), std::string::npos);
  EXPECT_NE(printed.find("closing:"), std::string::npos);

  const auto report = directory / "report";
  ASSERT_EQ(run_cli_logged("report " + json.string() + " --out " + report.string(),
                           directory / "report.log"),
            0)
      << contents(directory / "report.log");
  const std::string tables = contents(report / "tables.txt");
  // The comparison table: a row per target and transport.
  for (const std::string row :
       {"\n  plain   udp ", "\n  plain   tcp ", "\n  closing udp ", "\n  closing tcp "}) {
    EXPECT_NE(tables.find(row), std::string::npos) << row << "\n" << tables;
  }
  EXPECT_NE(contents(report / "index.html")
                .find("DNS servers compared: plain over UDP and TCP; closing over UDP and TCP"),
            std::string::npos);
  for (const std::string script :
       {"qps_vs_clients.gp", "percent_of_udp.gp", "latency_1_clients.gp", "latency_2_clients.gp"}) {
    const std::string text = contents(report / script);
    EXPECT_NE(text.find("plain"), std::string::npos) << script;
    EXPECT_NE(text.find("closing"), std::string::npos) << script;
  }
  if (!std::filesystem::exists("/usr/bin/gnuplot")) {
    if (hostile::in_ci()) FAIL() << "gnuplot is not installed (Debian: gnuplot-nox); CI needs it";
    GTEST_SKIP() << "gnuplot is not installed";
  }
  for (const std::string plot : {"qps_vs_clients", "percent_of_udp", "latency_2_clients"}) {
    EXPECT_GT(std::filesystem::file_size(report / (plot + ".svg")), 1000u) << plot;
    EXPECT_NE(contents(report / (plot + ".svg")).find("closing"), std::string::npos) << plot;
  }
}

TEST(sweep_cli_test, bad_targets_exit_with_usage_status_naming_the_flag) {
  const auto directory = empty_directory("targets-cli-errors");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--target 127.0.0.1", "--target: \"127.0.0.1\" is not NAME=HOST"},
      {"--target a=127.0.0.1,tls=x", "--target a: \"x\" is not a positive number"},
      {"--target a=127.0.0.1,quic=1",
       "--target a: \"quic=1\" is not tls=PORT, doh=PORT, doq=PORT, pid=PID or cgroup=PATH"},
      {"--target a=127.0.0.1 --target a=127.0.0.2", "the name a appears twice"},
      {"--target a=127.0.0.1 --server 127.0.0.1", "--target and --server"},
      {"--target a=127.0.0.1 --tls-port 853", "give a --target its ports"}};
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto log = directory / fmt::format("{}.log", i);
    EXPECT_EQ(run_cli_logged("sweep --transports udp --clients 1 " + cases[i].first, log), 2)
        << cases[i].first;
    EXPECT_NE(contents(log).find(cases[i].second), std::string::npos)
        << cases[i].first << ": " << contents(log);
  }
}

TEST(sweep_cli_test, contradictions_and_foreign_files_exit_with_usage_status) {
  const auto directory = empty_directory("sweep-cli-errors");
  EXPECT_EQ(
      run_cli_logged("sweep --transports udp --queries-per-connection 10", directory / "a.log"), 2);
  EXPECT_NE(
      contents(directory / "a.log")
          .find("--queries-per-connection: values other than 'unlimited' need a transport with "
                "connections (tcp, tls, doh, doq) in --transports"),
      std::string::npos);
  // A run's JSON is reported on its own (its timeline); a broken one is refused by name.
  std::ofstream(directory / "run.json") << "{\"schema\": \"dnstransport.run/1\"}";
  EXPECT_EQ(run_cli_logged("report " + (directory / "run.json").string(), directory / "b.log"), 2);
  EXPECT_NE(contents(directory / "b.log").find((directory / "run.json").string() + ": "),
            std::string::npos)
      << contents(directory / "b.log");
}

#endif

}  // namespace
}  // namespace dnstransport
