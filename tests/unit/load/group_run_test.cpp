// A load shared by several processes: each member's share of the spec, and the members'
// results merged (sums, histograms, the missing member, the JSON that carries the ranks).
#include <dnstransport/group.hpp>

#include <gtest/gtest.h>

#include <map>

#include <dnstransport/error.hpp>
#include <dnstransport/load.hpp>
#include <dnstransport/report.hpp>

namespace dnstransport {
namespace {

TEST(share_of, deals_clients_rate_count_and_sources_as_evenly_as_the_totals_allow) {
  load_spec spec;
  spec.traffic.clients = 10;
  spec.traffic.rate = 1000;
  spec.traffic.count = 101;
  spec.generator.threads = 4;
  spec.connections.sources = {"127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"};
  spec.monitor.pids = {42};
  unsigned clients = 0;
  double rate = 0;
  std::uint64_t count = 0;
  std::vector<std::string> sources;
  for (unsigned r = 0; r < 3; ++r) {
    const load_spec mine = share_of(spec, r, 3);
    clients += mine.traffic.clients;
    rate += mine.traffic.rate;
    count += mine.traffic.count;
    sources.insert(sources.end(), mine.connections.sources.begin(), mine.connections.sources.end());
    EXPECT_EQ(mine.traffic.clients, r == 0 ? 4u : 3u);
    EXPECT_DOUBLE_EQ(mine.traffic.rate,
                     1000.0 * mine.traffic.clients / 10);  // the same pace per client
    EXPECT_EQ(mine.traffic.count, r < 2 ? 34u : 33u);
    EXPECT_EQ(mine.generator.threads, std::min(4u, mine.traffic.clients));
    // Only member 0 reads the server's processes.
    EXPECT_EQ(mine.monitor.pids.size(), r == 0 ? 1u : 0u);
  }
  EXPECT_EQ(clients, 10u);
  EXPECT_DOUBLE_EQ(rate, 1000);
  EXPECT_EQ(count, 101u);
  std::sort(sources.begin(), sources.end());
  EXPECT_EQ(sources, spec.connections.sources);  // each address used by exactly one member
  EXPECT_EQ(share_of(spec, 1, 3).connections.sources,
            (std::vector<std::string>{"127.0.0.2", "127.0.0.5"}));
}

TEST(share_of, keeps_every_source_and_the_per_client_rate_when_they_cannot_be_dealt) {
  load_spec spec;
  spec.traffic.clients = 4;
  spec.traffic.client_rate = 0.5;
  spec.connections.sources = {"127.0.0.1"};
  const load_spec mine = share_of(spec, 1, 2);
  EXPECT_EQ(mine.traffic.clients, 2u);
  EXPECT_EQ(mine.traffic.client_rate, 0.5);
  EXPECT_EQ(mine.traffic.rate, 0);
  EXPECT_EQ(mine.connections.sources, spec.connections.sources);
}

TEST(share_of, refuses_fewer_clients_than_members) {
  load_spec spec;
  spec.traffic.clients = 2;
  try {
    share_of(spec, 0, 3);
    FAIL() << "no error";
  } catch (const setup_error& e) {
    EXPECT_NE(
        std::string(e.what()).find("load_spec::traffic.clients 2 cannot be shared by 3 processes"),
        std::string::npos)
        << e.what();
  }
}

run_result member(unsigned clients, std::uint64_t answers, double elapsed, double cpu,
                  std::uint64_t latency_us) {
  run_result r;
  r.server = "127.0.0.1";
  r.port = 5300;
  r.transport = transport_kind::tcp;
  r.clients = clients;
  r.outstanding = 10;
  r.threads = 1;
  r.rate = 100.0 * clients;
  r.queries_sent = answers + 3;
  r.responses_received = answers;
  r.lost = 2;
  r.lost_on_close = 1;
  r.rcodes[0] = answers;
  r.elapsed_seconds = elapsed;
  r.qps = static_cast<double>(answers) / elapsed;
  r.client_cpu_seconds = cpu;
  r.max_thread_cpu_share = cpu / elapsed;
  for (std::uint64_t i = 0; i < answers; ++i) r.latency.record(latency_us * 1000);
  r.connections.opened = clients;
  r.connections.concurrent_mean = clients;
  r.connections.concurrent_max = clients;
  r.connections.failures["ECONNRESET"] = 1;
  r.handshakes_full = clients;
  r.timeline = {timeline_row{}, timeline_row{}};
  r.timeline[0].answered = answers / 2;
  r.timeline[1].answered = answers - answers / 2;
  r.warnings = {"same warning"};
  r.generator.wakeups = answers;
  r.generator.syscalls = 2 * answers;
  r.client_rss_bytes = 1 << 20;
  return r;
}

TEST(share_of, gives_each_member_the_client_subnets_after_the_lower_ranks) {
  load_spec spec;
  spec.traffic.clients = 10;
  spec.traffic.client_subnet.range = "10.0.0.0/8";
  spec.traffic.client_subnet.first = 5;
  EXPECT_EQ(share_of(spec, 0, 3).traffic.client_subnet.first, 5u);
  EXPECT_EQ(share_of(spec, 1, 3).traffic.client_subnet.first, 5u + 4u);  // rank 0 has 4
  EXPECT_EQ(share_of(spec, 2, 3).traffic.client_subnet.first, 5u + 4u + 3u);
  spec.traffic.client_subnet.mode = client_subnet_mode::per_query;
  spec.traffic.client_subnet.seed = 7;
  EXPECT_EQ(share_of(spec, 2, 3).traffic.client_subnet.seed, 9u);
  EXPECT_EQ(share_of(spec, 2, 3).traffic.client_subnet.first, 5u);
}

TEST(share_of, deals_the_distinct_sources_with_their_addresses) {
  load_spec spec;
  spec.traffic.clients = 3;
  spec.connections.proxy.version = proxy_protocol::v2;
  spec.connections.proxy.sources = {"10.9.0.0/24"};
  spec.connections.distinct_sources = 10;  // 10.9.0.1 to 10.9.0.10, every third to a member
  const load_spec second = share_of(spec, 1, 3);
  EXPECT_EQ(second.connections.distinct_sources, 3u);
  EXPECT_EQ(second.connections.proxy.sources,
            (std::vector<std::string>{"10.9.0.2", "10.9.0.5", "10.9.0.8"}));
  EXPECT_EQ(share_of(spec, 0, 3).connections.distinct_sources, 4u);
  EXPECT_EQ(share_of(spec, 0, 3).connections.proxy.sources.size(), 4u);
  spec.connections.distinct_sources = 2;
  try {
    share_of(spec, 0, 3);
    FAIL() << "2 addresses dealt to 3 members";
  } catch (const setup_error& e) {
    EXPECT_NE(std::string(e.what()).find("distinct_sources 2 cannot be shared by 3 processes"),
              std::string::npos)
        << e.what();
  }
}

TEST(merge_results, sums_client_subnets_up_to_the_ranges) {
  client_subnet_stats a;
  a.range = "2001:db8::/32";
  a.range_subnets = std::uint64_t{1} << 63;
  a.subnets = a.range_subnets;  // per query: all of them
  a.echoed = 3;
  a.scope_prefixes = {{0, 3}};
  client_subnet_stats b = a;
  b.scope_prefixes = {{0, 1}, {56, 2}};
  a += b;
  EXPECT_EQ(a.subnets, std::uint64_t{1} << 63);  // not wrapped round
  EXPECT_EQ(a.echoed, 6u);
  EXPECT_EQ(a.scope_prefixes, (std::map<unsigned, std::uint64_t>{{0, 4}, {56, 2}}));
  client_subnet_stats c;
  c.range_subnets = 256;
  c.subnets = 4;
  client_subnet_stats d = c;
  c += d;
  EXPECT_EQ(c.subnets, 8u);
}

TEST(merge_results, adds_the_counts_and_histograms_and_keeps_each_members_figures) {
  const run_result a = member(3, 1000, 2.0, 1.0, 100);
  const run_result b = member(2, 500, 2.5, 2.4, 300);
  const run_result m = merge_results({a, b}, {"alpha", "beta"});
  EXPECT_EQ(m.clients, 5u);
  EXPECT_DOUBLE_EQ(m.rate, 500);
  EXPECT_EQ(m.queries_sent, 1506u);
  EXPECT_EQ(m.responses_received, 1500u);
  EXPECT_EQ(m.lost, 4u);
  EXPECT_EQ(m.lost_on_close, 2u);
  EXPECT_EQ(m.rcodes[0], 1500u);
  EXPECT_EQ(m.latency.count(), 1500u);
  EXPECT_EQ(m.latency.min(), 100'000u);
  EXPECT_EQ(m.latency.max(), 300'000u);
  EXPECT_DOUBLE_EQ(m.elapsed_seconds, 2.5);  // the longest member's window
  EXPECT_DOUBLE_EQ(m.qps, 1500 / 2.5);
  EXPECT_DOUBLE_EQ(m.client_cpu_seconds, 3.4);
  EXPECT_DOUBLE_EQ(m.max_thread_cpu_share, 2.4 / 2.5);
  EXPECT_EQ(m.connections.opened, 5u);
  EXPECT_EQ(m.connections.concurrent_max, 5u);
  EXPECT_EQ(m.connections.failures.at("ECONNRESET"), 2u);
  EXPECT_EQ(m.handshakes_full, 5u);
  EXPECT_EQ(m.generator.wakeups, 1500u);
  EXPECT_EQ(m.generator.syscalls, 3000u);
  EXPECT_EQ(m.client_rss_bytes, 2u << 20);
  EXPECT_EQ(m.ranks[1].client_rss_bytes, 1u << 20);
  ASSERT_EQ(m.timeline.size(), 2u);
  EXPECT_EQ(m.timeline[0].answered + m.timeline[1].answered, 1500u);
  EXPECT_EQ(m.warnings, std::vector<std::string>{"same warning"});
  ASSERT_EQ(m.ranks.size(), 2u);
  EXPECT_EQ(m.ranks[1].rank, 1u);
  EXPECT_EQ(m.ranks[1].host, "beta");
  EXPECT_EQ(m.ranks[1].clients, 2u);
  EXPECT_EQ(m.ranks[1].responses_received, 500u);
  EXPECT_DOUBLE_EQ(m.ranks[1].qps, 200);
  EXPECT_TRUE(m.ranks[1].client_bound);  // 2.4 s of CPU in 2.5 s
  EXPECT_FALSE(m.ranks[0].client_bound);
  EXPECT_EQ(m.ranks_failed(), 0u);
}

TEST(merge_results, names_a_member_that_sent_nothing_and_counts_only_the_others) {
  const run_result a = member(3, 1000, 2.0, 1.0, 100);
  const run_result c = member(1, 10, 2.0, 0.1, 100);
  const run_result m = merge_results({a, std::nullopt, c}, {"alpha", "beta", "gamma"});
  EXPECT_EQ(m.responses_received, 1010u);
  EXPECT_EQ(m.clients, 4u);
  ASSERT_EQ(m.ranks.size(), 3u);
  EXPECT_FALSE(m.ranks[1].reported);
  EXPECT_EQ(m.ranks[1].host, "beta");
  EXPECT_EQ(m.ranks_missing(), 1u);
  EXPECT_EQ(m.ranks_failed(), 1u);
  EXPECT_EQ(m.warnings.back(),
            "rank 1 on beta sent no result (it failed, hung or was killed): the figures are "
            "those of the 2 other ranks");
}

TEST(merge_results, names_a_member_that_got_no_answer) {
  run_result none = member(2, 0, 2.0, 0.1, 100);
  none.connections.first_failure = "connect: Connection refused (ECONNREFUSED)";
  const run_result m = merge_results({member(2, 50, 2.0, 0.1, 100), none}, {"a", "b"});
  EXPECT_EQ(m.ranks_missing(), 0u);
  EXPECT_EQ(m.ranks_failed(), 1u);
  EXPECT_EQ(m.warnings.back(),
            "rank 1 on b got no answer: connect: Connection refused (ECONNREFUSED)");
}

TEST(merge_results, ranks_travel_in_the_run_json) {
  const run_result m = merge_results({member(3, 1000, 2.0, 1.0, 100), std::nullopt}, {"a", "b"});
  const run_result back = run_result_from_json(to_json(m), "test");
  ASSERT_EQ(back.ranks.size(), 2u);
  EXPECT_EQ(back.ranks[0].host, "a");
  EXPECT_EQ(back.ranks[0].responses_received, 1000u);
  EXPECT_EQ(back.ranks[0].clients, 3u);
  EXPECT_DOUBLE_EQ(back.ranks[0].client_cpu_seconds, 1.0);
  EXPECT_FALSE(back.ranks[1].reported);
  EXPECT_EQ(to_json(back), to_json(m));
  // A run of one process has no ranks, in the JSON either.
  EXPECT_EQ(to_json(member(1, 1, 1, 1, 1)).find("per_rank"), std::string::npos);
  const std::string table = format_table(m);
  EXPECT_NE(table.find("2 ranks (mpirun)"), std::string::npos) << table;
  EXPECT_NE(table.find("sent no result"), std::string::npos) << table;
}

}  // namespace
}  // namespace dnstransport
