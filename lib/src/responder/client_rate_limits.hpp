#pragma once
// Internal: the responder's limit per client address (server_options::rate_limit_per_client),
// one token bucket (rate_limiter.hpp) per address, shared by every server thread: a client's
// UDP queries and TCP connections may reach any thread (SO_REUSEPORT spreads them by port).
// A thread looks its clients up here once each (server_thread::client); the buckets stay
// until the responder is gone, about 100 octets each.

#include <algorithm>
#include <array>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include <boost/asio/ip/address.hpp>

#include "responder/rate_limiter.hpp"

namespace dnstransport::detail {

class client_rate_limits {
 public:
  // Each address at most `per_second` answers per second (> 0), with rate_limiter's burst.
  client_rate_limits(double per_second, double burst_seconds);

  // The bucket of `client`, made the first time it is asked for; it stays where it is.
  rate_limiter& of(const boost::asio::ip::address& client);

 private:
  // Threads that meet new clients at once mostly take different locks.
  struct shard {
    std::mutex lock;
    std::unordered_map<boost::asio::ip::address, rate_limiter> buckets;
  };
  static constexpr std::size_t shard_count = 64;  // of() takes the hash's top 6 bits

  double per_second_;
  double burst_seconds_;
  std::array<shard, shard_count> shards_;
};

// The limits one answer is under: the responder's (server_options::rate_limit) and its
// client's (rate_limit_per_client); either may be absent.
struct answer_limits {
  rate_limiter* all = nullptr;
  rate_limiter* client = nullptr;

  explicit operator bool() const noexcept { return all != nullptr || client != nullptr; }
  // Streams: takes the next token of each and returns when the later is due (at most now_ns
  // when both are there now), as rate_limiter::reserve.
  std::uint64_t reserve(std::uint64_t now_ns) const noexcept {
    std::uint64_t due = now_ns;
    if (all != nullptr) due = std::max(due, all->reserve(now_ns));
    if (client != nullptr) due = std::max(due, client->reserve(now_ns));
    return due;
  }
};

}  // namespace dnstransport::detail
