// The public stats structs added up (operator+=), as the members of a load run by several
// processes are: counts summed, and the figures that are no counts by their own rule.
#include <dnstransport/load.hpp>

#include <gtest/gtest.h>

namespace dnstransport {
namespace {

TEST(stats_sum_test, connections_sum_counts_causes_and_concurrency_and_keep_the_first_failure) {
  connection_stats a;
  a.opened = 3;
  a.closed_idle = 1;
  a.goaway = 2;
  a.concurrent_mean = 2.5;
  a.concurrent_max = 3;
  a.certificates_verified = 1;
  a.certificates_reused = 9;
  a.failures["ECONNRESET"] = 1;
  connection_stats b = a;
  b.failures["tls_certificate"] = 4;
  b.first_failure = "b's failure";
  a += b;
  EXPECT_EQ(a.opened, 6u);
  EXPECT_EQ(a.closed_idle, 2u);
  EXPECT_EQ(a.goaway, 4u);
  EXPECT_DOUBLE_EQ(a.concurrent_mean, 5);
  EXPECT_EQ(a.concurrent_max, 6u);
  EXPECT_EQ(a.certificates_verified, 2u);
  EXPECT_EQ(a.certificates_reused, 18u);
  EXPECT_EQ(a.failures.at("ECONNRESET"), 2u);
  EXPECT_EQ(a.failures.at("tls_certificate"), 4u);
  EXPECT_EQ(a.first_failure, "b's failure");  // a had none
  connection_stats c;
  c.first_failure = "c's failure";
  a += c;
  EXPECT_EQ(a.first_failure, "b's failure");
}

TEST(stats_sum_test, edns_keepalive_range_covers_only_sides_with_keepalive_answers) {
  edns_stats a;
  a.keepalive_sent = true;
  a.padded_answers = 1;
  a.padded_sizes[468] = 1;
  edns_stats b;
  b.keepalive_answers = 5;
  b.keepalive_min_seconds = 10;
  b.keepalive_max_seconds = 30;
  b.padded_sizes[468] = 2;
  a += b;  // a had no keepalive answers: its zero range is not a minimum
  EXPECT_EQ(a.keepalive_answers, 5u);
  EXPECT_DOUBLE_EQ(a.keepalive_min_seconds, 10);
  EXPECT_DOUBLE_EQ(a.keepalive_max_seconds, 30);
  EXPECT_EQ(a.padded_answers, 1u);
  EXPECT_EQ(a.padded_sizes.at(468), 3u);
  EXPECT_TRUE(a.keepalive_sent);
  edns_stats c;
  c.keepalive_answers = 1;
  c.keepalive_min_seconds = 2;
  c.keepalive_max_seconds = 60;
  a += c;
  EXPECT_DOUBLE_EQ(a.keepalive_min_seconds, 2);
  EXPECT_DOUBLE_EQ(a.keepalive_max_seconds, 60);
  a += edns_stats{};  // no answers: the range stays
  EXPECT_DOUBLE_EQ(a.keepalive_min_seconds, 2);
  EXPECT_EQ(a.keepalive_answers, 6u);
}

TEST(stats_sum_test, quic_means_are_weighted_by_rtt_samples) {
  quic_stats a;
  a.retries = 1;
  a.packets_sent = 100;
  a.closes["DOQ_NO_ERROR"] = 2;
  a.rtt_samples = 1;
  a.smoothed_rtt_ms = 1;
  a.min_rtt_ms = 0.5;
  a.mean_cwnd_bytes = 1000;
  quic_stats b;
  b.packets_sent = 50;
  b.closes["DOQ_NO_ERROR"] = 1;
  b.rtt_samples = 3;
  b.smoothed_rtt_ms = 5;
  b.min_rtt_ms = 0.25;
  b.mean_cwnd_bytes = 3000;
  a += b;
  EXPECT_EQ(a.retries, 1u);
  EXPECT_EQ(a.packets_sent, 150u);
  EXPECT_EQ(a.closes.at("DOQ_NO_ERROR"), 3u);
  EXPECT_EQ(a.rtt_samples, 4u);
  EXPECT_DOUBLE_EQ(a.smoothed_rtt_ms, (1 + 3 * 5) / 4.0);
  EXPECT_DOUBLE_EQ(a.mean_cwnd_bytes, (1000 + 3 * 3000) / 4.0);
  EXPECT_DOUBLE_EQ(a.min_rtt_ms, 0.25);
  a += quic_stats{};  // no samples: neither the means nor the minimum move
  EXPECT_DOUBLE_EQ(a.smoothed_rtt_ms, 4);
  EXPECT_DOUBLE_EQ(a.min_rtt_ms, 0.25);
  quic_stats none;
  none += b;  // a side without samples takes the other's figures
  EXPECT_DOUBLE_EQ(none.min_rtt_ms, 0.25);
  EXPECT_DOUBLE_EQ(none.smoothed_rtt_ms, 5);
}

TEST(stats_sum_test, early_data_and_generator_counts_are_summed) {
  early_data_stats e{1, 2, 3, 4, 5};
  e += early_data_stats{10, 20, 30, 40, 50};
  EXPECT_EQ(e.offered, 11u);
  EXPECT_EQ(e.accepted, 22u);
  EXPECT_EQ(e.rejected, 33u);
  EXPECT_EQ(e.queries_in_early_data, 44u);
  EXPECT_EQ(e.queries_resent, 55u);
  generator_stats g{1, 2, 3};
  g += generator_stats{10, 20, 30};
  EXPECT_EQ(g.wakeups, 11u);
  EXPECT_EQ(g.syscalls, 22u);
  EXPECT_EQ(g.syscalls_would_block, 33u);
}

}  // namespace
}  // namespace dnstransport
