// Comparisons of saved sweeps: labels kept in the JSON, names, grids that differ, the
// comparison's tables, and its report directory written without gnuplot.
#include <dnstransport/report.hpp>

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <boost/json.hpp>

#include <dnstransport/sweep.hpp>

#include "report/report_detail.hpp"
#include "sweep_transports.hpp"

namespace dnstransport {
namespace {

namespace st = sweep_transports;

run_result run(const sweep_point& p, double qps) {
  run_result r;
  r.server = "127.0.0.1";
  r.port = 53;
  r.transport = p.transport.transport;
  if (p.transport.backend) r.tls_backend = std::string(tls_backend_name(*p.transport.backend));
  r.clients = p.clients;
  r.outstanding = 100;
  r.threads = 1;
  r.queries_per_connection = p.queries_per_connection;
  r.elapsed_seconds = 1;
  r.qps = qps;
  r.queries_sent = static_cast<std::uint64_t>(qps);
  r.responses_received = static_cast<std::uint64_t>(qps);
  r.max_thread_cpu_share = 0.5;
  for (std::uint64_t i = 1; i <= 100; ++i) r.latency.record(i * 1000);
  return r;
}

// A sweep of `transports` x `clients` x 1, 10, unlimited where UDP answers `udp_qps` per
// client, persistent TCP 70 % of it and TLS 50 %, with set-up costs of 2 and 20 queries.
sweep_result sweep_of(std::vector<sweep_transport> transports, std::vector<unsigned> clients,
                      double udp_qps, std::string kernel) {
  sweep_result r;
  r.plan.transports = std::move(transports);
  r.plan.clients = std::move(clients);
  const bool udp_only = r.plan.transports == std::vector<sweep_transport>{st::udp};
  r.plan.queries_per_connection =
      udp_only ? std::vector<std::uint64_t>{0} : std::vector<std::uint64_t>{1, 10, 0};
  r.plan.repeats = 1;
  r.tool_version = "0.1.0";
  r.machine = {2, "Test CPU", std::move(kernel)};
  r.started_at = "2025-01-01T12:00:00Z";
  const auto points = expand(r.plan);
  r.planned_points = points.size();
  for (const auto& p : points) {
    const double share = p.transport == st::udp ? 1.0 : p.transport == st::tcp ? 0.7 : 0.5;
    const double h = p.transport == st::tls_openssl ? 20 : 2;
    const double t_inf = udp_qps * share * p.clients;
    const double n = static_cast<double>(p.queries_per_connection);
    sweep_point_result measured;
    measured.point = p;
    measured.repeats.push_back(run(p, p.queries_per_connection == 0 ? t_inf : t_inf * n / (n + h)));
    measured.summary = summarize(measured.repeats);
    r.points.push_back(std::move(measured));
  }
  derive_results(r);
  return r;
}

TEST(compare_test, labels_are_kept_in_run_and_sweep_json) {
  run_result r = run({st::udp, 1, 0}, 1000);
  r.label = "unbound 1.17";
  EXPECT_EQ(run_result_from_json(to_json(r), "run.json").label, "unbound 1.17");
  EXPECT_EQ(format_table(r).rfind("unbound 1.17: udp to 127.0.0.1:53", 0), 0u);

  sweep_result s = sweep_of({st::udp, st::tcp}, {1}, 1000, "Linux");
  s.plan.base.output.label = "knot 3.2";
  const std::string json = to_json(s);
  EXPECT_NE(json.find("\"label\": \"knot 3.2\""), std::string::npos);
  EXPECT_EQ(sweep_result_from_json(json, "s.json").plan.base.output.label, "knot 3.2");
  // Files written before labels existed still read, without a label.
  std::string old = json;
  old.erase(old.find("\"label\": \"knot 3.2\","), std::string("\"label\": \"knot 3.2\",").size());
  EXPECT_EQ(sweep_result_from_json(old, "old.json").plan.base.output.label, "");
}

TEST(compare_test, sweeps_are_named_by_label_else_file_name_and_kept_apart) {
  sweep_result labelled = sweep_of({st::udp}, {1}, 1000, "Linux");
  labelled.plan.base.output.label = "unbound";
  const sweep_result plain = sweep_of({st::udp}, {1}, 1000, "Linux");
  const auto sweeps = comparison_of({{"results/unbound-old.json", labelled},
                                     {"results/knot.json", plain},
                                     {"a/x.json", plain},
                                     {"b/x.json", plain}});
  ASSERT_EQ(sweeps.size(), 4u);
  EXPECT_EQ(sweeps[0].name, "unbound");
  EXPECT_EQ(sweeps[1].name, "knot");
  EXPECT_EQ(sweeps[2].name, "x #3");
  EXPECT_EQ(sweeps[3].name, "x #4");
  EXPECT_EQ(sweeps[3].source, "b/x.json");
}

TEST(compare_test, a_transport_or_cell_in_one_file_only_is_listed_as_missing) {
  const auto sweeps =
      comparison_of({{"a.json", sweep_of({st::udp, st::tcp, st::tls_openssl}, {1, 2}, 1000, "L")},
                     {"b.json", sweep_of({st::udp, st::tcp}, {1, 2, 4}, 2000, "L")}});
  const auto missing = missing_points(sweeps);
  ASSERT_EQ(missing.size(), 3u) << format_comparison(sweeps);
  EXPECT_EQ(missing[0], "a: udp not measured with 4 clients");
  EXPECT_EQ(missing[1],
            "a: tcp not measured with 4 clients, 1 query/connection; 4 clients, 10 "
            "queries/connection; 4 clients, persistent connections");
  EXPECT_EQ(missing[2], "b: no tls-openssl points (measured for a)");
  EXPECT_TRUE(missing_points(comparison_of({{"a.json", sweep_of({st::udp}, {1}, 1, "L")},
                                            {"b.json", sweep_of({st::udp}, {1}, 2, "L")}}))
                  .empty());
}

TEST(compare_test, tables_compare_udp_percentages_and_fits_per_server) {
  sweep_result b = sweep_of({st::udp, st::tcp}, {1, 2, 4}, 2000, "Linux 6.2");
  b.tool_version = "0.2.0";
  const auto sweeps = comparison_of(
      {{"a.json", sweep_of({st::udp, st::tcp, st::tls_openssl}, {1, 2}, 1000, "Linux 6.1")},
       {"b.json", b}});
  const std::string text = format_comparison(sweeps);
  // Each file's description, with the machine and version it was measured with.
  EXPECT_NE(text.find("a (from a.json):"), std::string::npos) << text;
  EXPECT_NE(text.find("b (from b.json):"), std::string::npos);
  EXPECT_NE(text.find("machine: 2 CPUs (Test CPU), Linux 6.1"), std::string::npos);
  EXPECT_NE(text.find("machine: 2 CPUs (Test CPU), Linux 6.2"), std::string::npos);
  EXPECT_NE(text.find("dnstransport 0.2.0 sweep"), std::string::npos);
  EXPECT_NE(text.find("note: these sweeps ran on different machines"), std::string::npos);
  EXPECT_NE(text.find("different dnstransport versions (0.1.0, 0.2.0)"), std::string::npos);
  // The comparison table: UDP q/s, persistent TCP at 70 % and TLS at 50 %, h from the fit
  // with the most clients (2 exactly for TCP: the model fits the points exactly), n90 = 9 h.
  std::istringstream lines(text);
  std::string line;
  std::vector<std::string> rows;
  while (std::getline(lines, line)) {
    if (line.starts_with("  a ") || line.starts_with("  b ")) rows.push_back(line);
  }
  ASSERT_GE(rows.size(), 5u) << text;
  const auto columns = [](const std::string& row) {
    std::istringstream in(row);
    std::vector<std::string> out;
    for (std::string word; in >> word;) out.push_back(word);
    return out;
  };
  EXPECT_EQ(columns(rows[0]),
            (std::vector<std::string>{"a", "udp", "-", "1,000", "2,000", "-", "-", "-", "-"}));
  EXPECT_EQ(columns(rows[1]), (std::vector<std::string>{"a", "tcp", "unlimited", "70.0", "%",
                                                        "70.0", "%", "-", "2", "2.00", "18.0"}));
  EXPECT_EQ(columns(rows[2]),
            (std::vector<std::string>{"a", "tls-openssl", "unlimited", "50.0", "%", "50.0", "%",
                                      "-", "2", "20.0", "180"}));
  EXPECT_EQ(columns(rows[3]),
            (std::vector<std::string>{"b", "udp", "-", "2,000", "4,000", "8,000", "-", "-", "-"}));
  EXPECT_EQ(columns(rows[4]),
            (std::vector<std::string>{"b", "tcp", "unlimited", "70.0", "%", "70.0", "%", "70.0",
                                      "%", "4", "2.00", "18.0"}));
  EXPECT_NE(text.find("TCP, TLS and DoH as % of UDP, every queries-per-connection value, by "
                      "server"),
            std::string::npos);
  EXPECT_NE(text.find("Handshake amortization by server"), std::string::npos);
  EXPECT_NE(text.find("b: no tls-openssl points (measured for a)"), std::string::npos);
}

TEST(compare_test, report_without_gnuplot_writes_tables_csv_and_overlay_scripts) {
  const auto directory =
      std::filesystem::path(::testing::TempDir()) / ("compare-report-" + std::to_string(getpid()));
  std::filesystem::remove_all(directory);
  sweep_result a = sweep_of({st::udp, st::tcp, st::tls_openssl}, {1, 2}, 1000, "Linux");
  a.plan.base.output.label = "server A";
  sweep_result b = sweep_of({st::udp, st::tcp}, {1, 2, 4}, 2000, "Linux");
  b.plan.base.output.label = "server B";
  const auto sweeps = comparison_of({{"a.json", a}, {"b.json", b}});
  const std::string path = std::getenv("PATH") != nullptr ? std::getenv("PATH") : "";
  setenv("PATH", "/nonexistent", 1);
  const auto written = write_comparison_report(sweeps, directory);
  setenv("PATH", path.c_str(), 1);
  EXPECT_NE(written.plot_problem.find("apt-get install gnuplot-nox"), std::string::npos);
  const auto read = [&directory](const char* file) {
    std::ifstream in(directory / file);
    return std::string{std::istreambuf_iterator<char>(in), {}};
  };
  // Both servers in every overlay that has data for both; TLS only for A.
  for (const char* script : {"qps_vs_clients.gp", "percent_of_udp.gp", "amortization_tcp.gp",
                             "latency_1_clients.gp", "latency_2_clients.gp"}) {
    const std::string text = read(script);
    EXPECT_NE(text.find("server A"), std::string::npos) << script;
    EXPECT_NE(text.find("server B"), std::string::npos) << script;
  }
  // 500 to 8,000 answers/s: a linear axis.
  EXPECT_NE(read("qps_vs_clients.gp").find("set yrange [0:*]"), std::string::npos);
  EXPECT_EQ(read("qps_vs_clients.gp").find("set logscale y"), std::string::npos);
  const std::string tls_plot = read("amortization_tls-openssl.gp");
  EXPECT_NE(tls_plot.find("server A, 2 clients: fit"), std::string::npos);
  EXPECT_NE(tls_plot.find("n_{90} = 180"), std::string::npos);
  EXPECT_EQ(tls_plot.find("server B"), std::string::npos);
  const std::string latency_4 = read("latency_4_clients.gp");
  EXPECT_EQ(latency_4.find("server A"), std::string::npos);
  EXPECT_NE(latency_4.find("server B: udp"), std::string::npos);
  // comparison.csv: a header and one row per server and point.
  std::istringstream csv(read("comparison.csv"));
  std::string line;
  std::getline(csv, line);
  EXPECT_EQ(line.rfind("server,transport,tls_backend,clients", 0), 0u);
  std::size_t rows = 0;
  while (std::getline(csv, line)) ++rows;
  EXPECT_EQ(rows, a.points.size() + b.points.size());
  // comparison.json: the same comparison for scripts.
  EXPECT_EQ(read("comparison.json"), comparison_to_json(sweeps));
  const std::string index = read("index.html");
  EXPECT_NE(index.find("DNS servers compared: server A over UDP, TCP and TLS; server B over UDP "
                       "and TCP"),
            std::string::npos)
      << index;
  // How it was measured: folded, above the plots and tables.
  EXPECT_LT(index.find("<details><summary>How it was measured"), index.find("<h2>Tables</h2>"));
  EXPECT_NE(index.find("server B: no tls-openssl points (measured for server A)"),
            std::string::npos);
  EXPECT_NE(index.find("<table>"), std::string::npos);
  EXPECT_NE(read("tables.txt")
                .find("Comparison of 2 sweeps: server A over UDP, TCP and TLS; "
                      "server B over UDP and TCP"),
            std::string::npos);
  std::filesystem::remove_all(directory);
}

TEST(compare_test, throughput_plot_is_logarithmic_when_servers_are_20_times_apart) {
  const auto directory =
      std::filesystem::path(::testing::TempDir()) / ("compare-log-" + std::to_string(getpid()));
  std::filesystem::remove_all(directory);
  sweep_result slow = sweep_of({st::udp, st::tcp}, {1, 4}, 1000, "Linux");
  slow.plan.base.output.label = "slow";
  sweep_result fast = sweep_of({st::udp}, {1, 4}, 100000, "Linux");
  fast.plan.base.output.label = "fast";
  const std::string path = std::getenv("PATH") != nullptr ? std::getenv("PATH") : "";
  setenv("PATH", "/nonexistent", 1);  // the scripts only, without gnuplot
  write_comparison_report(comparison_of({{"slow.json", slow}, {"fast.json", fast}}), directory);
  setenv("PATH", path.c_str(), 1);
  std::ifstream in(directory / "qps_vs_clients.gp");
  const std::string script{std::istreambuf_iterator<char>(in), {}};
  EXPECT_NE(script.find("set logscale y\n"), std::string::npos) << script;
  EXPECT_EQ(script.find("set yrange [0:*]"), std::string::npos);
  std::ifstream index_in(directory / "index.html");
  const std::string index{std::istreambuf_iterator<char>(index_in), {}};
  EXPECT_NE(index.find("DNS servers compared: slow over UDP and TCP; fast over UDP"),
            std::string::npos);
  std::filesystem::remove_all(directory);
}

// A server measured over transports no other server was gets a finding saying its figures
// compare with no one else's (the demo's built-in responder, measured over DoQ alone).
TEST(compare_test, a_server_that_shares_no_transport_is_said_to_stand_apart) {
  const auto both = comparison_of({{"unbound.json", sweep_of({st::udp, st::tcp}, {1}, 1000, "L")},
                                   {"knot.json", sweep_of({st::udp}, {1}, 2000, "L")},
                                   {"builtin.json", sweep_of({st::tls_openssl}, {1}, 3000, "L")}});
  const auto apart = detail::comparison_findings(both);
  ASSERT_EQ(apart.size(), 1u);
  EXPECT_EQ(
      apart[0].rfind("builtin was measured over TLS alone, which no other server here was", 0), 0u)
      << apart[0];
  EXPECT_NE(format_comparison(both).find("Findings across servers\n  - builtin was measured"),
            std::string::npos);

  const auto disjoint =
      comparison_of({{"unbound.json", sweep_of({st::udp, st::tcp}, {1}, 1000, "L")},
                     {"builtin.json", sweep_of({st::tls_openssl}, {1}, 3000, "L")}});
  const auto none_shared = detail::comparison_findings(disjoint);
  ASSERT_EQ(none_shared.size(), 1u);
  EXPECT_EQ(none_shared[0],
            "No transport was measured on more than one server (unbound over UDP and TCP; "
            "builtin over TLS): each server's figures and lines in the plots compare only with "
            "its own, never across servers.");

  const auto overlapping =
      comparison_of({{"unbound.json", sweep_of({st::udp, st::tcp}, {1}, 1000, "L")},
                     {"knot.json", sweep_of({st::udp}, {1}, 2000, "L")}});
  EXPECT_TRUE(detail::comparison_findings(overlapping).empty());
  EXPECT_EQ(format_comparison(overlapping).find("across servers"), std::string::npos);
}

// The comparison as JSON: every sweep by its name and file with what it measured (points
// without their runs), the findings across servers and the gaps, as the tables have them.
TEST(compare_test, a_comparison_as_json_holds_each_servers_figures_the_findings_and_the_gaps) {
  const auto sweeps =
      comparison_of({{"unbound.json", sweep_of({st::udp, st::tcp}, {1, 2}, 1000, "L")},
                     {"knot.json", sweep_of({st::udp}, {1}, 2000, "L")},
                     {"builtin.json", sweep_of({st::tls_openssl}, {1}, 3000, "L")}});
  const auto value = boost::json::parse(comparison_to_json(sweeps));
  const auto& document = value.as_object();
  EXPECT_EQ(document.at("schema").as_string(), comparison_schema);
  const auto& compared = document.at("sweeps").as_array();
  ASSERT_EQ(compared.size(), sweeps.size());
  for (std::size_t i = 0; i < sweeps.size(); ++i) {
    const auto& o = compared[i].as_object();
    const sweep_result& r = sweeps[i].result;
    EXPECT_EQ(o.at("name").as_string(), sweeps[i].name);
    EXPECT_EQ(o.at("source").as_string(), sweeps[i].source);
    const auto& points = o.at("points").as_array();
    ASSERT_EQ(points.size(), r.points.size());
    for (std::size_t p = 0; p < points.size(); ++p) {
      const auto& point = points[p].as_object();
      EXPECT_FALSE(point.contains("repeats"));
      EXPECT_EQ(point.at("clients").to_number<unsigned>(), r.points[p].point.clients);
      // The JSON writes 12 significant digits.
      EXPECT_NEAR(point.at("summary").at("qps").at("mean").to_number<double>(),
                  r.points[p].summary.qps.mean, r.points[p].summary.qps.mean * 1e-11);
    }
    EXPECT_EQ(o.at("percent_of_udp").as_array().size(), r.percent_of_udp.size());
    EXPECT_EQ(o.at("amortization").as_array().size(), r.amortization.size());
  }
  const auto strings = [](const boost::json::array& a) {
    std::vector<std::string> out;
    for (const auto& v : a) out.emplace_back(v.as_string());
    return out;
  };
  const auto findings = strings(document.at("findings").as_array());
  EXPECT_EQ(findings, detail::comparison_findings(sweeps));
  ASSERT_FALSE(findings.empty());
  const auto missing = strings(document.at("missing").as_array());
  EXPECT_EQ(missing, missing_points(sweeps));
  ASSERT_FALSE(missing.empty());
}

// A sweep with a distinct-sources axis is compared value by value: each value an entry of its
// own, named by it, whose tables hold only its points (the tables are keyed by transport and
// clients, which the values share).
TEST(compare_test, each_value_of_distinct_sources_is_compared_as_a_sweep_of_its_own) {
  sweep_result few = sweep_of({st::udp, st::tcp}, {1}, 1000, "L");
  const sweep_result many = sweep_of({st::udp, st::tcp}, {1}, 400, "L");
  few.plan.distinct_sources = {1, 1000};
  for (auto& p : few.points) p.point.distinct_sources = 1;
  for (auto p : many.points) {
    p.point.distinct_sources = 1000;
    few.points.push_back(p);
  }
  few.planned_points *= 2;
  derive_results(few);
  const auto sweeps = comparison_of({{"unbound.json", few}, {"knot.json", many}});
  ASSERT_EQ(sweeps.size(), 3u);
  EXPECT_EQ(sweeps[0].name, "unbound, 1 source");
  EXPECT_EQ(sweeps[1].name, "unbound, 1,000 sources");
  EXPECT_EQ(sweeps[2].name, "knot");
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(sweeps[i].result.plan.distinct_sources.empty());
    ASSERT_EQ(sweeps[i].result.points.size(), many.points.size());
    for (const auto& p : sweeps[i].result.points) EXPECT_EQ(p.point.distinct_sources, 0u);
  }
  // The UDP figure of each value is its own: 1,000 and 400 queries/s.
  EXPECT_DOUBLE_EQ(sweeps[0].result.points.front().summary.qps.mean, 1000);
  EXPECT_DOUBLE_EQ(sweeps[1].result.points.front().summary.qps.mean, 400);
  EXPECT_TRUE(missing_points(sweeps).empty());
}

}  // namespace
}  // namespace dnstransport
