// The table printed after a run: each section appears where it applies to the run (its
// transport, its loop, what was monitored), counts read in words ("1 client", "4 clients"),
// and the number helpers it and the CLI share.
#include <dnstransport/report.hpp>
#include <dnstransport/text.hpp>

#include <gtest/gtest.h>

#include <string>

#include <dnstransport/load.hpp>

namespace dnstransport {
namespace {

bool has(const std::string& table, std::string_view text) {
  return table.find(text) != std::string::npos;
}

run_result run_of(transport_kind transport, unsigned clients) {
  run_result r;
  r.server = "192.0.2.1";
  r.port = default_ports()[transport];
  r.transport = transport;
  r.clients = clients;
  r.outstanding = 10;
  r.threads = 1;
  r.elapsed_seconds = 2;
  r.queries_sent = 2000;
  r.responses_received = 1990;
  r.lost = 10;
  r.qps = 995;
  return r;
}

TEST(text_test, counts_and_numbers_in_words) {
  EXPECT_EQ(counted(0, "client"), "0 clients");
  EXPECT_EQ(counted(1, "client"), "1 client");
  EXPECT_EQ(counted(1234, "client"), "1,234 clients");
  EXPECT_EQ(counted(1, "query", "queries"), "1 query");
  EXPECT_EQ(counted(2, "query", "queries"), "2 queries");
  EXPECT_EQ(with_commas(0), "0");
  EXPECT_EQ(with_commas(999), "999");
  EXPECT_EQ(with_commas(1000), "1,000");
  EXPECT_EQ(with_commas(1234567), "1,234,567");
  EXPECT_EQ(with_thousands(123456.7), "123,457");
  EXPECT_EQ(with_thousands(-1234), "-1,234");
  EXPECT_EQ(with_thousands(-0.2), "0");
  EXPECT_EQ(format_duration(812), "812 ns");
  EXPECT_EQ(format_duration(1420), "1.42 us");
  EXPECT_EQ(format_duration(1.42e6), "1.42 ms");
  EXPECT_EQ(format_duration(25e6), "25.0 ms");
  EXPECT_EQ(format_duration(2e9), "2.00 s");
}

TEST(run_table_test, first_line_says_what_ran_in_words) {
  const std::string one = format_table(run_of(transport_kind::udp, 1));
  EXPECT_EQ(one.rfind("udp to 192.0.2.1:53, 1 client x 10 outstanding, 1 thread, 2.00 s\n", 0), 0u)
      << one;
  run_result tcp = run_of(transport_kind::tcp, 4);
  tcp.threads = 2;
  tcp.queries_per_connection = 1;
  EXPECT_TRUE(has(format_table(tcp),
                  "tcp to 192.0.2.1:53, 4 clients x 10 outstanding, 1 query "
                  "per connection, 2 threads"))
      << format_table(tcp);
  tcp.queries_per_connection = 0;
  EXPECT_TRUE(has(format_table(tcp), ", unlimited queries per connection, "));
  tcp.queries_per_connection = 100;
  tcp.interrupted = true;
  const std::string table = format_table(tcp);
  EXPECT_TRUE(has(table, ", 100 queries per connection, "));
  EXPECT_TRUE(has(table, "(interrupted)\n"));
}

TEST(run_table_test, connection_sections_only_where_the_transport_has_them) {
  const std::string udp = format_table(run_of(transport_kind::udp, 2));
  EXPECT_TRUE(has(udp, "  answered                1,990  (99.50 %)\n")) << udp;
  EXPECT_TRUE(has(udp, "  lost (timed out)        10  (0.50 %)\n"));
  EXPECT_FALSE(has(udp, "connections"));
  EXPECT_FALSE(has(udp, "lost on close"));
  EXPECT_FALSE(has(udp, "handshakes"));
  EXPECT_FALSE(has(udp, "QUIC"));

  const std::string tcp = format_table(run_of(transport_kind::tcp, 2));
  EXPECT_TRUE(has(tcp, "  connections             0 opened"));
  EXPECT_TRUE(has(tcp, "  connect latency"));
  EXPECT_FALSE(has(tcp, "handshakes"));

  run_result tls = run_of(transport_kind::tls, 2);
  tls.handshakes_full = 3;
  tls.handshakes_resumed = 1200;
  const std::string dot = format_table(tls);
  EXPECT_TRUE(has(dot, "  handshakes              3 full, 1,200 resumed"));
  EXPECT_TRUE(has(dot, "  connect latency"));

  // QUIC has no connect of its own, and its packets have a section.
  const std::string doq = format_table(run_of(transport_kind::doq, 2));
  EXPECT_TRUE(has(doq, "  handshakes"));
  EXPECT_FALSE(has(doq, "connect latency"));
  EXPECT_TRUE(has(doq, "  QUIC packets            0 sent, 0 received"));
}

// The notes name the settings that change what they describe as the caller names them (the
// CLI: its flags), by their paths without a namer; no mark is left in either.
TEST(run_table_test, notes_name_settings_as_the_caller_names_them) {
  run_result r = run_of(transport_kind::tcp, 2);
  r.truncated = 5;
  r.max_thread_cpu_share = 0.95;
  r.idle_seconds = 0.1;
  r.connections.closed_idle = 3;
  const std::string by_path = format_table(r);
  EXPECT_TRUE(has(by_path, "not answers (load_spec::traffic.tc_retry_tcp retries them)"))
      << by_path;
  EXPECT_TRUE(has(by_path, "(add load_spec::generator.threads or CPUs)")) << by_path;
  EXPECT_TRUE(has(by_path, "3 closed idle (load_spec::connections.idle_seconds 0.1 s)")) << by_path;
  const std::string named = format_table(r, [](std::string_view path) {
    return path == "load_spec::traffic.tc_retry_tcp"       ? std::string("--tc-retry tcp")
           : path == "load_spec::generator.threads"        ? std::string("--threads")
           : path == "load_spec::connections.idle_seconds" ? std::string("--idle")
                                                           : std::string(path);
  });
  EXPECT_TRUE(has(named, "not answers (--tc-retry tcp retries them)")) << named;
  EXPECT_TRUE(has(named, "(add --threads or CPUs)")) << named;
  EXPECT_TRUE(has(named, "3 closed idle (--idle 0.1 s)")) << named;
  EXPECT_FALSE(has(named, "\x1e"));
  EXPECT_FALSE(has(by_path, "\x1e"));
}

TEST(run_table_test, open_loop_shows_the_schedule_and_what_was_not_sent) {
  run_result r = run_of(transport_kind::udp, 2);
  r.arrivals = arrival_mode::poisson;
  r.rate = 1000.4;
  r.not_sent_outstanding = 500;
  const std::string table = format_table(r);
  EXPECT_TRUE(has(table, "  schedule                1,000 queries/s, poisson arrivals")) << table;
  EXPECT_TRUE(has(table, "  queries scheduled       2,500\n"));
  EXPECT_TRUE(has(table, "  not sent: outstanding   500  (20.00 %): the generator fell behind"));
  EXPECT_TRUE(has(table, "  send lag"));

  const std::string closed = format_table(run_of(transport_kind::udp, 2));
  EXPECT_FALSE(has(closed, "schedule"));
  EXPECT_FALSE(has(closed, "send lag"));
}

TEST(run_table_test, failures_are_named_and_never_answers) {
  run_result r = run_of(transport_kind::doh, 1);
  r.http_failed = 7;
  r.http_failures = {{"status_404", 5}, {"content_type", 2}};
  r.connections.failures = {{"connection refused", 3}};
  r.connections.first_failure = "connect: connection refused";
  r.connections.goaway = 1;
  const std::string table = format_table(r);
  EXPECT_TRUE(has(table,
                  "HTTP failures           7  (0.35 %): wrong content type 2, HTTP 404 5; "
                  "not answers"))
      << table;
  EXPECT_TRUE(has(table, "  errors                  connection refused 3\n"));
  EXPECT_TRUE(has(table, "  first error             connect: connection refused\n"));
  EXPECT_TRUE(has(table, "  GOAWAY from server      1 connection\n"));
}

TEST(run_table_test, server_and_ranks_only_when_measured) {
  run_result r = run_of(transport_kind::tcp, 8);
  EXPECT_FALSE(has(format_table(r), "server CPU"));
  r.server_usage.pids = {4242};
  r.server_usage.cpu_measured = true;
  r.server_usage.cpu_user_seconds = 0.5;
  r.server_usage.cpu_system_seconds = 0.25;
  r.server_usage.connections_max = 8;
  rank_result rank;
  rank.rank = 1;
  rank.host = "gen2";
  rank.reported = false;
  r.ranks = {rank};
  const std::string table = format_table(r);
  EXPECT_TRUE(has(table, "  server CPU              0.75 s (user 0.50, system 0.25)")) << table;
  EXPECT_TRUE(has(table, "  server                  pid 4242: RSS max"));
  EXPECT_TRUE(has(table, "at most 8 TCP connections on port 53"));
  EXPECT_TRUE(has(table, "  1 rank (mpirun)"));
  EXPECT_TRUE(has(table, "gen2             sent no result (failed, hung or killed)"));
}

}  // namespace
}  // namespace dnstransport
