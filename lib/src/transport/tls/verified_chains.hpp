#pragma once
// Internal: certificate chains a TLS client context has verified (--verify), so that a
// handshake that receives the same chain again takes the verdict instead of verifying it
// again. A chain is known by the SHA-256 of its certificates' DER encodings in the order the
// server sent them; a chain that differs in any octet (another certificate, another key,
// another intermediate) is verified in full. Only successes are kept, each for at most
// `max_age` (a chain is verified again a minute later, so a certificate that expires in the
// middle of a run stops being accepted), at most `capacity` of them. The name checked and
// the trust anchors are the context's own and never change, so they are not in the key.
// Shared by the context's sessions on every worker thread.

#include <array>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <vector>

namespace dnstransport::detail {

class verified_chains {
 public:
  using digest = std::array<std::uint8_t, 32>;
  using clock = std::chrono::steady_clock;

  static constexpr std::chrono::seconds max_age{60};
  static constexpr std::size_t capacity = 64;

  // Whether `chain` was verified less than max_age before `now`; counts the reuse.
  bool known(const digest& chain, clock::time_point now = clock::now());
  // `chain` was verified in full and passed at `now`.
  void add(const digest& chain, clock::time_point now = clock::now());
  // A chain was verified in full (whatever the outcome).
  void count_verification() noexcept;

  struct counts {
    std::uint64_t verified = 0;  // verifications done in full
    std::uint64_t reused = 0;    // handshakes that took a verified chain's verdict
  };
  counts totals() const;

 private:
  struct entry {
    digest chain{};
    clock::time_point verified_at{};
  };
  mutable std::mutex mutex_;
  std::vector<entry> entries_;
  counts counts_;
};

}  // namespace dnstransport::detail
