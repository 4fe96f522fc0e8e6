#include <dnstransport/histogram.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

namespace dnstransport {
namespace {

using bucket = std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>;

constexpr std::uint64_t largest_bucketed = (std::uint64_t{1} << 42) - 1;
constexpr double checked_percentiles[] = {0,  0.1, 1,  5,    10,   25,    50,     75,
                                          90, 95,  99, 99.5, 99.9, 99.99, 99.999, 100};

// The definition percentile() approximates: the smallest recorded value such that at least
// p % of the observations are at or below it.
std::uint64_t exact_percentile(const std::vector<std::uint64_t>& sorted, double p) {
  if (p <= 0) return sorted.front();
  const auto rank =
      static_cast<std::size_t>(std::ceil(p * static_cast<double>(sorted.size()) / 100));
  return sorted[std::max<std::size_t>(rank, 1) - 1];
}

std::vector<bucket> buckets_of(const latency_histogram& h) {
  std::vector<bucket> out;
  h.for_each_bucket([&](std::uint64_t lowest, std::uint64_t highest, std::uint64_t count) {
    out.emplace_back(lowest, highest, count);
  });
  return out;
}

// Records `values` and checks every percentile against the exact one within 1 %.
void expect_percentiles_within_one_percent(std::vector<std::uint64_t> values) {
  latency_histogram h;
  for (auto v : values) h.record(v);
  std::sort(values.begin(), values.end());
  for (double p : checked_percentiles) {
    const auto exact = static_cast<double>(exact_percentile(values, p));
    EXPECT_NEAR(static_cast<double>(h.percentile(p)), exact, exact / 100) << "p" << p;
  }
}

void expect_bucket_holds(std::uint64_t v) {
  const unsigned index = latency_histogram::bucket_index(v);
  ASSERT_LT(index, latency_histogram::bucket_count) << v;
  if (v > largest_bucketed) {
    EXPECT_EQ(index, latency_histogram::bucket_count - 1) << v;
    return;
  }
  const std::uint64_t lowest = latency_histogram::bucket_lowest(index);
  const std::uint64_t highest = latency_histogram::bucket_highest(index);
  EXPECT_LE(lowest, v);
  EXPECT_GE(highest, v);
  // Exact below 128; above, width / lowest <= 1/128.
  if (lowest < latency_histogram::sub_bucket_count) {
    EXPECT_EQ(lowest, highest) << v;
  } else {
    EXPECT_LE((highest - lowest + 1) * latency_histogram::sub_bucket_count, lowest) << v;
  }
}

TEST(histogram_test, layout_matches_documented_formula) {
  for (std::uint64_t v = 0; v < 128; ++v) EXPECT_EQ(latency_histogram::bucket_index(v), v);
  for (unsigned e = 7; e < 42; ++e) {
    for (std::uint64_t v :
         {std::uint64_t{1} << e, (std::uint64_t{3} << (e - 1)) + 1, (std::uint64_t{2} << e) - 1}) {
      EXPECT_EQ(latency_histogram::bucket_index(v), (e - 6) * 128 + ((v >> (e - 7)) & 127)) << v;
    }
  }
}

TEST(histogram_test, buckets_tile_the_range_without_gaps) {
  EXPECT_EQ(latency_histogram::bucket_lowest(0), 0u);
  for (unsigned i = 0; i + 1 < latency_histogram::bucket_count; ++i) {
    ASSERT_EQ(latency_histogram::bucket_lowest(i + 1), latency_histogram::bucket_highest(i) + 1)
        << i;
    ASSERT_EQ(latency_histogram::bucket_index(latency_histogram::bucket_lowest(i)), i);
    ASSERT_EQ(latency_histogram::bucket_index(latency_histogram::bucket_highest(i)), i);
  }
  EXPECT_EQ(latency_histogram::bucket_highest(latency_histogram::bucket_count - 1),
            largest_bucketed);
}

TEST(histogram_test, every_value_lands_in_a_bucket_containing_it) {
  for (std::uint64_t v = 0; v < (1u << 16); ++v) expect_bucket_holds(v);
  for (unsigned e = 0; e < 64; ++e) {
    const std::uint64_t power = std::uint64_t{1} << e;
    for (std::uint64_t v : {power - 1, power, power + 1, power + power / 2}) expect_bucket_holds(v);
  }
  expect_bucket_holds(UINT64_MAX);
  std::mt19937_64 random(7);
  for (int i = 0; i < 100000; ++i) expect_bucket_holds(random() >> (random() % 64));
}

TEST(histogram_test, empty_histogram_reports_zeros) {
  latency_histogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.min(), 0u);
  EXPECT_EQ(h.max(), 0u);
  EXPECT_EQ(h.mean(), 0.0);
  EXPECT_EQ(h.sum(), 0.0);
  for (double p : checked_percentiles) EXPECT_EQ(h.percentile(p), 0u);
  EXPECT_TRUE(buckets_of(h).empty());
}

TEST(histogram_test, min_max_mean_are_exact) {
  latency_histogram h;
  for (std::uint64_t v : {1000003u, 17u, 999999937u, 123457u, 5u}) h.record(v);
  EXPECT_EQ(h.count(), 5u);
  EXPECT_EQ(h.min(), 5u);
  EXPECT_EQ(h.max(), 999999937u);
  EXPECT_EQ(h.sum(), 1001123419.0);
  EXPECT_DOUBLE_EQ(h.mean(), 1001123419.0 / 5);
  EXPECT_EQ(h.percentile(0), 5u);
  EXPECT_EQ(h.percentile(100), 999999937u);
}

TEST(histogram_test, single_value_is_every_percentile) {
  latency_histogram h;
  h.record(1234567);
  for (double p : checked_percentiles) EXPECT_EQ(h.percentile(p), 1234567u) << p;
  EXPECT_EQ(h.mean(), 1234567.0);
}

TEST(histogram_test, uniform_distribution_percentiles_within_one_percent) {
  latency_histogram h;
  for (std::uint64_t v = 1; v <= 1000000; ++v) h.record(v);
  for (double p : {50.0, 90.0, 99.0, 99.9}) {
    const double exact = p * 10000;
    EXPECT_NEAR(static_cast<double>(h.percentile(p)), exact, exact / 100) << p;
  }
  EXPECT_EQ(h.mean(), 500000.5);
}

TEST(histogram_test, bimodal_distribution_percentiles_within_one_percent) {
  std::vector<std::uint64_t> values;
  // 90 % fast answers around 100 us, 10 % slow ones around 10 ms.
  for (std::uint64_t i = 0; i < 9000; ++i) values.push_back(100000 + i);
  for (std::uint64_t i = 0; i < 1000; ++i) values.push_back(10000000 + 10 * i);
  expect_percentiles_within_one_percent(values);

  latency_histogram h;
  for (auto v : values) h.record(v);
  EXPECT_LT(h.percentile(90), 110000u);
  EXPECT_GT(h.percentile(90.01), 9900000u);
}

TEST(histogram_test, exponential_distribution_percentiles_within_one_percent) {
  std::mt19937_64 random(42);
  std::exponential_distribution<double> latency(1.0 / 250000);
  std::vector<std::uint64_t> values;
  for (int i = 0; i < 100000; ++i) values.push_back(static_cast<std::uint64_t>(latency(random)));
  expect_percentiles_within_one_percent(values);
}

TEST(histogram_test, record_n_equals_repeated_record) {
  latency_histogram once;
  latency_histogram repeated;
  once.record_n(777777, 5);
  once.record_n(3, 2);
  once.record_n(1, 0);
  for (int i = 0; i < 5; ++i) repeated.record(777777);
  for (int i = 0; i < 2; ++i) repeated.record(3);
  EXPECT_EQ(once.count(), 7u);
  EXPECT_EQ(once.min(), 3u);
  EXPECT_EQ(once.sum(), repeated.sum());
  EXPECT_EQ(buckets_of(once), buckets_of(repeated));
}

TEST(histogram_test, huge_values_clamp_into_last_bucket_with_exact_max) {
  latency_histogram h;
  h.record(10);
  h.record(UINT64_MAX);
  h.record(std::uint64_t{1} << 50);
  EXPECT_EQ(h.max(), UINT64_MAX);
  EXPECT_EQ(h.min(), 10u);
  EXPECT_EQ(h.percentile(100), UINT64_MAX);
  const auto buckets = buckets_of(h);
  ASSERT_EQ(buckets.size(), 2u);
  EXPECT_EQ(buckets.back(),
            bucket(latency_histogram::bucket_lowest(latency_histogram::bucket_count - 1),
                   largest_bucketed, 2));
  // The top bucket is reported by its midpoint, not by the unbounded max.
  EXPECT_LE(h.percentile(90), largest_bucketed);
  EXPECT_GE(h.percentile(90),
            latency_histogram::bucket_lowest(latency_histogram::bucket_count - 1));
}

TEST(histogram_test, merge_of_shards_equals_recording_into_one) {
  std::mt19937_64 random(1);
  latency_histogram all;
  latency_histogram shard_a;
  latency_histogram shard_b;
  for (int i = 0; i < 50000; ++i) {
    const std::uint64_t v = random() % 20000000;
    all.record(v);
    (i % 3 == 0 ? shard_a : shard_b).record(v);
  }
  shard_a.merge(shard_b);
  shard_a.merge(latency_histogram());
  EXPECT_EQ(shard_a.count(), all.count());
  EXPECT_EQ(shard_a.min(), all.min());
  EXPECT_EQ(shard_a.max(), all.max());
  // Integer-valued sums stay exact in a double here, so the order of addition does not matter.
  EXPECT_EQ(shard_a.sum(), all.sum());
  for (double p = 0; p <= 100; p += 0.25) EXPECT_EQ(shard_a.percentile(p), all.percentile(p)) << p;
  EXPECT_EQ(buckets_of(shard_a), buckets_of(all));
}

TEST(histogram_test, merge_into_empty_copies_everything) {
  latency_histogram source;
  for (std::uint64_t v : {40u, 5000u, 600000u}) source.record(v);
  latency_histogram target;
  target.merge(source);
  EXPECT_EQ(target.min(), 40u);
  EXPECT_EQ(target.max(), 600000u);
  EXPECT_EQ(target.count(), 3u);
  EXPECT_EQ(buckets_of(target), buckets_of(source));
}

TEST(histogram_test, restore_round_trip_equals_original) {
  std::mt19937_64 random(3);
  std::exponential_distribution<double> latency(1.0 / 40000);
  latency_histogram original;
  for (int i = 0; i < 20000; ++i) original.record(static_cast<std::uint64_t>(latency(random)));
  original.record(UINT64_MAX);

  latency_histogram restored;
  original.for_each_bucket([&](std::uint64_t lowest, std::uint64_t, std::uint64_t count) {
    restored.restore(lowest, count);
  });
  restored.restore_stats(original.min(), original.max(), original.sum());

  EXPECT_EQ(restored.count(), original.count());
  EXPECT_EQ(restored.min(), original.min());
  EXPECT_EQ(restored.max(), original.max());
  EXPECT_EQ(restored.mean(), original.mean());
  for (double p = 0; p <= 100; p += 0.25) EXPECT_EQ(restored.percentile(p), original.percentile(p));
  EXPECT_EQ(buckets_of(restored), buckets_of(original));
}

TEST(histogram_test, restore_of_empty_stays_empty_after_merge) {
  latency_histogram empty;
  latency_histogram restored;
  restored.restore_stats(empty.min(), empty.max(), empty.sum());
  latency_histogram target;
  target.record(900);
  target.merge(restored);
  EXPECT_EQ(target.min(), 900u);
  EXPECT_EQ(target.count(), 1u);
}

TEST(histogram_test, clear_forgets_everything) {
  latency_histogram h;
  h.record(5);
  h.record(UINT64_MAX);
  h.clear();
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.max(), 0u);
  EXPECT_EQ(h.percentile(50), 0u);
  EXPECT_TRUE(buckets_of(h).empty());
  h.record(70);
  EXPECT_EQ(h.min(), 70u);
  EXPECT_EQ(h.max(), 70u);
}

TEST(histogram_test, percentiles_never_decrease) {
  std::mt19937_64 random(11);
  latency_histogram h;
  for (int i = 0; i < 10000; ++i) h.record(random() % 5000000);
  std::uint64_t previous = 0;
  for (double p = 0; p <= 100; p += 0.1) {
    const std::uint64_t current = h.percentile(p);
    EXPECT_GE(current, previous) << p;
    previous = current;
  }
}

}  // namespace
}  // namespace dnstransport
