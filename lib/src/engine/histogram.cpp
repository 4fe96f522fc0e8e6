#include <dnstransport/histogram.hpp>

#include <algorithm>
#include <bit>
#include <cmath>

namespace dnstransport {

namespace {

constexpr std::uint64_t largest_bucketed =
    (std::uint64_t{1} << latency_histogram::max_exponent) - 1;

// Buckets below 2 * sub_bucket_count have width 1, so the first two "powers of two" share
// shift 0; every further power of two doubles the width.
constexpr unsigned linear_limit_bits = latency_histogram::sub_bucket_bits + 1;

unsigned bucket_shift(unsigned index) noexcept {
  return std::max(index >> latency_histogram::sub_bucket_bits, 1u) - 1;
}

}  // namespace

latency_histogram::latency_histogram() : counts_(bucket_count) {}

unsigned latency_histogram::bucket_index(std::uint64_t nanoseconds) noexcept {
  const std::uint64_t v = std::min(nanoseconds, largest_bucketed);
  // OR-ing in the low bits makes every value below 2^8 take shift 0, which maps it to itself;
  // above, v >> shift keeps the leading 1 plus 7 sub-bucket bits, i.e. lies in [128, 256),
  // and each shift step adds one block of 128 buckets.
  const unsigned shift =
      static_cast<unsigned>(std::bit_width(v | ((std::uint64_t{1} << linear_limit_bits) - 1))) -
      linear_limit_bits;
  return (shift << sub_bucket_bits) + static_cast<unsigned>(v >> shift);
}

std::uint64_t latency_histogram::bucket_lowest(unsigned index) noexcept {
  const unsigned shift = bucket_shift(index);
  return std::uint64_t{index - (shift << sub_bucket_bits)} << shift;
}

std::uint64_t latency_histogram::bucket_highest(unsigned index) noexcept {
  return bucket_lowest(index) + (std::uint64_t{1} << bucket_shift(index)) - 1;
}

void latency_histogram::record_n(std::uint64_t nanoseconds, std::uint64_t count) noexcept {
  // Recording nothing must not move min/max.
  if (count == 0) return;
  counts_[bucket_index(nanoseconds)] += count;
  count_ += count;
  min_ = std::min(min_, nanoseconds);
  max_ = std::max(max_, nanoseconds);
  sum_ += static_cast<double>(nanoseconds) * static_cast<double>(count);
}

void latency_histogram::merge(const latency_histogram& other) noexcept {
  // An empty shard may carry a restored min of 0, which must not win.
  if (other.count_ == 0) return;
  for (unsigned i = 0; i < bucket_count; ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
  sum_ += other.sum_;
}

void latency_histogram::clear() noexcept {
  std::fill(counts_.begin(), counts_.end(), 0);
  count_ = 0;
  min_ = UINT64_MAX;
  max_ = 0;
  sum_ = 0;
}

double latency_histogram::mean() const noexcept {
  return count_ ? sum_ / static_cast<double>(count_) : 0;
}

std::uint64_t latency_histogram::percentile(double p) const noexcept {
  if (count_ == 0) return 0;
  // Written so that NaN also lands on min.
  if (!(p > 0)) return min_;
  if (p >= 100) return max_;
  // Multiplying before dividing keeps ranks such as 99.9 % of 10^6 exact.
  const auto rank = std::max<std::uint64_t>(
      static_cast<std::uint64_t>(std::ceil(p * static_cast<double>(count_) / 100)), 1);
  std::uint64_t cumulative = 0;
  unsigned i = 0;
  for (; i < bucket_count - 1; ++i) {
    cumulative += counts_[i];
    if (cumulative >= rank) break;
  }
  const std::uint64_t lowest = bucket_lowest(i);
  const std::uint64_t midpoint = lowest + (bucket_highest(i) - lowest) / 2;
  return std::clamp(midpoint, min_, max_);
}

void latency_histogram::for_each_bucket(
    const std::function<void(std::uint64_t, std::uint64_t, std::uint64_t)>& f) const {
  for (unsigned i = 0; i < bucket_count; ++i) {
    if (counts_[i] != 0) f(bucket_lowest(i), bucket_highest(i), counts_[i]);
  }
}

void latency_histogram::restore(std::uint64_t lowest, std::uint64_t count) noexcept {
  counts_[bucket_index(lowest)] += count;
  count_ += count;
}

void latency_histogram::restore_stats(std::uint64_t min, std::uint64_t max, double sum) noexcept {
  min_ = min;
  max_ = max;
  sum_ = sum;
}

}  // namespace dnstransport
