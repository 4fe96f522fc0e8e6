// The dnstransport program as a user meets it: bad flags and files are refused before any
// traffic with exit status 2 and a message naming the flag or file; limits the run would
// hit are named up front; SIGINT/SIGTERM stop a run at once and still write its results.
// Every child runs under a time limit and is killed past it.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <dnstransport/report.hpp>

#include "child_process.hpp"
#include "cli_runs.hpp"
#include "in_ci.hpp"
#include "scratch_dir.hpp"

#ifdef DNSTRANSPORT_CLI_PATH

namespace dnstransport::hostile {
namespace {

using namespace std::chrono_literals;

struct usage_case {
  const char* name;
  std::vector<std::string> arguments;
  std::string mentions;  // the flag or file the message must name
};

// The "TcpExt:" counters of a copy of /proc/net/netstat: a line of names, then one of values.
std::map<std::string, std::uint64_t> tcp_extension_counters(const std::string& path) {
  std::ifstream in(path);
  std::string names;
  std::string values;
  std::map<std::string, std::uint64_t> counters;
  while (std::getline(in, names) && std::getline(in, values)) {
    if (names.rfind("TcpExt:", 0) != 0) continue;
    std::istringstream n(names);
    std::istringstream v(values);
    std::string name;
    std::uint64_t value = 0;
    n >> name;
    v >> name;
    while (n >> name && v >> value) counters[name] = value;
  }
  return counters;
}

void expect_usage_error(const std::vector<std::string>& arguments, const std::string& mentions) {
  const process_result r = run_process(cli, arguments, 20s);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(mentions), std::string::npos) << "stderr: " << r.err;
  // Refused before measuring: no result table.
  EXPECT_EQ(r.out.find("queries sent"), std::string::npos) << r.out;
}

TEST(cli_test, help_exits_zero) {
  const process_result top = run_process(cli, {"--help"});
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_NE(top.out.find("run"), std::string::npos);
  const process_result run = run_process(cli, {"run", "--help"});
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_NE(run.out.find("--transport"), std::string::npos);
}

class cli_usage_test : public ::testing::TestWithParam<usage_case> {};

TEST_P(cli_usage_test, refused_with_status_2_naming_the_flag) {
  // A short run, so that a check that is missing shows as a failure, not a long wait.
  std::vector<std::string> arguments = GetParam().arguments;
  arguments.insert(arguments.begin() + 1, {"--quiet", "--timeout", "0.2"});
  if (std::find(arguments.begin(), arguments.end(), "--duration") == arguments.end()) {
    arguments.insert(arguments.begin() + 1, {"--duration", "0.3"});
  }
  expect_usage_error(arguments, GetParam().mentions);
}

const usage_case usage_cases[] = {
    {"unknown_transport", {"run", "--transport", "quic"}, "--transport"},
    {"unknown_backend", {"run", "--transport", "tls", "--tls-backend", "wolfssl"}, "--tls-backend"},
    {"zero_clients", {"run", "--clients", "0"}, "--clients"},
    {"negative_clients", {"run", "--clients", "-1"}, "--clients"},
    {"zero_outstanding", {"run", "--outstanding", "0"}, "--outstanding"},
    {"zero_duration", {"run", "--duration", "0"}, "--duration"},
    {"negative_duration", {"run", "--duration", "-1"}, "--duration"},
    {"negative_count", {"run", "--count", "-5"}, "--count"},
    {"zero_threads", {"run", "--threads", "0"}, "--threads"},
    {"negative_rate", {"run", "--rate", "-1"}, "--rate"},
    {"unknown_arrivals", {"run", "--rate", "100", "--arrivals", "burst"}, "--arrivals"},
    {"arrivals_without_rate", {"run", "--arrivals", "poisson"}, "--rate"},
    {"interval_too_short", {"run", "--interval", "0.001"}, "--interval"},
    {"negative_interval", {"run", "--interval", "-1"}, "--interval"},
    {"search_criteria_without_search", {"sweep", "--min-answered", "90"}, "--min-answered"},
    {"search_with_a_rate", {"search", "--rate", "1000"}, "--rate"},
    {"search_bad_precision", {"search", "--precision", "2"}, "--precision"},
    {"negative_warmup", {"run", "--warmup", "-1"}, "--warmup"},
    {"zero_idle", {"run", "--transport", "tcp", "--idle", "0"}, "--idle"},
    {"negative_idle", {"run", "--transport", "tcp", "--idle", "-1"}, "--idle"},
    {"idle_with_udp", {"run", "--transport", "udp", "--idle", "5"}, "--idle"},
    {"negative_client_rate", {"run", "--client-rate", "-1"}, "--client-rate"},
    {"rate_and_client_rate", {"run", "--rate", "100", "--client-rate", "1"}, "--client-rate"},
    {"search_with_a_client_rate", {"search", "--client-rate", "1"}, "--client-rate"},
    {"sweep_zero_idle", {"sweep", "--idle", "0"}, "--idle"},
    {"queries_per_connection_with_udp",
     {"run", "--transport", "udp", "--queries-per-connection", "10"},
     "--queries-per-connection"},
    {"negative_queries_per_connection",
     {"run", "--transport", "tcp", "--queries-per-connection", "-1"},
     "--queries-per-connection"},
    {"server_with_bad_port", {"run", "--server", "127.0.0.1:notaport"}, "--server"},
    {"server_with_port_out_of_range", {"run", "--server", "127.0.0.1:70000"}, "--server"},
    {"server_with_unclosed_bracket", {"run", "--server", "[::1"}, "--server"},
    // An empty label: refused by the resolver library without sending a query anywhere.
    {"unresolvable_server", {"run", "--server", "no..such.host"}, "--server"},
    {"tls_version_no_backend_supports",
     {"run", "--transport", "tls", "--tls-version", "1.1"},
     "--tls-version"},
    {"tls_version_gnutls",
     {"run", "--transport", "tls", "--tls-backend", "gnutls", "--tls-min-version", "1.0"},
     "--tls-min-version"},
    {"edns_padding_without_block", {"run", "--edns-padding", "128"}, "--edns-padding"},
    {"edns_padding_block_zero", {"run", "--edns-padding", "block:0"}, "--edns-padding"},
    {"edns_padding_block_too_large", {"run", "--edns-padding", "block:65536"}, "--edns-padding"},
    {"edns_padding_block_not_a_number", {"run", "--edns-padding", "block:12x"}, "--edns-padding"},
    {"edns_keepalive_over_udp",
     {"run", "--transport", "udp", "--edns-keepalive"},
     "--edns-keepalive"},
    {"edns_keepalive_over_doq",
     {"run", "--transport", "doq", "--edns-keepalive"},
     "--edns-keepalive"},
    {"sweep_edns_keepalive_with_udp",
     {"sweep", "--transports", "udp,tcp", "--edns-keepalive"},
     "--edns-keepalive"},
    {"honour_keepalive_without_keepalive",
     {"run", "--transport", "tcp", "--honour-keepalive"},
     "--honour-keepalive"},
    {"coalesce_us_too_long", {"run", "--coalesce-us", "20000"}, "--coalesce-us"},
    {"coalesce_us_negative", {"run", "--coalesce-us", "-1"}, "--coalesce-us"},
    {"metrics_listen_on_a_name", {"run", "--metrics-listen", "localhost:9100"}, "--metrics-listen"},
    {"metrics_without_intervals",
     {"run", "--interval", "0", "--metrics-file", "dnstransport-test-unwritten.prom"},
     "--metrics-file"},
    {"metrics_file_in_no_directory",
     {"run", "--metrics-file", "/nonexistent/directory/dnstransport.prom"},
     "--metrics-file"},
    {"sweep_metrics_without_intervals",
     {"sweep", "--interval", "0", "--metrics-listen", "127.0.0.1:0"},
     "--metrics-listen"},
    {"search_metrics_file_in_no_directory",
     {"search", "--metrics-file", "/nonexistent/directory/dnstransport.prom"},
     "--metrics-file"},
    {"tls_versions_backwards",
     {"run", "--transport", "tls", "--tls-min-version", "1.3", "--tls-max-version", "1.2"},
     "--tls-min-version"},
};

INSTANTIATE_TEST_SUITE_P(cli_test, cli_usage_test, ::testing::ValuesIn(usage_cases),
                         [](const ::testing::TestParamInfo<usage_case>& param) {
                           return std::string(param.param.name);
                         });

TEST(cli_test, serve_edns_flags_out_of_range_are_named) {
  expect_usage_error({"serve", "--tcp", "127.0.0.1:0", "--keepalive-timeout", "7000"},
                     "--keepalive-timeout");
  expect_usage_error({"serve", "--tcp", "127.0.0.1:0", "--keepalive-timeout", "-2"},
                     "--keepalive-timeout");
  expect_usage_error({"serve", "--tcp", "127.0.0.1:0", "--padding-block", "70000"},
                     "--padding-block");
}

TEST(cli_test, query_file_problems_name_the_file) {
  const scratch files;
  const std::string missing = files.path("missing.txt");
  expect_usage_error({"run", "--queries", missing}, missing);
  // A directory opens but cannot be read (root reads any file, so permissions cannot
  // make one unreadable here).
  const std::string directory = files.path("");
  expect_usage_error({"run", "--queries", directory}, directory);
  const std::string empty = files.file("empty.txt", "");
  expect_usage_error({"run", "--queries", empty}, empty);
  const std::string comments = files.file("comments.txt", "; nothing but comments\n\n");
  expect_usage_error({"run", "--queries", comments}, comments);
  const std::string bad_line =
      files.file("bad.txt", "www.example.com A\nexample.org AAAA\nexample.net NOSUCHTYPE\n");
  expect_usage_error({"run", "--queries", bad_line}, bad_line + ":3:");
  const std::string bad_wire = files.file("bad.raw", std::string("\x00\x30short", 7));
  expect_usage_error({"run", "--queries", bad_wire}, bad_wire);
}

TEST(cli_test, ca_file_that_does_not_parse_names_the_file) {
  const scratch files;
  const std::string ca = files.file("ca.pem", "-----BEGIN CERTIFICATE-----\nnot base64\n");
  for (const char* backend : {"openssl", "gnutls"}) {
    SCOPED_TRACE(backend);
    // Nothing listens on port 9: the file is read before any connection.
    expect_usage_error({"run", "--server", "127.0.0.1:9", "--transport", "tls", "--tls-backend",
                        backend, "--verify", "--ca-file", ca, "--duration", "0.2"},
                       ca);
  }
}

TEST(cli_test, too_many_clients_for_the_descriptor_limit_is_said_up_front) {
  child_process child(
      cli, {"run", "--server", "127.0.0.1:9", "--clients", "1000", "--duration", "0.2", "--quiet"},
      256);
  const process_result r = child.wait(20s);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("1000"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("256"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ulimit -n"), std::string::npos) << r.err;
}

TEST(cli_test, more_clients_than_ephemeral_ports_is_said_up_front) {
  std::ifstream range_file("/proc/sys/net/ipv4/ip_local_port_range");
  unsigned low = 0;
  unsigned high = 0;
  if (!(range_file >> low >> high) || high < low) GTEST_SKIP() << "no ip_local_port_range";
  const unsigned ports = high - low + 1;
  const std::string clients = std::to_string(ports + 10);
  const process_result r =
      run_process(cli, {"run", "--server", "127.0.0.1:9", "--transport", "tcp", "--source",
                        "127.0.0.1", "--clients", clients, "--duration", "0.2", "--quiet"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(clients), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(std::to_string(ports)), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ip_local_port_range"), std::string::npos) << r.err;
}

// Coalesced receiving: the run's table says which mode ran, and its JSON keeps the setting.
TEST(cli_test, coalesced_receiving_is_in_the_table_and_the_json) {
  const scratch files;
  const std::string json = files.path("coalesced.json");
  const process_result r = run_process(
      cli, {"run", "--coalesce-us", "200", "--clients", "2", "--count", "2000", "--json", json},
      30s);
  ASSERT_FALSE(r.timed_out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Whether a read was put off depends on the latency this machine measures.
  EXPECT_TRUE(r.out.find("; coalescing on, no read delayed") != std::string::npos ||
              r.out.find("reads per answer delayed by coalescing (up to 200 us") !=
                  std::string::npos)
      << r.out;
  std::ifstream in(json);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const run_result result = run_result_from_json(text, json);
  EXPECT_EQ(result.coalesce_us, 200u);
  EXPECT_EQ(result.responses_received, 2000u);

  const process_result off = run_process(
      cli, {"run", "--coalesce-us", "0", "--rate", "2000", "--clients", "2", "--count", "200"},
      30s);
  ASSERT_EQ(off.exit_code, 0) << off.err;
  EXPECT_NE(off.out.find("; coalescing off\n"), std::string::npos) << off.out;
  // A closed loop's default: off, and the table says why.
  const process_result closed = run_process(cli, {"run", "--clients", "2", "--count", "200"}, 30s);
  ASSERT_EQ(closed.exit_code, 0) << closed.err;
  EXPECT_NE(closed.out.find("; coalescing off (a closed loop reads each answer as it comes)"),
            std::string::npos)
      << closed.out;
}

// The classic one-line query list, as dnsperf users write it: every client keeps
// --outstanding queries in flight (told apart by the letter case of the name), with no
// warning, and every query is answered.
TEST(cli_test, a_one_line_query_list_keeps_outstanding_queries_in_flight) {
  const scratch files;
  const std::string queries = files.path("q1.txt");
  std::ofstream(queries) << "www.example.com A\n";
  for (const char* transport : {"udp", "tcp"}) {
    SCOPED_TRACE(transport);
    const std::string json = files.path(fmt::format("one-name-{}.json", transport));
    const process_result r =
        run_process(cli,
                    {"run", "--transport", transport, "--queries", queries, "--outstanding", "100",
                     "--clients", "2", "--count", "4000", "--json", json},
                    30s);
    ASSERT_FALSE(r.timed_out);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err.find("in flight per client"), std::string::npos) << r.err;
    std::ifstream in(json);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const run_result result = run_result_from_json(text, json);
    EXPECT_EQ(result.in_flight_max, 100u);
    EXPECT_EQ(result.responses_received, 4000u);
    EXPECT_EQ(result.case_not_echoed, 0u);
    EXPECT_TRUE(result.warnings.empty()) << result.warnings.front();
  }
}

// How long a signalled run may take to exit: well under its 20 s timeout and 30 s duration,
// so a run that ignores the signal, finishes its duration, or waits out a timeout fails;
// and many times the 0.1-0.5 s a sanitizer-built child takes, so a stalled machine does
// not (it was 1 s, with the default 2 s timeout).
constexpr double signal_exit_seconds = 5;

// Starts a 30 s run with a 20 s timeout and progress on stderr and waits until it has
// measured something.
class interrupted_run {
 public:
  interrupted_run(const scratch& files, const std::string& transport)
      : json_(files.path("result-" + transport + ".json")),
        child_(cli, {"run", "--transport", transport, "--duration", "30", "--timeout", "20",
                     "--rate", "2000", "--progress", "--json", json_}) {
    started_ = child_.wait_for_stderr("answered", 20s);
    EXPECT_TRUE(started_) << "no progress line within 20 s";
  }

  // Sends the signal and returns how the process ended and how long it took after that.
  process_result stop(int signal, double& seconds_after_signal) {
    const auto signalled = std::chrono::steady_clock::now();
    child_.send_signal(signal);
    process_result r = child_.wait(10s);
    seconds_after_signal =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - signalled).count();
    std::cout << "[ cli      ] exit " << r.exit_code << " " << seconds_after_signal
              << " s after the signal\n";
    return r;
  }

  run_result written() const {
    std::ifstream in(json_);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return run_result_from_json(text, json_);
  }

 private:
  std::string json_;
  child_process child_;
  bool started_ = false;
};

// TCP Fast Open in a network namespace of its own (the sysctl is per namespace), where the
// kernel may both send and accept data in the SYN: once a client holds a cookie, connect()
// returns at once and sends nothing; the connection counts as opened, and its connect
// latency is taken, only when the SYN-ACK came back, never as 0.
TEST(cli_test, fast_open_connections_count_once_established) {
  const std::string unshare = "/usr/bin/unshare";
  if (::geteuid() != 0 || !std::filesystem::exists(unshare) ||
      run_process(unshare, {"-n", "true"}, 10s).exit_code != 0) {
    if (in_ci()) FAIL() << "needs root and unshare -n (util-linux); CI runs as root and has both";
    GTEST_SKIP() << "needs root and unshare -n for a network namespace of its own";
  }
  const scratch files;
  const std::string json = files.path("fastopen.json");
  const std::string netstat = files.path("netstat");
  // The namespace's own TCP counters, read after the run, say what the kernel did.
  const std::string script = fmt::format(
      "ip link set lo up && sysctl -qw net.ipv4.tcp_fastopen=3 || exit 99; '{}' run --transport "
      "tcp --tcp-fastopen --queries-per-connection 1 --clients 2 --outstanding 1 --count 400 "
      "--quiet --json '{}'; code=$?; cat /proc/net/netstat > '{}'; exit $code",
      cli, json, netstat);
  const process_result r = run_process(unshare, {"-n", "sh", "-c", script}, 30s);
  ASSERT_FALSE(r.timed_out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(json);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const run_result result = run_result_from_json(text, json);
  EXPECT_EQ(result.responses_received, 400u);
  EXPECT_EQ(result.connections.opened, 400u);
  EXPECT_EQ(result.connections.failed, 0u) << result.connections.first_failure;
  // Each connection whose SYN carried its query is counted once, as the kernel counts it.
  const auto kernel = tcp_extension_counters(netstat);
  EXPECT_EQ(result.connections.fastopen_data_in_syn, kernel.at("TCPFastOpenActive"));
  // With Fast Open the run keeps to 4 loopback sources, which the kernel's cookie cache holds
  // (16 taken in turn evict each other's cookies: about 300 of these 400 asked again): only
  // each source's first connection asks for a cookie, and most send their query in the SYN
  // (not all: on loopback the kernel times out a segment in some thousands of connections).
  EXPECT_LE(kernel.at("TCPFastOpenCookieReqd"), 4u);
  EXPECT_GT(result.connections.fastopen_data_in_syn, 200u);
  EXPECT_EQ(result.connect_latency.count(), 400u);
  EXPECT_GT(result.connect_latency.min(), 0u);
  // Each connection's first answer (set-up included) comes no earlier than the SYN-ACK that
  // completed its connect: neither is taken at connect()'s immediate return.
  EXPECT_EQ(result.first_query_latency.count(), 400u);
  EXPECT_GE(result.first_query_latency.min(), result.connect_latency.min());
  EXPECT_GE(result.first_query_latency.mean(), result.connect_latency.mean());
}

TEST(cli_test, sigint_stops_in_time_and_writes_the_results) {
  const scratch files;
  interrupted_run run(files, "udp");
  double seconds = 0;
  const process_result r = run.stop(SIGINT, seconds);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 130) << r.err;
  EXPECT_LT(seconds, signal_exit_seconds);
  const run_result written = run.written();
  EXPECT_TRUE(written.interrupted);
  EXPECT_GT(written.queries_sent, 0u);
  EXPECT_GT(written.responses_received, 0u);
  EXPECT_NE(r.out.find("interrupted"), std::string::npos) << r.out;
}

TEST(cli_test, sigterm_stops_a_tcp_run_in_time_and_writes_the_results) {
  const scratch files;
  interrupted_run run(files, "tcp");
  double seconds = 0;
  const process_result r = run.stop(SIGTERM, seconds);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 130) << r.err;
  EXPECT_LT(seconds, signal_exit_seconds);
  const run_result written = run.written();
  EXPECT_TRUE(written.interrupted);
  EXPECT_GT(written.queries_sent, 0u);
  EXPECT_GT(written.connections.closed_by_client, 0u);
}

// The second Ctrl-C's forced exit is tested where it is observable, against a stop that a
// slow answer holds up (cli_serve_test in cli_commands_test.cpp); here the first signal alone
// ends the run in time, so a second one would show nothing.

}  // namespace
}  // namespace dnstransport::hostile

#endif  // DNSTRANSPORT_CLI_PATH
