// The CLI commands besides run and sweep, and the run flags that change what goes on the
// wire: `queries` (what it writes for a known file, errors naming file and line), `serve`
// (answers every transport, stops cleanly on a signal), `calibrate` (its table), `--source`
// (the responder sees the load come from that address) and `--edns` (every query carries an
// OPT record with the payload size given). Each is checked against what a test responder
// received or against bytes known beforehand, not against the tool's own report alone.
#include <gtest/gtest.h>

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/json.hpp>

#include <dnstransport/load.hpp>
#include <dnstransport/message.hpp>
#include <dnstransport/query_source.hpp>
#include <dnstransport/report.hpp>

#include "child_process.hpp"
#include "cli_runs.hpp"
#include "hostile_server.hpp"
#include "in_ci.hpp"
#include "misbehaviour.hpp"
#include "scratch_dir.hpp"
#include "served.hpp"

#ifdef DNSTRANSPORT_CLI_PATH

namespace dnstransport::hostile {
namespace {

using namespace std::chrono_literals;

using hostile::contents;

std::uint16_t get16(const std::uint8_t* p) {
  return static_cast<std::uint16_t>(p[0] << 8 | p[1]);
}

// A query as this test reads it, independently of the library's parser: the question (name
// in presentation form, type) and the OPT record when there is one.
struct parsed_query {
  std::string name;
  std::uint16_t type = 0;
  std::uint16_t additional = 0;
  bool has_opt = false;
  std::uint16_t opt_payload = 0;
  bool dnssec_ok = false;
};

// Parses a query with one uncompressed question and at most an OPT record; fails the test on
// anything else.
std::optional<parsed_query> parse_query(const bytes& m) {
  parsed_query q;
  if (m.size() < 12 || get16(&m[4]) != 1) {
    ADD_FAILURE() << "not a one-question query, " << m.size() << " octets";
    return std::nullopt;
  }
  q.additional = get16(&m[10]);
  std::size_t at = 12;
  while (at < m.size() && m[at] != 0) {
    const std::size_t length = m[at];
    if (length > 63 || at + 1 + length > m.size()) {
      ADD_FAILURE() << "bad label";
      return std::nullopt;
    }
    if (!q.name.empty()) q.name += '.';
    q.name.append(reinterpret_cast<const char*>(&m[at + 1]), length);
    at += 1 + length;
  }
  at += 1;  // the root label
  if (at + 4 > m.size()) {
    ADD_FAILURE() << "question cut short";
    return std::nullopt;
  }
  q.type = get16(&m[at]);
  at += 4;
  if (q.additional == 1) {
    // OPT: root owner, TYPE 41, CLASS = payload size, TTL = ext-rcode, version, DO and Z.
    if (at + 11 > m.size() || m[at] != 0 || get16(&m[at + 1]) != 41) {
      ADD_FAILURE() << "additional record is not an OPT record";
      return std::nullopt;
    }
    q.has_opt = true;
    q.opt_payload = get16(&m[at + 3]);
    q.dnssec_ok = (m[at + 7] & 0x80) != 0;
    at += 11 + get16(&m[at + 9]);
  }
  if (at != m.size()) {
    ADD_FAILURE() << (m.size() - at) << " octets after the last record";
    return std::nullopt;
  }
  return q;
}

// The messages of a length-prefixed wire file, split by this test.
std::vector<bytes> split_wire(const std::string& data) {
  std::vector<bytes> messages;
  std::size_t at = 0;
  while (at + 2 <= data.size()) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(data.data() + at);
    const std::size_t length = get16(p);
    if (at + 2 + length > data.size()) break;
    messages.emplace_back(p + 2, p + 2 + length);
    at += 2 + length;
  }
  EXPECT_EQ(at, data.size()) << "trailing octets in the wire file";
  return messages;
}

// ---- queries ------------------------------------------------------------------------------

TEST(cli_queries_test, a_text_file_converts_to_the_known_wire_messages) {
  const scratch files("cli-queries");
  const std::string input = files.file("in.txt",
                                       "; three queries\n"
                                       "www.example.com A\n"
                                       "\n"
                                       "example.org AAAA ; trailing comment\n"
                                       "mail.example.net MX\n"
                                       "bare.example\n");
  const std::string output = files.path("out.raw");
  const process_result r =
      run_process(cli, {"queries", "--queries", input, "--format", "wire", "--out", output});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("wrote 4 queries in wire format to " + output), std::string::npos) << r.out;
  const std::vector<bytes> messages = split_wire(contents(output));
  ASSERT_EQ(messages.size(), 4u);
  const std::vector<std::pair<std::string, std::uint16_t>> expected{
      {"www.example.com", 1}, {"example.org", 28}, {"mail.example.net", 15}, {"bare.example", 1}};
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const auto q = parse_query(messages[i]);
    ASSERT_TRUE(q) << i;
    EXPECT_EQ(q->name, expected[i].first);
    EXPECT_EQ(q->type, expected[i].second) << q->name;
    EXPECT_EQ(messages[i][2] & 0x80, 0) << "QR set in a query";
    EXPECT_EQ(messages[i][2] & 0x01, 0x01) << "RD clear";  // as a stub resolver asks
    EXPECT_FALSE(q->has_opt);
  }
  // And the file reads back as dnsperf -B input.
  EXPECT_EQ(load_query_file(output, query_file_format::wire).size(), 4u);
}

TEST(cli_queries_test, the_built_in_set_as_text_and_wire_is_the_same_300_queries) {
  const scratch files("cli-queries-default");
  const std::string text = files.path("default.txt");
  const std::string wire = files.path("default.raw");
  const process_result t = run_process(cli, {"queries", "--out", text});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("(300 queries)"), std::string::npos) << t.out;
  const process_result w = run_process(cli, {"queries", "--format", "wire", "--out", wire});
  ASSERT_EQ(w.exit_code, 0) << w.err;

  // Text: one "name TYPE" per line (comments aside); wire: the same questions in order.
  std::vector<std::pair<std::string, std::string>> lines;
  std::istringstream in(contents(text));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == ';') continue;
    std::istringstream fields(line);
    std::string name;
    std::string type;
    fields >> name >> type;
    lines.emplace_back(name, type);
  }
  const std::vector<bytes> messages = split_wire(contents(wire));
  ASSERT_EQ(lines.size(), 300u);
  ASSERT_EQ(messages.size(), 300u);
  const std::map<std::string, std::uint16_t> types{
      {"A", 1},       {"NS", 2},     {"CNAME", 5}, {"SOA", 6},  {"PTR", 12},
      {"MX", 15},     {"TXT", 16},   {"AAAA", 28}, {"SRV", 33}, {"DS", 43},
      {"DNSKEY", 48}, {"HTTPS", 65}, {"CAA", 257}};
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto q = parse_query(messages[i]);
    ASSERT_TRUE(q) << i;
    std::string name = lines[i].first;
    if (!name.empty() && name.back() == '.') name.pop_back();
    EXPECT_EQ(q->name, name) << "line " << i;
    const auto type = types.find(lines[i].second);
    ASSERT_NE(type, types.end()) << lines[i].second;
    EXPECT_EQ(q->type, type->second) << lines[i].first;
  }
  // Both are what the library itself would send.
  const query_set built_in = default_queries();
  const query_set from_text = load_query_file(text, query_file_format::text);
  ASSERT_EQ(from_text.size(), built_in.size());
  for (std::size_t i = 0; i < built_in.size(); ++i) {
    const auto a = from_text[i];
    const auto b = built_in[i];
    EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end())) << "query " << i;
    EXPECT_TRUE(std::equal(b.begin(), b.end(), messages[i].begin(), messages[i].end()))
        << "query " << i;
  }
}

TEST(cli_queries_test, bad_input_names_the_file_and_line) {
  const scratch files("cli-queries-errors");
  const std::string out = files.path("out.raw");
  const std::string bad_type =
      files.file("bad-type.txt", "www.example.com A\nexample.org AAAA\nexample.net NOSUCHTYPE\n");
  expect_refused({"queries", "--queries", bad_type, "--format", "wire", "--out", out},
                 bad_type + ":3:");
  const std::string long_label = files.file(
      "long-label.txt", "; fine\nok.example A\n" + std::string(64, 'x') + ".example A\n");
  expect_refused({"queries", "--queries", long_label, "--format", "wire", "--out", out},
                 long_label + ":3:");
  const std::string missing = files.path("missing.txt");
  expect_refused({"queries", "--queries", missing, "--format", "wire", "--out", out}, missing);
  const std::string truncated_wire = files.file("cut.raw", std::string("\x00\x30short", 7));
  expect_refused({"queries", "--queries", truncated_wire, "--format", "wire", "--out", out},
                 truncated_wire);
  EXPECT_FALSE(std::filesystem::exists(out));
  expect_refused({"queries", "--format", "csv", "--out", out}, "--format");
  expect_refused({"queries", "--queries", bad_type, "--out", out}, "--format text");
  const std::string unwritable = files.path("no/such/directory/out.txt");
  expect_refused({"queries", "--out", unwritable}, unwritable);
}

// ---- serve --------------------------------------------------------------------------------

class cli_serve_test : public ::testing::TestWithParam<int> {};

TEST_P(cli_serve_test, answers_every_transport_and_stops_cleanly_on_a_signal) {
  const scratch files("cli-serve");
  served server(cli, files.path("cert"));
  ASSERT_TRUE(server.ready()) << server.out();
  for (const transport_kind t : {transport_kind::udp, transport_kind::tcp, transport_kind::tls}) {
    SCOPED_TRACE(std::string(transport_name(t)));
    load_spec spec;
    spec.target.transport = t;
    spec.target.port = server.port(t);
    spec.traffic.clients = 2;
    spec.traffic.outstanding = 10;
    spec.traffic.count = 300;
    spec.traffic.timeout_seconds = 10;
    const run_result r = run_load(spec);
    // Answered means a correct answer to the question asked (checked by the library), and
    // the responder's answers are NOERROR with records, or NODATA.
    EXPECT_EQ(r.queries_sent, 300u);
    EXPECT_EQ(r.responses_received, 300u) << r.connections.first_failure;
    EXPECT_EQ(r.rcodes[0], 300u);
    if (t != transport_kind::udp) {
      EXPECT_EQ(r.connections.opened, 2u);
    }
  }
  const process_result r = server.stop(GetParam());
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("answered: 300 udp, 300 tcp, 300 tls, 0 doh, 0 doq; 4 connections accepted; "
                       "0 TLS handshakes failed, 0 resumed, 0 with 0-RTT accepted; 0 malformed "
                       "queries dropped"),
            std::string::npos)
      << r.out;
}

INSTANTIATE_TEST_SUITE_P(cli_serve_test, cli_serve_test, ::testing::Values(SIGINT, SIGTERM),
                         [](const ::testing::TestParamInfo<int>& param) {
                           return std::string(param.param == SIGINT ? "sigint" : "sigterm");
                         });

// CPU time `pid` has spent so far (every thread), in seconds; -1 when it cannot be read.
double process_cpu_seconds(pid_t pid) {
  clockid_t clock{};
  timespec t{};
  if (clock_getcpuclockid(pid, &clock) != 0 || clock_gettime(clock, &t) != 0) return -1;
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

// A graceful stop waits for each thread's current work; a second Ctrl-C exits at once
// (status 130, where the graceful stop exits 0). Against a responder that spends 1 s of CPU
// per answer, 20 queries in one TCP segment hold its thread for 20 s of CPU: the test waits
// until the thread has begun (the process spends CPU; an idle responder spends none), stops
// it, and after the stop has begun (it says so) stops it again. A forced exit that did not
// work would leave the child running some 19 s more: past the wait, and status 0.
TEST(cli_serve_test, a_second_sigint_exits_at_once_while_a_slow_answer_holds_the_stop) {
  child_process child(cli, {"serve", "--tcp", "127.0.0.1:0", "--cost-answer-us", "1000000"});
  ASSERT_TRUE(child.wait_for_stdout("stop with Ctrl-C", 20s)) << child.stdout_so_far();
  std::smatch m;
  const std::string out = child.stdout_so_far();
  ASSERT_TRUE(std::regex_search(out, m, std::regex(R"(tcp  127\.0\.0\.1:(\d+))"))) << out;
  const auto port = static_cast<std::uint16_t>(std::stoi(m[1]));

  boost::asio::io_context io;
  boost::asio::ip::tcp::socket socket(io);
  socket.connect({boost::asio::ip::make_address("127.0.0.1"), port});
  socket.set_option(boost::asio::ip::tcp::no_delay(true));
  std::vector<std::uint8_t> segment;
  const std::vector<std::uint8_t> query = encode_query("www.example.com", 1);
  for (int i = 0; i < 20; ++i) {
    segment.push_back(static_cast<std::uint8_t>(query.size() >> 8));
    segment.push_back(static_cast<std::uint8_t>(query.size() & 0xff));
    segment.insert(segment.end(), query.begin(), query.end());
  }
  boost::asio::write(socket, boost::asio::buffer(segment));

  const auto limit = std::chrono::steady_clock::now() + 20s;
  while (process_cpu_seconds(child.pid()) < 0.2 && std::chrono::steady_clock::now() < limit) {
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_GE(process_cpu_seconds(child.pid()), 0.2) << "the responder never began the answers";
  child.send_signal(SIGINT);
  ASSERT_TRUE(child.wait_for_stderr("a second Ctrl-C exits at once", 20s));
  child.send_signal(SIGINT);
  const process_result r = child.wait(10s);
  EXPECT_FALSE(r.timed_out) << "the second Ctrl-C did not end the stop";
  EXPECT_EQ(r.exit_code, 130) << r.err;
}

TEST(cli_serve_test, an_address_that_cannot_be_bound_is_a_usage_error) {
  expect_refused({"serve", "--listen", "127.0.0.1:notaport"}, "--listen");
  // 192.0.2.1 (TEST-NET-1) is not an address of this machine.
  expect_refused({"serve", "--listen", "off", "--tcp", "192.0.2.1:5300"}, "192.0.2.1");
}

// kdig (Knot DNS), found on PATH: without it the serve tests check the listener's banner
// only, so in CI (CI=true), where it must be installed, its absence fails the test.
std::optional<std::string> cli_serve_kdig() {
  std::optional<std::string> kdig = find_program("kdig");
  if (!kdig && in_ci())
    ADD_FAILURE() << "kdig is not installed (Debian: knot-dnsutils); CI needs it";
  return kdig;
}

TEST(cli_serve_test, doh_listener_is_printed_and_answers_on_its_path) {
  const scratch files("cli-serve-doh");
  child_process child(cli, {"serve", "--listen", "off", "--doh", "127.0.0.1:0", "--doh-path", "/q",
                            "--cert-dir", files.path("cert")});
  ASSERT_TRUE(child.wait_for_stdout("stop with Ctrl-C", 20s)) << child.stdout_so_far();
  const std::string out = child.stdout_so_far();
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      out, m,
      std::regex(
          R"(doh  https://127\.0\.0\.1:(\d+)/q \(openssl, 0-RTT accepted\), certificate (\S+))")))
      << out;
  const std::string port = m[1];
  const std::string certificate = m[2];
  EXPECT_TRUE(std::filesystem::exists(certificate)) << certificate;
  // An independent client: kdig on PATH (in CI a missing one fails the test).
  const std::optional<std::string> kdig = cli_serve_kdig();
  const bool have_kdig = kdig.has_value();
  if (have_kdig) {
    const process_result k = run_process(
        *kdig, {"@127.0.0.1", "-p", port, "+https=/q", "+tls-ca=" + certificate,
                "+tls-hostname=localhost", "+timeout=5", "+retry=0", "www.example.com", "A"});
    EXPECT_FALSE(k.timed_out);
    EXPECT_NE(k.out.find("192.0.2.1"), std::string::npos) << k.out << k.err;
  }
  child.send_signal(SIGINT);
  const process_result r = child.wait(20s);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(fmt::format("0 tls, {} doh, 0 doq;", have_kdig ? 1 : 0)), std::string::npos)
      << r.out;
}

TEST(cli_serve_test, a_doh_path_that_is_not_a_path_is_a_usage_error) {
  expect_refused({"serve", "--listen", "off", "--doh", "127.0.0.1:0", "--doh-path", "dns"},
                 "--doh-path");
}

#ifdef DNSTRANSPORT_HAVE_DOQ
TEST(cli_serve_test, doq_listener_is_printed_and_answers) {
  const scratch files("cli-serve-doq");
  child_process child(
      cli, {"serve", "--listen", "off", "--doq", "127.0.0.1:0", "--cert-dir", files.path("cert")});
  ASSERT_TRUE(child.wait_for_stdout("stop with Ctrl-C", 20s)) << child.stdout_so_far();
  const std::string out = child.stdout_so_far();
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      out, m,
      std::regex(R"(doq  127\.0\.0\.1:(\d+) \(gnutls, 0-RTT accepted\), certificate (\S+))")))
      << out;
  const std::string port = m[1];
  const std::string certificate = m[2];
  EXPECT_TRUE(std::filesystem::exists(certificate)) << certificate;
  // An independent client: kdig on PATH (in CI a missing one fails the test).
  const std::optional<std::string> kdig = cli_serve_kdig();
  const bool have_kdig = kdig.has_value();
  if (have_kdig) {
    const process_result k = run_process(
        *kdig, {"@127.0.0.1", "-p", port, "+tls-ca=" + certificate, "+tls-hostname=localhost",
                "+quic", "+timeout=5", "+retry=0", "www.example.com", "A"});
    EXPECT_FALSE(k.timed_out);
    EXPECT_NE(k.out.find("192.0.2.1"), std::string::npos) << k.out << k.err;
  }
  child.send_signal(SIGINT);
  const process_result r = child.wait(20s);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(fmt::format("0 doh, {} doq;", have_kdig ? 1 : 0)), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("doq: 0 connections with 0-RTT accepted, 0 Retry sent, 0 datagrams "
                       "dropped (0 answered with a stateless reset)"),
            std::string::npos)
      << r.out;
}

TEST(cli_serve_test, doq_can_refuse_0rtt) {
  const scratch files("cli-serve-doq-no-0rtt");
  child_process child(cli, {"serve", "--listen", "off", "--doq", "127.0.0.1:0", "--doq-no-0rtt",
                            "--cert-dir", files.path("cert")});
  ASSERT_TRUE(child.wait_for_stdout("stop with Ctrl-C", 20s)) << child.stdout_so_far();
  EXPECT_NE(child.stdout_so_far().find("(gnutls, 0-RTT refused)"), std::string::npos)
      << child.stdout_so_far();
  child.send_signal(SIGTERM);
  EXPECT_EQ(child.wait(20s).exit_code, 0);
}

TEST(cli_serve_test, bad_doq_settings_are_usage_errors) {
  expect_refused({"serve", "--listen", "off", "--doq", "localhost:853"}, "--doq");
  expect_refused({"serve", "--listen", "off", "--doq", "127.0.0.1:0", "--doq-max-streams", "0"},
                 "--doq-max-streams");
  // 192.0.2.1 (TEST-NET-1) is not an address of this machine.
  expect_refused({"serve", "--listen", "off", "--doq", "192.0.2.1:8853"}, "192.0.2.1");
}
#endif

// ---- search -------------------------------------------------------------------------------

// The search offers the rates, so --arrivals poisson needs no --rate there (it spreads each
// step's rate), and the steps it runs say so.
TEST(cli_search_test, poisson_arrivals_need_no_rate_of_their_own) {
  const scratch files("search-poisson");
  const std::string json = files.path("search.json");
  const process_result r =
      run_process(cli, {"search", "--arrivals", "poisson", "--start-rate", "200", "--max-rate",
                        "400",    "--duration", "0.2",     "--settle",     "0",   "--repeats",
                        "1",      "--max-time", "1",       "--clients",    "2",   "--outstanding",
                        "10",     "--json",     json,      "--quiet"},
                  60s);
  ASSERT_FALSE(r.timed_out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(contents(json).find("poisson"), std::string::npos);
}

// ---- calibrate ----------------------------------------------------------------------------

TEST(cli_calibrate_test, prints_a_row_per_case_and_the_ceiling) {
#ifdef DNSTRANSPORT_HAVE_DOQ
  const std::string transports = "udp,tcp:1,tls-gnutls,doh-openssl:1,tls-gnutls:1+resume,doq";
#else
  const std::string transports = "udp,tcp:1,tls-gnutls,doh-openssl:1,tls-gnutls:1+resume";
#endif
  const process_result r = run_process(cli,
                                       {"calibrate", "--duration", "0.2", "--clients", "2",
                                        "--outstanding", "5", "--transports", transports},
                                       60s);
  ASSERT_FALSE(r.timed_out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Header, one row per case in the order given, and the explanation.
  std::istringstream lines(r.out);
  std::string line;
  std::vector<std::string> rows;
  while (std::getline(lines, line)) rows.push_back(line);
  ASSERT_GE(rows.size(), 6u) << r.out;
  EXPECT_NE(rows[0].find("ceiling q/s/thread"), std::string::npos) << r.out;
  const std::regex row(
      R"(^(\S+(?: \(\w+\))?(?:, resumed)?)\s+(\S+)\s+(\d+)\s+([\d.]+)\s+(\S+)\s+(\d+)\s+(.+)$)");
  const std::vector<std::pair<std::string, std::string>> cases{
      {"udp", "-"},
      {"tcp", "1"},
      {"tls (gnutls)", "unlimited"},
      {"doh (openssl)", "1"},
      {"tls (gnutls), resumed", "1"},
#ifdef DNSTRANSPORT_HAVE_DOQ
      {"doq (gnutls)", "unlimited"},
#endif
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(rows[i + 1], m, row)) << rows[i + 1];
    EXPECT_EQ(m[1], cases[i].first);
    EXPECT_EQ(m[2], cases[i].second);
    const double qps = std::stod(m[3]);
    const double cpu_per_million = std::stod(m[4]);
    const double ceiling = std::stod(m[6]);
    EXPECT_GT(qps, 0) << rows[i + 1];
    EXPECT_GT(cpu_per_million, 0) << rows[i + 1];
    // The ceiling is answers per CPU second, so it is 1e6 / (CPU seconds per million), as
    // far as the table's rounding allows (CPU s/M to 0.005, the ceiling to 0.5).
    EXPECT_NEAR(ceiling, 1e6 / cpu_per_million, 0.01 * ceiling + 1) << rows[i + 1];
    EXPECT_GE(ceiling, 1e6 / (cpu_per_million + 0.005) - 0.5) << rows[i + 1];
    if (cpu_per_million > 0.005) {
      EXPECT_LE(ceiling, 1e6 / (cpu_per_million - 0.005) + 0.5) << rows[i + 1];
    }
    // Client CPU per connection at one query per connection: the CPU per answer times
    // answers / connections, one answer per connection but at most one more connection a
    // client (2), opened as the run ended; the answers are queries/s over the window, which
    // is 0.2 s or more. Within the table's rounding (0.05 for CPU us/conn).
    if (cases[i].second == "1") {
      const double per_connection = std::stod(m[5]);
      const double answers_at_least = std::max(0.0, (qps - 0.5) * 0.2);
      EXPECT_GE(per_connection,
                (cpu_per_million - 0.005) * answers_at_least / (answers_at_least + 2) - 0.05)
          << rows[i + 1];
      EXPECT_LE(per_connection, cpu_per_million + 0.005 + 0.05) << rows[i + 1];
    } else {
      EXPECT_EQ(m[5], "-") << rows[i + 1];
    }
    const std::string limit = m[7];
    EXPECT_TRUE(limit == "responder" || limit == "client (this figure is the ceiling)") << limit;
  }
  EXPECT_NE(r.out.find("A server measured near threads x ceiling"), std::string::npos) << r.out;
}

TEST(cli_calibrate_test, bad_cases_are_usage_errors) {
  expect_refused({"calibrate", "--transports", "quic"}, "--transports");
  expect_refused({"calibrate", "--transports", "udp:10"}, "--transports");
  expect_refused({"calibrate", "--transports", "tls-wolfssl"}, "--transports");
  expect_refused({"calibrate", "--transports", "doh-wolfssl"}, "--transports");
  expect_refused({"calibrate", "--transports", "doq-openssl"}, "--transports");
  expect_refused({"calibrate", "--transports", "tcp:many"}, "--transports");
  expect_refused({"calibrate", "--transports", "tcp:1+resume"}, "--transports");
}

// ---- run --source and --edns --------------------------------------------------------------

// Runs the CLI against 127.0.0.1:port with `arguments` added, 100 queries; returns what it
// wrote to its JSON file.
run_result run_cli(const scratch& files, std::uint16_t port, std::vector<std::string> arguments) {
  const std::string json = files.path("result.json");
  std::filesystem::remove(json);
  std::vector<std::string> all{"run",     "--server",  fmt::format("127.0.0.1:{}", port),
                               "--count", "100",       "--clients",
                               "2",       "--timeout", "10",
                               "--quiet", "--json",    json};
  all.insert(all.end(), arguments.begin(), arguments.end());
  const process_result r = run_process(cli, all, 60s);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (!std::filesystem::exists(json)) {
    ADD_FAILURE() << "no JSON written: " << r.err;
    return {};
  }
  return run_result_from_json(contents(json), json);
}

TEST(cli_count_test, count_is_of_measured_queries_after_the_warmup) {
  // Before, the warm-up used up the count: with 0.3 s of warm-up at 2000 queries/s, a count
  // of 100 was spent before measuring began and the run reported nothing.
  const scratch files("cli-count");
  hostile_server server({}, answer_all());
  const run_result r = run_cli(files, server.port(), {"--warmup", "0.3", "--rate", "2000"});
  EXPECT_EQ(r.queries_sent, 100u);
  EXPECT_EQ(r.responses_received, 100u);
  EXPECT_GT(server.queries(), 100u);
  EXPECT_LE(server.queries(), 100u + 2000 * 3 / 10 + 2);
}

class cli_source_test : public ::testing::TestWithParam<transport_kind> {};

TEST_P(cli_source_test, load_comes_from_the_source_addresses_given) {
  const scratch files("cli-source");
  hostile_options options;
  options.transport = GetParam();
  {
    hostile_server server(options, answer_all());
    const run_result r =
        run_cli(files, server.port(),
                {"--transport", std::string(transport_name(GetParam())), "--source", "127.0.0.2"});
    EXPECT_EQ(r.responses_received, 100u);
    EXPECT_EQ(server.sources(), (std::set<std::string>{"127.0.0.2"}));
  }
  // Several: spread over the clients (and, for TCP, over successive connections).
  hostile_server server(options, answer_all());
  std::vector<std::string> arguments{"--transport", std::string(transport_name(GetParam())),
                                     "--source", "127.0.0.3,127.0.0.4"};
  if (GetParam() != transport_kind::udp) {
    arguments.insert(arguments.end(), {"--queries-per-connection", "10"});
  }
  const run_result r = run_cli(files, server.port(), arguments);
  EXPECT_EQ(r.responses_received, 100u);
  EXPECT_EQ(server.sources(), (std::set<std::string>{"127.0.0.3", "127.0.0.4"}));
}

INSTANTIATE_TEST_SUITE_P(cli_source_test, cli_source_test,
                         ::testing::Values(transport_kind::udp, transport_kind::tcp),
                         [](const ::testing::TestParamInfo<transport_kind>& param) {
                           return std::string(transport_name(param.param));
                         });

// A source address this machine does not have: refused before anything is sent (the kernel
// would refuse every client's bind), naming the flag and the address, with status 2; also
// when only some addresses of the list are the machine's.
class cli_bad_source_test : public ::testing::TestWithParam<transport_kind> {};

TEST_P(cli_bad_source_test, an_address_not_on_this_machine_is_refused_before_anything_is_sent) {
  hostile_options options;
  options.transport = GetParam();
  hostile_server server(options, answer_all());
  for (const std::string sources : {"192.0.2.1", "127.0.0.1,127.0.0.2,192.0.2.1"}) {
    const process_result r =
        run_process(cli,
                    {"run", "--transport", std::string(transport_name(GetParam())), "--server",
                     fmt::format("127.0.0.1:{}", server.port()), "--count", "10", "--clients", "3",
                     "--timeout", "1", "--source", sources},
                    30s);
    EXPECT_FALSE(r.timed_out);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("--source: 192.0.2.1 is not an address of this machine"),
              std::string::npos)
        << r.err;
  }
  EXPECT_EQ(server.queries(), 0u);
  EXPECT_TRUE(server.sources().empty());
}

INSTANTIATE_TEST_SUITE_P(cli_source_test, cli_bad_source_test,
                         ::testing::Values(transport_kind::udp, transport_kind::tcp),
                         [](const ::testing::TestParamInfo<transport_kind>& param) {
                           return std::string(transport_name(param.param));
                         });

class cli_edns_test : public ::testing::TestWithParam<transport_kind> {};

TEST_P(cli_edns_test, every_query_carries_opt_with_the_payload_given) {
  const scratch files("cli-edns");
  const std::string transport(transport_name(GetParam()));
  hostile_options options;
  options.transport = GetParam();
  const std::string text = files.file("q.txt", "www.example.com A\nexample.org AAAA\n");
  struct variant {
    std::vector<std::string> arguments;
    bool opt;
    std::uint16_t payload;
    bool dnssec_ok;
  };
  const std::vector<variant> variants{
      {{}, false, 0, false},
      {{"--edns"}, true, 1232, false},
      {{"--edns", "--edns-payload", "1400"}, true, 1400, false},
      {{"--dnssec-ok", "--edns-payload", "4096"}, true, 4096, true},
      {{"--edns", "--edns-payload", "700", "--queries", text}, true, 700, false},
  };
  for (const variant& v : variants) {
    SCOPED_TRACE(fmt::format("{}", fmt::join(v.arguments, " ")));
    auto log = std::make_shared<query_log>();
    hostile_server server(options, recorded(log, answer_all()));
    std::vector<std::string> arguments{"--transport", transport};
    arguments.insert(arguments.end(), v.arguments.begin(), v.arguments.end());
    const run_result r = run_cli(files, server.port(), arguments);
    // Answered: the responder echoes the OPT record, within the payload size over UDP.
    EXPECT_EQ(r.responses_received, 100u);
    EXPECT_EQ(r.oversized, 0u);
    const std::vector<bytes> queries = log->queries();
    EXPECT_EQ(queries.size(), 100u);
    for (const bytes& query : queries) {
      const auto q = parse_query(query);
      ASSERT_TRUE(q);
      EXPECT_EQ(q->has_opt, v.opt) << q->name;
      EXPECT_EQ(q->additional, v.opt ? 1 : 0) << q->name;
      if (!v.opt) continue;
      EXPECT_EQ(q->opt_payload, v.payload) << q->name;
      EXPECT_EQ(q->dnssec_ok, v.dnssec_ok) << q->name;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(cli_edns_test, cli_edns_test,
                         ::testing::Values(transport_kind::udp, transport_kind::tcp),
                         [](const ::testing::TestParamInfo<transport_kind>& param) {
                           return std::string(transport_name(param.param));
                         });

TEST(cli_edns_test, a_payload_size_out_of_range_is_a_usage_error) {
  expect_refused({"run", "--server", "127.0.0.1:9", "--edns", "--edns-payload", "511"},
                 "--edns-payload");
  expect_refused({"run", "--server", "127.0.0.1:9", "--edns", "--edns-payload", "65536"},
                 "--edns-payload");
}

// ---- mpirun --------------------------------------------------------------------------------

#ifndef DNSTRANSPORT_HAVE_MPI
// A build without MPI started by mpirun (which puts the job's size in the environment) would
// run the whole load in every process: it refuses, and says why.
TEST(cli_mpi_test, a_build_without_mpi_refuses_to_run_under_mpirun) {
  ::setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  const process_result r = run_process(cli, {"run", "--duration", "0.1"});
  ::unsetenv("OMPI_COMM_WORLD_SIZE");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("started by mpirun as one of 2 processes, but this dnstransport was built "
                       "without MPI"),
            std::string::npos)
      << r.err;
}
#endif

// A run or search of another version of its format is refused by the reader of that format,
// which names the version this build reads (not taken for a sweep, as the schema's name was
// compared whole before).
TEST(cli_report_test, a_result_of_another_version_names_the_version_this_build_reads) {
  const scratch files("cli-report-version");
  const std::string run = files.file("run.json", R"({"schema": "dnstransport.run/2"})");
  expect_refused({"report", run},
                 "schema \"dnstransport.run/2\" is not the supported "
                 "\"dnstransport.run/1\"");
  const std::string search = files.file("search.json", R"({"schema": "dnstransport.search/9"})");
  expect_refused({"report", search}, "dnstransport.search/1");
}

// report A B --json: the comparison for scripts, each sweep under its label; refused with a
// single file, which is a result of its own already.
TEST(cli_report_test, a_comparison_is_written_as_json_and_one_file_is_refused) {
  const scratch files("cli-report-comparison");
  for (const char* name : {"unbound", "knot"}) {
    const process_result r =
        run_process(cli, {"sweep", "--transports", "udp", "--clients", "1", "--repeats", "1",
                          "--duration", "0.1", "--pause", "0", "--label", name, "--json",
                          files.path(fmt::format("{}.json", name)), "--quiet"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  const std::string unbound = files.path("unbound.json");
  const std::string out = files.path("compared.json");
  const process_result r =
      run_process(cli, {"report", unbound, files.path("knot.json"), "--quiet", "--json", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(out);
  const std::string text{std::istreambuf_iterator<char>(in), {}};
  const auto document = boost::json::parse(text).as_object();
  EXPECT_EQ(document.at("schema").as_string(), comparison_schema);
  const auto& sweeps = document.at("sweeps").as_array();
  ASSERT_EQ(sweeps.size(), 2u);
  EXPECT_EQ(sweeps[0].at("name").as_string(), "unbound");
  EXPECT_EQ(sweeps[1].at("name").as_string(), "knot");
  EXPECT_EQ(sweeps[0].at("points").as_array().size(), 1u);

  expect_refused({"report", unbound, "--json", out}, "--json");
}

}  // namespace
}  // namespace dnstransport::hostile

#endif  // DNSTRANSPORT_CLI_PATH
