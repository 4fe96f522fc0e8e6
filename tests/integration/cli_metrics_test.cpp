// `run --metrics-listen` and `--metrics-file` (issue #38): the metrics scraped while a run
// lasts hold together and only grow, both formats are served as asked, and the file left
// at the end says what the run's JSON says.
#include <algorithm>
#include <csignal>
#include <map>
#include <regex>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <dnstransport/metrics.hpp>
#include <dnstransport/report.hpp>
#include <dnstransport/search.hpp>
#include <dnstransport/sweep.hpp>

#include "child_process.hpp"
#include "cli_runs.hpp"
#include "scratch_dir.hpp"

#ifdef DNSTRANSPORT_CLI_PATH

namespace dnstransport::hostile {
namespace {

using namespace std::chrono_literals;
namespace http = boost::beast::http;

struct scrape {
  unsigned status = 0;
  std::string content_type;
  std::string body;
};

scrape get(std::uint16_t port, const std::string& target, const std::string& accept = {}) {
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket socket(io);
  socket.connect({boost::asio::ip::make_address("127.0.0.1"), port});
  http::request<http::empty_body> request(http::verb::get, target, 11);
  request.set(http::field::host, "127.0.0.1");
  if (!accept.empty()) request.set(http::field::accept, accept);
  http::write(socket, request);
  boost::beast::flat_buffer buffer;
  http::response<http::string_body> response;
  http::read(socket, buffer, response);
  return {response.result_int(), std::string(response[http::field::content_type]), response.body()};
}

// The samples of a metrics text as written, labels and all: "NAME{LABELS}" or "NAME".
std::map<std::string, double> labelled_samples(const std::string& text) {
  std::map<std::string, double> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto space = line.rfind(' ');
    out[line.substr(0, space)] = std::stod(line.substr(space + 1));
  }
  return out;
}

// The samples of a metrics text by series, without the labels every sample has (server,
// transport): "dnstransport_lost_total{cause=\"timeout\"}", "dnstransport_answers_total".
std::map<std::string, double> samples(const std::string& text) {
  static const std::regex common(R"(server="[^"]*",transport="[^"]*",?)");
  std::map<std::string, double> out;
  for (const auto& [written, value] : labelled_samples(text)) {
    std::string series = std::regex_replace(written, common, "");
    if (series.ends_with("{}")) series.resize(series.size() - 2);
    out[series] = value;
  }
  return out;
}

double sum_of(const std::map<std::string, double>& s, const std::string& family) {
  double total = 0;
  for (const auto& [series, value] : s) {
    if (series.starts_with(family + "{")) total += value;
  }
  return total;
}

// What holds in every scrape: each query sent is answered, lost, failed or in flight; the
// histogram counts every answer, its buckets grow with their bounds.
void expect_consistent(const std::map<std::string, double>& s) {
  ASSERT_TRUE(s.contains("dnstransport_queries_sent_total"));
  EXPECT_EQ(s.at("dnstransport_queries_sent_total"),
            s.at("dnstransport_answers_total") + sum_of(s, "dnstransport_lost_total") +
                sum_of(s, "dnstransport_failed_total") + s.at("dnstransport_in_flight"));
  EXPECT_EQ(s.at("dnstransport_latency_seconds_count"), s.at("dnstransport_answers_total"));
  EXPECT_EQ(s.at("dnstransport_latency_seconds_bucket{le=\"+Inf\"}"),
            s.at("dnstransport_latency_seconds_count"));
  double below = 0;
  for (double bound : metrics_latency_bounds_seconds) {
    const double n = s.at(fmt::format("dnstransport_latency_seconds_bucket{{le=\"{}\"}}", bound));
    EXPECT_GE(n, below) << bound;
    below = n;
  }
}

// The figures, scraped until the run has closed `rows` intervals with answers in them.
std::map<std::string, double> scrape_after(std::uint16_t port, double seconds, child_process& run) {
  const auto limit = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < limit) {
    const auto s = samples(get(port, "/metrics").body);
    if (s.at("dnstransport_measured_seconds") > seconds && s.at("dnstransport_answers_total") > 0) {
      return s;
    }
    if (run.wait_for_stdout("queries sent", 10ms)) break;  // ended: nothing more to wait for
  }
  ADD_FAILURE() << "no interval ended after " << seconds << " s with answers\n"
                << run.stderr_so_far();
  return {};
}

TEST(cli_metrics_test, scrapes_hold_together_grow_and_end_as_the_json_says) {
  const scratch files;
  const std::string file = files.path("dnstransport.prom");
  const std::string json = files.path("run.json");
  // A monitored responder of its own (--server-process): the server's CPU is among the
  // metrics. Stopped by SIGINT once scraped, so no scrape races the run's end.
  child_process run(cli, {"run",
                          "--transport",
                          "tcp",
                          "--clients",
                          "4",
                          "--outstanding",
                          "20",
                          "--queries-per-connection",
                          "50",
                          "--duration",
                          "120",
                          "--interval",
                          "0.1",
                          "--server-process",
                          "--metrics-listen",
                          "127.0.0.1:0",
                          "--metrics-file",
                          file,
                          "--json",
                          json});
  ASSERT_TRUE(run.wait_for_stderr("metrics at http://127.0.0.1:", 20s)) << run.stderr_so_far();
  std::smatch m;
  const std::string err = run.stderr_so_far();
  ASSERT_TRUE(
      std::regex_search(err, m, std::regex(R"(metrics at http://127\.0\.0\.1:(\d+)/metrics)")));
  const auto port = static_cast<std::uint16_t>(std::stoi(m[1]));

  const auto first = scrape_after(port, 0, run);
  ASSERT_FALSE(first.empty());
  const auto second = scrape_after(port, first.at("dnstransport_measured_seconds"), run);
  ASSERT_FALSE(second.empty());
  for (const auto* s : {&first, &second}) {
    expect_consistent(*s);
    EXPECT_EQ(s->at("dnstransport_finished"), 0);
    EXPECT_TRUE(s->contains("dnstransport_server_cpu_seconds_total"));
    EXPECT_GT(s->at("dnstransport_connections_opened_total"), 0);
  }
  for (const auto& [series, value] : first) {
    if (series.find("_total") != std::string::npos || series.find("_bucket") != std::string::npos) {
      EXPECT_GE(second.at(series), value) << series;
    }
  }

  // Both formats, as asked; other paths are not metrics.
  const scrape open_metrics =
      get(port, "/metrics", "application/openmetrics-text;version=1.0.0,text/plain;q=0.5");
  EXPECT_EQ(open_metrics.status, 200u);
  EXPECT_EQ(open_metrics.content_type, metrics_content_type(metrics_format::openmetrics));
  EXPECT_TRUE(open_metrics.body.ends_with("# EOF\n"));
  EXPECT_NE(open_metrics.body.find("# TYPE dnstransport_answers counter\n"), std::string::npos);
  const scrape plain = get(port, "/metrics");
  EXPECT_EQ(plain.content_type, metrics_content_type(metrics_format::prometheus));
  EXPECT_EQ(plain.body.find("# EOF"), std::string::npos);
  EXPECT_NE(plain.body.find("# TYPE dnstransport_answers_total counter\n"), std::string::npos);
  EXPECT_EQ(get(port, "/").status, 404u);
  // The file too, while the run lasts.
  const auto in_file = samples(read_file(file));
  expect_consistent(in_file);
  EXPECT_EQ(in_file.at("dnstransport_finished"), 0);

  run.send_signal(SIGINT);
  const process_result r = run.wait(30s);
  ASSERT_FALSE(r.timed_out);
  ASSERT_EQ(r.exit_code, 130) << r.err;

  // The last file is the run's result.
  const auto last = samples(read_file(file));
  const run_result result = run_result_from_json(read_file(json), json);
  expect_consistent(last);
  EXPECT_EQ(last.at("dnstransport_finished"), 1);
  EXPECT_EQ(last.at("dnstransport_in_flight"), 0);
  EXPECT_EQ(last.at("dnstransport_queries_sent_total"), result.queries_sent);
  EXPECT_EQ(last.at("dnstransport_answers_total"), result.responses_received);
  EXPECT_EQ(last.at("dnstransport_lost_total{cause=\"timeout\"}"), result.lost);
  EXPECT_EQ(last.at("dnstransport_lost_total{cause=\"connection_closed\"}"), result.lost_on_close);
  EXPECT_EQ(last.at("dnstransport_failed_total{cause=\"abandoned\"}"), result.abandoned);
  EXPECT_EQ(last.at("dnstransport_failed_total{cause=\"malformed\"}"), result.malformed);
  EXPECT_EQ(last.at("dnstransport_connections_opened_total"), result.connections.opened);
  EXPECT_EQ(last.at("dnstransport_latency_seconds_count"), result.latency.count());
  // The JSON writes a figure to 12 significant digits and keeps the server's user and system
  // CPU apart; the metrics write every digit of the sums, so the last digits may differ.
  EXPECT_NEAR(last.at("dnstransport_generator_cpu_seconds_total"), result.client_cpu_seconds, 1e-9);
  EXPECT_NEAR(last.at("dnstransport_server_cpu_seconds_total"), result.server_usage.cpu_seconds(),
              1e-9);
  EXPECT_EQ(last.at("dnstransport_measured_seconds"), result.elapsed_seconds);
  for (const auto& [series, value] : second) {
    if (series.find("_total") != std::string::npos || series.find("_bucket") != std::string::npos) {
      EXPECT_LE(value, last.at(series)) << series;
    }
  }
}

TEST(cli_metrics_test, a_sweep_shows_each_run_under_its_points_labels_and_counts_its_runs) {
  const scratch files;
  const std::string file = files.path("sweep.prom");
  const std::string json = files.path("sweep.json");
  const process_result r = run_process(
      cli,
      {"sweep",     "--transports", "udp,tcp", "--clients",  "1,2",  "--queries-per-connection",
       "unlimited", "--repeats",    "1",       "--duration", "0.2",  "--pause",
       "0",         "--interval",   "0.1",     "--label",    "grid", "--metrics-file",
       file,        "--json",       json,      "--quiet"},
      120s);
  ASSERT_FALSE(r.timed_out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const sweep_result sweep = sweep_result_from_json(read_file(json), json);
  ASSERT_EQ(sweep.points.size(), 4u);
  const sweep_point_result& last_point = sweep.points.back();
  ASSERT_EQ(last_point.repeats.size(), 1u);
  const run_result& last_run = last_point.repeats.back();

  const auto s = labelled_samples(read_file(file));
  // The sweep's own figures, under its label only.
  EXPECT_EQ(s.at("dnstransport_sweep_runs_total{label=\"grid\"}"), 4);
  EXPECT_EQ(s.at("dnstransport_sweep_runs_planned{label=\"grid\"}"), 4);
  EXPECT_EQ(s.at("dnstransport_sweep_eta_seconds{label=\"grid\"}"), 0);
  // The last run's figures, under its point's labels, and no other point's.
  const std::string point = fmt::format(
      "server=\"127.0.0.1\",transport=\"{}\",clients=\"{}\","
      "queries_per_connection=\"unlimited\",label=\"grid\"",
      sweep_transport_name(last_point.point.transport), last_point.point.clients);
  EXPECT_EQ(s.at(fmt::format("dnstransport_answers_total{{{}}}", point)),
            last_run.responses_received);
  EXPECT_EQ(s.at(fmt::format("dnstransport_queries_sent_total{{{}}}", point)),
            last_run.queries_sent);
  EXPECT_EQ(s.at(fmt::format("dnstransport_finished{{{}}}", point)), 1);
  for (const auto& [series, value] : s) {
    if (!series.starts_with("dnstransport_sweep_")) {
      EXPECT_NE(series.find(point), std::string::npos) << series;
    }
  }
}

TEST(cli_metrics_test, a_search_shows_its_last_step_and_the_rates_offered_and_passed) {
  const scratch files;
  const std::string file = files.path("search.prom");
  const std::string json = files.path("search.json");
  const process_result r = run_process(
      cli,
      {"search", "--start-rate", "500", "--max-rate", "2000", "--duration", "0.2", "--settle", "0",
       "--interval", "0.1", "--metrics-file", file, "--json", json, "--quiet"},
      120s);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const search_result search = search_result_from_json(read_file(json), json);
  ASSERT_FALSE(search.steps.empty()) << r.err;
  const search_step& last = search.steps.back();
  double passed = 0;
  for (const search_step& step : search.steps) {
    if (step.passed) passed = std::max(passed, step.rate);
  }

  const auto s = samples(read_file(file));
  EXPECT_EQ(s.at("dnstransport_search_steps_total"), search.steps.size());
  EXPECT_EQ(s.at("dnstransport_search_offered_rate"), last.rate);
  EXPECT_EQ(s.at("dnstransport_search_passed_rate"), passed);
  expect_consistent(s);
  EXPECT_EQ(s.at("dnstransport_finished"), 1);
  EXPECT_EQ(s.at("dnstransport_answers_total"), last.run.responses_received);
  EXPECT_EQ(s.at("dnstransport_queries_sent_total"), last.run.queries_sent);
}

TEST(cli_metrics_test, a_metrics_port_in_use_is_refused_before_the_run) {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor taken(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  const auto port = taken.local_endpoint().port();
  expect_refused({"run", "--duration", "0.3", "--quiet", "--metrics-listen",
                  fmt::format("127.0.0.1:{}", port)},
                 "--metrics-listen");
}

}  // namespace
}  // namespace dnstransport::hostile

#endif
