// The certificate chains a TLS client context verified: a chain is taken as verified only
// when it is the same, octet for octet (the same digest), and less than a minute ago; only
// successes are added; the oldest verdict makes room.
#include "transport/tls/verified_chains.hpp"

#include <gtest/gtest.h>

#include <chrono>

namespace dnstransport::detail {
namespace {

using namespace std::chrono_literals;

verified_chains::digest chain(std::uint8_t id) {
  verified_chains::digest d{};
  d[0] = id;
  d[31] = static_cast<std::uint8_t>(~id);
  return d;
}

TEST(verified_chains_test, only_the_same_chain_is_known_and_counted) {
  verified_chains chains;
  const auto t0 = verified_chains::clock::now();
  EXPECT_FALSE(chains.known(chain(1), t0));
  chains.count_verification();
  chains.add(chain(1), t0);
  EXPECT_TRUE(chains.known(chain(1), t0 + 1s));
  // Another certificate, key or intermediate: another digest, verified in full.
  EXPECT_FALSE(chains.known(chain(2), t0 + 1s));
  verified_chains::digest one_octet_off = chain(1);
  one_octet_off[15] ^= 1;
  EXPECT_FALSE(chains.known(one_octet_off, t0 + 1s));
  const auto totals = chains.totals();
  EXPECT_EQ(totals.verified, 1u);
  EXPECT_EQ(totals.reused, 1u);
}

TEST(verified_chains_test, a_verdict_lasts_a_minute) {
  verified_chains chains;
  const auto t0 = verified_chains::clock::now();
  chains.add(chain(1), t0);
  EXPECT_TRUE(chains.known(chain(1), t0 + verified_chains::max_age - 1ms));
  EXPECT_FALSE(chains.known(chain(1), t0 + verified_chains::max_age));
  // Gone until verified again.
  EXPECT_FALSE(chains.known(chain(1), t0 + 1ms));
  chains.add(chain(1), t0 + 2 * verified_chains::max_age);
  EXPECT_TRUE(chains.known(chain(1), t0 + 2 * verified_chains::max_age + 1s));
}

TEST(verified_chains_test, the_oldest_verdict_makes_room) {
  verified_chains chains;
  const auto t0 = verified_chains::clock::now();
  for (std::size_t i = 0; i < verified_chains::capacity; ++i) {
    chains.add(chain(static_cast<std::uint8_t>(i)), t0 + std::chrono::milliseconds(i));
  }
  chains.add(chain(200), t0 + 1s);
  EXPECT_FALSE(chains.known(chain(0), t0 + 2s));
  EXPECT_TRUE(chains.known(chain(1), t0 + 2s));
  EXPECT_TRUE(chains.known(chain(200), t0 + 2s));
}

}  // namespace
}  // namespace dnstransport::detail
