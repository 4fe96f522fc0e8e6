#pragma once
/// \file
/// Latency histogram: log-linear buckets with bounded relative error, constant memory,
/// mergeable across worker threads and serializable bucket by bucket.

#include <array>
#include <cstdint>
#include <functional>
#include <vector>

namespace dnstransport {

/// Records durations in nanoseconds. Values are grouped per power of two into 128 linear
/// sub-buckets, so any reported percentile is within 1 % of the true value (relative error
/// <= 1/128). Range: 0 ns to 2^42 ns (about 73 minutes); larger values are clamped to the
/// top bucket while min/max stay exact. Recording is a few integer operations, no
/// allocation. Not thread-safe: each worker owns one and they are merged at the end.
class latency_histogram {
 public:
  /// log2 of sub_bucket_count: 7.
  static constexpr unsigned sub_bucket_bits = 7;
  /// Linear sub-buckets per power of two: 128.
  static constexpr unsigned sub_bucket_count = 1u << sub_bucket_bits;
  /// Values up to 2^max_exponent - 1 ns are bucketed without clamping.
  static constexpr unsigned max_exponent = 42;
  /// Total number of buckets.
  static constexpr unsigned bucket_count = sub_bucket_count * (max_exponent - sub_bucket_bits + 1);

  latency_histogram();

  /// Adds one observation.
  void record(std::uint64_t nanoseconds) noexcept { record_n(nanoseconds, 1); }

  /// Adds `count` observations of the same value.
  void record_n(std::uint64_t nanoseconds, std::uint64_t count) noexcept;

  /// Adds all observations of `other` (same bucket layout by construction).
  void merge(const latency_histogram& other) noexcept;

  /// Forgets every observation.
  void clear() noexcept;

  /// Number of observations.
  std::uint64_t count() const noexcept { return count_; }
  /// Smallest value recorded, exactly; 0 when empty.
  std::uint64_t min() const noexcept { return count_ ? min_ : 0; }
  /// Largest value recorded, exactly; 0 when empty.
  std::uint64_t max() const noexcept { return max_; }
  /// Exact arithmetic mean of the recorded values; 0 when empty.
  double mean() const noexcept;

  /// Value at percentile `p` (0..100): the smallest bucket value such that at least p % of
  /// observations are at or below it, reported as the bucket's midpoint and clamped to
  /// [min, max]. 0 when empty.
  std::uint64_t percentile(double p) const noexcept;

  /// Calls `f(lowest, highest, count)` for each non-empty bucket in increasing order;
  /// `lowest` and `highest` are the inclusive value range of the bucket in ns.
  void for_each_bucket(
      const std::function<void(std::uint64_t, std::uint64_t, std::uint64_t)>& f) const;

  /// Rebuilds a histogram from saved buckets, one call per bucket as for_each_bucket gave
  /// it: adds `count` observations to the bucket whose lowest value is `lowest`. Leaves min,
  /// max and sum alone (restore_stats).
  void restore(std::uint64_t lowest, std::uint64_t count) noexcept;
  /// Sets the exact statistics of a histogram rebuilt with restore, as saved from min(),
  /// max() and sum(). `sum` is the sum of all values in ns.
  void restore_stats(std::uint64_t min, std::uint64_t max, double sum) noexcept;

  /// Sum of all recorded values in ns (kept as double to avoid overflow on long runs).
  double sum() const noexcept { return sum_; }

  /// Bucket index of a value: exposed for tests.
  static unsigned bucket_index(std::uint64_t nanoseconds) noexcept;
  /// Lowest value of a bucket, inclusive: exposed for tests.
  static std::uint64_t bucket_lowest(unsigned index) noexcept;
  /// Highest value of a bucket, inclusive: exposed for tests.
  static std::uint64_t bucket_highest(unsigned index) noexcept;

 private:
  std::vector<std::uint64_t> counts_;
  std::uint64_t count_ = 0;
  std::uint64_t min_ = UINT64_MAX;
  std::uint64_t max_ = 0;
  double sum_ = 0;
};

}  // namespace dnstransport
