#include "responder/client_rate_limits.hpp"

#include <functional>

namespace dnstransport::detail {

client_rate_limits::client_rate_limits(double per_second, double burst_seconds)
    : per_second_(per_second), burst_seconds_(burst_seconds) {}

rate_limiter& client_rate_limits::of(const boost::asio::ip::address& client) {
  // The top 6 bits of the hash, mixed (Fibonacci hashing), pick the shard.
  const std::uint64_t hash = std::hash<boost::asio::ip::address>{}(client);
  shard& s = shards_[(hash * 0x9e3779b97f4a7c15ULL) >> 58];
  const std::scoped_lock hold(s.lock);
  // try_emplace builds the bucket in place (it holds an atomic: it cannot move).
  return s.buckets.try_emplace(client, per_second_, burst_seconds_).first->second;
}

}  // namespace dnstransport::detail
