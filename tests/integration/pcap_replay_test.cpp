// Queries from a packet capture written by the test itself (UDP and TCP queries, IPv4 and
// IPv6, a VLAN tag, an answer, a packet cut by the snap length, NTP): replayed as a query
// list (--replay fast) and on the capture's clock (--replay timing), through the library and
// the CLI, against the built-in responder, with exact counts.
#include <dnstransport/pcap.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <dnstransport/load.hpp>
#include <dnstransport/report.hpp>
#include <dnstransport/server.hpp>

#include "child_process.hpp"
#include "pcap_writer.hpp"
#include "scratch_dir.hpp"

namespace dnstransport {
namespace {

using namespace std::chrono_literals;
using namespace test_pcap;

constexpr std::uint64_t ms = 1'000'000;
constexpr std::uint64_t t0 = 1'700'000'000'000'000'000;

// 12 queries from 3 clients over 0.5 s, among 14 packets: client 192.0.2.1 asks every
// 100 ms over UDP (6), 2001:db8::1 under a VLAN tag every 200 ms from 50 ms (3), 192.0.2.2
// over TCP, two queries in one segment at 150 ms and one at 350 ms (3); and an answer, a
// query cut short by the snap length and an NTP packet.
bytes test_capture() {
  const address a = ip("192.0.2.1");
  const address b = ip("2001:db8::1");
  const address c = ip("192.0.2.2");
  const address server4 = ip("192.0.2.53");
  const address server6 = ip("2001:db8::53");
  capture cap(link_ethernet);
  for (unsigned i = 0; i < 6; ++i) {
    cap.add(
        t0 + i * 100 * ms,
        ethernet(udp(a, server4, static_cast<std::uint16_t>(40000 + i), 53,
                     dns_query(fmt::format("a{}.example", i), 1, static_cast<std::uint16_t>(i)))));
  }
  for (unsigned i = 0; i < 3; ++i) {
    cap.add(
        t0 + (50 + i * 200) * ms,
        ethernet(udp(b, server6, 41000, 53, dns_query(fmt::format("b{}.example", i), 28, 1)), {7}));
  }
  cap.add(t0 + 150 * ms,
          ethernet(tcp(c, server4, 50000, 53, 1,
                       framed({dns_query("c0.example", 1, 1), dns_query("c1.example", 15, 2)}))));
  cap.add(t0 + 350 * ms,
          ethernet(tcp(c, server4, 50000, 53, 100, framed({dns_query("c2.example", 16, 3)}))));
  cap.add(t0 + 10 * ms,
          ethernet(udp(server4, a, 53, 40000, as_response(dns_query("a0.example", 1, 0)))));
  const bytes cut = ethernet(udp(a, server4, 40009, 53, dns_query("cut.example", 1, 9)));
  cap.add(t0 + 20 * ms, cut, cut.size() - 4);
  cap.add(t0 + 30 * ms, ethernet(udp(a, server4, 123, 123, bytes(48, 0x23))));
  return cap.data();
}

std::shared_ptr<const pcap_capture> read_test_capture() {
  return std::make_shared<const pcap_capture>(parse_pcap(test_capture(), "test.pcap"));
}

std::uint64_t accounted(const run_result& r) {
  return r.responses_received + r.truncated + r.oversized + r.lost + r.lost_on_close + r.malformed +
         r.mismatched + r.abandoned + r.http_failed + r.quic_failed;
}

load_spec capture_load(std::shared_ptr<const pcap_capture> capture, std::uint16_t port) {
  load_spec spec;
  spec.port = port;
  spec.queries = std::shared_ptr<const query_set>(capture, &capture->queries);
  spec.capture = std::move(capture);
  spec.timeout_seconds = 5;
  spec.interval_seconds = 0;
  return spec;
}

TEST(pcap_replay_test, the_test_capture_holds_what_it_was_written_with) {
  const auto capture = read_test_capture();
  EXPECT_EQ(capture->counts.packets, 14u);
  EXPECT_EQ(capture->counts.queries, 12u);
  EXPECT_EQ(capture->counts.responses, 1u);
  EXPECT_EQ(capture->counts.malformed, 1u);
  EXPECT_EQ(capture->counts.not_dns, 1u);
  EXPECT_EQ(capture->sources, (std::vector<std::string>{"192.0.2.1", "2001:db8::1", "192.0.2.2"}));
}

TEST(pcap_replay_test, fast_replay_cycles_the_captured_queries) {
  server_options options;
  options.udp = endpoint{"127.0.0.1", 0};
  server responder(options);
  load_spec spec = capture_load(read_test_capture(), responder.udp_port());
  spec.clients = 2;
  spec.count = 60;
  const run_result r = run_load(spec);
  EXPECT_EQ(r.queries_sent, 60u);
  EXPECT_EQ(r.responses_received, 60u);
  EXPECT_EQ(accounted(r), r.queries_sent);
  EXPECT_EQ(r.clients, 2u);
  EXPECT_EQ(r.arrivals, arrival_mode::closed);
  EXPECT_EQ(r.query_origin, "test.pcap");
  EXPECT_EQ(r.query_count_in_set, 12u);
  ASSERT_TRUE(r.capture.has_value());
  EXPECT_EQ(r.capture->clients, 3u);
  EXPECT_EQ(r.capture->counts.queries, 12u);
  EXPECT_EQ(r.capture->counts.packets, 14u);
  EXPECT_DOUBLE_EQ(r.capture->span_seconds, 0.5);
  EXPECT_EQ(r.capture->replay, replay_mode::fast);

  // The JSON keeps it, and a result without a capture has none.
  const run_result back = run_result_from_json(to_json(r), "r.json");
  ASSERT_TRUE(back.capture.has_value());
  EXPECT_EQ(back.capture->clients, 3u);
  EXPECT_EQ(back.capture->counts.queries, 12u);
  EXPECT_EQ(back.capture->counts.malformed, 1u);
  EXPECT_EQ(back.capture->replay, replay_mode::fast);
  EXPECT_NE(format_table(r).find("capture                 test.pcap: 12 queries from 3 clients "
                                 "over 0.500 s, replayed fast"),
            std::string::npos)
      << format_table(r);
}

#ifdef DNSTRANSPORT_CLI_PATH

const std::string cli = DNSTRANSPORT_CLI_PATH;

void expect_refused(const std::vector<std::string>& arguments, const std::string& mention) {
  const hostile::process_result r = hostile::run_process(cli, arguments, 30s);
  EXPECT_EQ(r.exit_code, 2) << fmt::format("{}", fmt::join(arguments, " ")) << "\n" << r.err;
  EXPECT_NE(r.err.find(mention), std::string::npos) << r.err;
}

TEST(pcap_replay_cli_test, queries_converts_a_capture_and_says_what_it_held) {
  const hostile::scratch files("cli-pcap-queries");
  const bytes data = test_capture();
  const std::string input = files.file("test.pcap", std::string(data.begin(), data.end()));
  const std::string output = files.path("test.raw");
  const hostile::process_result r = hostile::run_process(
      cli, {"queries", "--queries", input, "--format", "wire", "--out", output});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(input + ": 12 queries from 3 clients in 14 packets (skipped: 1 responses, "
                               "0 other DNS, 1 not DNS, 0 TCP without data, 0 fragments, 1 "
                               "malformed, 0 incomplete TCP messages)"),
            std::string::npos)
      << r.out;
  const query_set written = load_query_file(output);
  const auto capture = read_test_capture();
  ASSERT_EQ(written.size(), 12u);
  for (std::size_t i = 0; i < written.size(); ++i) {
    EXPECT_EQ(std::vector<std::uint8_t>(written[i].begin(), written[i].end()),
              std::vector<std::uint8_t>(capture->queries[i].begin(), capture->queries[i].end()));
  }
  // Port 5353 carries none of its queries.
  expect_refused(
      {"queries", "--queries", input, "--pcap-port", "5353", "--format", "wire", "--out", output},
      "no DNS queries found");
}

TEST(pcap_replay_cli_test, run_reports_the_capture_in_its_table_and_json) {
  const hostile::scratch files("cli-pcap-run");
  const bytes data = test_capture();
  const std::string input = files.file("test.pcap", std::string(data.begin(), data.end()));
  const std::string json = files.path("result.json");
  const hostile::process_result r = hostile::run_process(
      cli, {"run", "--queries", input, "--count", "40", "--clients", "2", "--json", json}, 60s);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("capture                 " + input +
                       ": 12 queries from 3 clients over 0.500 s, replayed fast"),
            std::string::npos)
      << r.out;
  const run_result result = run_result_from_json(hostile::contents(json), json);
  EXPECT_EQ(result.responses_received, 40u);
  ASSERT_TRUE(result.capture.has_value());
  EXPECT_EQ(result.capture->clients, 3u);
  EXPECT_EQ(result.capture->counts.queries, 12u);
}

TEST(pcap_replay_cli_test, capture_flags_are_refused_where_they_do_not_apply) {
  const hostile::scratch files("cli-pcap-refused");
  const bytes data = test_capture();
  const std::string input = files.file("test.pcap", std::string(data.begin(), data.end()));
  const std::string text = files.file("q.txt", "example.com A\n");
  expect_refused({"run", "--queries", text, "--pcap-port", "5353"}, "--pcap-port");
  expect_refused({"run", "--queries", text, "--replay", "fast"}, "--replay");
  expect_refused({"run", "--queries", input, "--replay", "slow"}, "--replay");
  expect_refused({"run", "--queries", input, "--speed", "2"}, "--speed");
  expect_refused({"run", "--queries", input, "--pcap-port", "0"}, "--pcap-port");
  expect_refused({"run", "--queries", files.path("absent.pcap")}, "absent.pcap");
  expect_refused({"sweep", "--queries", input, "--replay", "timing", "--out", files.path("s")},
                 "--replay timing");
}

#endif  // DNSTRANSPORT_CLI_PATH

}  // namespace
}  // namespace dnstransport
