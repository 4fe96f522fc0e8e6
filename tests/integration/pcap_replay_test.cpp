// Queries from a packet capture written by the test itself (UDP and TCP queries, IPv4 and
// IPv6, a VLAN tag, an answer, a packet cut by the snap length, NTP): replayed as a query
// list (--replay fast) and on the capture's clock (--replay timing), through the library and
// the CLI, against the built-in responder, with exact counts.
#include <dnstransport/pcap.hpp>

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <dnstransport/error.hpp>
#include <dnstransport/load.hpp>
#include <dnstransport/report.hpp>
#include <dnstransport/server.hpp>

#include "child_process.hpp"
#include "cli_runs.hpp"
#include "hostile_server.hpp"
#include "misbehaviour.hpp"
#include "pcap_writer.hpp"
#include "scratch_dir.hpp"

namespace dnstransport {
namespace {

using namespace std::chrono_literals;
using namespace test_pcap;

constexpr std::uint64_t ms = 1'000'000;
constexpr std::uint64_t capture_start = 1'700'000'000'000'000'000;

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
        capture_start + i * 100 * ms,
        ethernet(udp(a, server4, static_cast<std::uint16_t>(40000 + i), 53,
                     dns_query(fmt::format("a{}.example", i), 1, static_cast<std::uint16_t>(i)))));
  }
  for (unsigned i = 0; i < 3; ++i) {
    cap.add(
        capture_start + (50 + i * 200) * ms,
        ethernet(udp(b, server6, 41000, 53, dns_query(fmt::format("b{}.example", i), 28, 1)), {7}));
  }
  cap.add(capture_start + 150 * ms,
          ethernet(tcp(c, server4, 50000, 53, 1,
                       framed({dns_query("c0.example", 1, 1), dns_query("c1.example", 15, 2)}))));
  cap.add(capture_start + 350 * ms,
          ethernet(tcp(c, server4, 50000, 53, 100, framed({dns_query("c2.example", 16, 3)}))));
  cap.add(capture_start + 10 * ms,
          ethernet(udp(server4, a, 53, 40000, as_response(dns_query("a0.example", 1, 0)))));
  const bytes cut = ethernet(udp(a, server4, 40009, 53, dns_query("cut.example", 1, 9)));
  cap.add(capture_start + 20 * ms, cut, cut.size() - 4);
  cap.add(capture_start + 30 * ms, ethernet(udp(a, server4, 123, 123, bytes(48, 0x23))));
  return cap.data();
}

std::shared_ptr<const pcap_capture> read_test_capture() {
  return std::make_shared<const pcap_capture>(parse_pcap(test_capture(), "test.pcap"));
}

load_spec capture_load(std::shared_ptr<const pcap_capture> capture, std::uint16_t port) {
  load_spec spec;
  spec.target.port = port;
  spec.traffic.queries = std::shared_ptr<const query_set>(capture, &capture->queries);
  spec.traffic.capture = std::move(capture);
  spec.traffic.timeout_seconds = 5;
  spec.output.interval_seconds = 0;
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
  options.listen[transport_kind::udp] = endpoint{"127.0.0.1", 0};
  server responder(options);
  load_spec spec = capture_load(read_test_capture(), responder.port(transport_kind::udp));
  spec.traffic.clients = 2;
  spec.traffic.count = 60;
  const run_result r = run_load(spec);
  EXPECT_EQ(r.queries_sent, 60u);
  EXPECT_EQ(r.responses_received, 60u);
  EXPECT_EQ(queries_ended(r), r.queries_sent);
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

// Queries of the test capture scheduled before each 100 ms mark (offsets 0, 50, 100, 150,
// 150, 200, 250, 300, 350, 400, 450, 500 ms): none may be sent earlier.
constexpr std::array<std::uint64_t, 6> scheduled_before_mark = {2, 5, 7, 9, 11, 12};

run_result replay_timing(transport_kind transport, double speed, double duration = 0) {
  server_options options;
  options.listen[transport_kind::udp] = endpoint{"127.0.0.1", 0};
  options.listen[transport_kind::tcp] = endpoint{"127.0.0.1", 0};
  server responder(options);
  const auto capture = read_test_capture();
  load_spec spec =
      capture_load(capture, transport == transport_kind::udp ? responder.port(transport_kind::udp)
                                                             : responder.port(transport_kind::tcp));
  spec.target.transport = transport;
  spec.traffic.replay = replay_mode::timing;
  spec.traffic.replay_speed = speed;
  spec.traffic.clients = 3;
  spec.traffic.duration_seconds = duration;
  spec.output.interval_seconds = 0.1 / speed;
  return run_load(spec);
}

TEST(pcap_replay_test, timing_replay_sends_each_query_once_at_its_captured_time) {
  const auto started = std::chrono::steady_clock::now();
  const run_result r = replay_timing(transport_kind::udp, 1);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_EQ(r.arrivals, arrival_mode::replay);
  EXPECT_TRUE(r.open_loop());
  EXPECT_EQ(r.clients, 3u);
  EXPECT_EQ(r.queries_sent, 12u);
  EXPECT_EQ(r.queries_scheduled(), 12u);
  EXPECT_EQ(r.responses_received, 12u);
  EXPECT_EQ(queries_ended(r), r.queries_sent);
  ASSERT_TRUE(r.capture.has_value());
  EXPECT_EQ(r.capture->replay, replay_mode::timing);
  EXPECT_DOUBLE_EQ(r.capture->speed, 1);
  // The last query is due 0.5 s after the first.
  EXPECT_GE(r.elapsed_seconds, 0.5);
  EXPECT_GE(seconds, 0.5);
  EXPECT_LT(seconds, 5.0);
  // Never sent before its time: at each 100 ms mark, at most the queries due by then.
  std::uint64_t sent = 0;
  for (std::size_t row = 0; row < r.timeline.size() && row < scheduled_before_mark.size(); ++row) {
    sent += r.timeline[row].sent;
    EXPECT_LE(sent, scheduled_before_mark[row]) << "by " << (row + 1) * 100 << " ms";
  }
  EXPECT_NE(format_table(r).find("schedule                the capture's timing (open loop"),
            std::string::npos)
      << format_table(r);
}

TEST(pcap_replay_test, timing_replay_at_a_higher_speed_takes_less_time) {
  const run_result r = replay_timing(transport_kind::udp, 5);
  EXPECT_EQ(r.queries_sent, 12u);
  EXPECT_EQ(r.responses_received, 12u);
  EXPECT_GE(r.elapsed_seconds, 0.1);  // 0.5 s of capture, five times as fast
  // Under the 0.5 s that a replay at the capture's own speed cannot beat (its last query is
  // due then, and none leaves early: timing_replay_sends_each_query_once_at_its_captured_time),
  // so a replay that ignores the speed fails; a loaded machine may stall it 0.4 s (it was
  // 0.4 s in all, 0.3 s of stall).
  EXPECT_LT(r.elapsed_seconds, 0.5);
  std::uint64_t sent = 0;
  for (std::size_t row = 0; row < r.timeline.size() && row < scheduled_before_mark.size(); ++row) {
    sent += r.timeline[row].sent;
    EXPECT_LE(sent, scheduled_before_mark[row]) << "by " << (row + 1) * 20 << " ms";
  }
  EXPECT_NE(format_table(r).find("the capture's timing, 5 times as fast"), std::string::npos)
      << format_table(r);
}

TEST(pcap_replay_test, timing_replay_over_tcp_keeps_one_connection_per_client) {
  const run_result r = replay_timing(transport_kind::tcp, 2);
  EXPECT_EQ(r.queries_sent, 12u);
  EXPECT_EQ(r.responses_received, 12u);
  EXPECT_EQ(queries_ended(r), r.queries_sent);
  EXPECT_EQ(r.connections.opened, 3u);
  EXPECT_EQ(r.connections.answered, 12u);
  EXPECT_EQ(r.connections.failed, 0u);
}

TEST(pcap_replay_test, a_client_asking_again_waits_for_its_first_answer) {
  // One client asks the same question twice 10 ms apart, then another, of a server that
  // answers after 40 ms: the second query waits for the first answer (a client never has
  // one question in flight twice), the third does not wait behind it, and all are answered.
  const address a = ip("192.0.2.1");
  const address server4 = ip("192.0.2.53");
  capture cap(link_ethernet);
  cap.add(capture_start, ethernet(udp(a, server4, 40000, 53, dns_query("same.example", 1, 1))));
  cap.add(capture_start + 10 * ms,
          ethernet(udp(a, server4, 40001, 53, dns_query("same.example", 1, 2))));
  cap.add(capture_start + 20 * ms,
          ethernet(udp(a, server4, 40002, 53, dns_query("other.example", 1, 3))));
  hostile::hostile_server responder({}, hostile::answer_all(40ms));
  const auto capture = std::make_shared<const pcap_capture>(parse_pcap(cap.data(), "same.pcap"));
  load_spec spec = capture_load(capture, responder.port());
  spec.traffic.replay = replay_mode::timing;
  spec.traffic.clients = 1;
  spec.traffic.duration_seconds = 0;
  const run_result r = run_load(spec);
  EXPECT_EQ(r.queries_sent, 3u);
  EXPECT_EQ(r.responses_received, 3u);
  EXPECT_EQ(responder.queries(), 3u);
  EXPECT_EQ(r.not_sent_outstanding + r.not_sent_timeout, 0u);
  // The second query's latency runs from its captured time: it waited for the first answer
  // (40 ms after the start), then 40 ms for its own. The third did not wait.
  EXPECT_GE(r.latency.max(), 70'000'000u);
  EXPECT_LT(r.latency.min(), 60'000'000u);
}

TEST(pcap_replay_test, a_duration_shorter_than_the_capture_ends_the_replay) {
  // Offsets under 320 ms: 0, 50, 100, 150, 150, 200, 250, 300.
  const run_result r = replay_timing(transport_kind::udp, 1, 0.32);
  EXPECT_EQ(r.queries_scheduled(), 8u);
  EXPECT_EQ(r.queries_sent, 8u);
  EXPECT_EQ(r.responses_received, 8u);
}

TEST(pcap_replay_test, timing_replay_refuses_what_contradicts_the_capture) {
  const auto capture = read_test_capture();
  const auto refused = [&](auto change, std::string_view mention) {
    load_spec spec = capture_load(capture, 53);
    spec.traffic.replay = replay_mode::timing;
    spec.traffic.clients = 3;
    spec.traffic.duration_seconds = 0;
    change(spec);
    try {
      validate(spec);
      ADD_FAILURE() << "accepted; expected an error naming " << mention;
    } catch (const setup_error& e) {
      EXPECT_NE(std::string(e.what()).find(mention), std::string::npos) << e.what();
    }
  };
  refused([](load_spec& s) { s.traffic.clients = 8; }, "load_spec::traffic.clients 8");
  refused([](load_spec& s) { s.traffic.rate = 100; }, "load_spec::traffic.rate");
  refused([](load_spec& s) { s.traffic.count = 100; }, "load_spec::traffic.count");
  refused([](load_spec& s) { s.traffic.replay_speed = 0; }, "load_spec::traffic.replay_speed");
  refused([](load_spec& s) { s.traffic.capture = nullptr; }, "needs a packet capture");
  refused([](load_spec& s) { s.traffic.replay = replay_mode::fast; },
          "load_spec::traffic.duration_seconds");
  refused(
      [](load_spec& s) {
        s.traffic.replay = replay_mode::fast;
        s.traffic.duration_seconds = 1;
        s.traffic.rate = 100;
        s.traffic.arrivals = arrival_mode::replay;
      },
      "load_spec::traffic.replay timing");
}

#ifdef DNSTRANSPORT_CLI_PATH

using hostile::cli;

void expect_refused(const std::vector<std::string>& arguments, const std::string& mention) {
  hostile::expect_refused(arguments, mention, 30s);
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
  expect_refused({"run", "--queries", input, "--replay", "timing", "--clients", "5"},
                 "--clients 5");
  expect_refused({"run", "--queries", input, "--replay", "timing", "--speed", "0"}, "--speed");
  expect_refused({"run", "--queries", input, "--replay", "timing", "--rate", "100"}, "--rate");
  expect_refused({"run", "--queries", input, "--rate", "100", "--arrivals", "replay"},
                 "--replay timing");
}

TEST(pcap_replay_cli_test, run_replays_a_capture_with_its_timing) {
  const hostile::scratch files("cli-pcap-timing");
  const bytes data = test_capture();
  const std::string input = files.file("test.pcap", std::string(data.begin(), data.end()));
  const std::string json = files.path("result.json");
  const hostile::process_result r =
      hostile::run_process(cli,
                           {"run", "--queries", input, "--replay", "timing", "--speed", "4",
                            "--transport", "tcp", "--json", json},
                           60s);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("the capture's timing, 4 times as fast"), std::string::npos) << r.out;
  const run_result result = run_result_from_json(hostile::contents(json), json);
  EXPECT_EQ(result.clients, 3u);
  EXPECT_EQ(result.arrivals, arrival_mode::replay);
  EXPECT_EQ(result.queries_sent, 12u);
  EXPECT_EQ(result.responses_received, 12u);
  EXPECT_EQ(result.connections.opened, 3u);
  ASSERT_TRUE(result.capture.has_value());
  EXPECT_EQ(result.capture->replay, replay_mode::timing);
  EXPECT_DOUBLE_EQ(result.capture->speed, 4);
}

#endif  // DNSTRANSPORT_CLI_PATH

}  // namespace
}  // namespace dnstransport
