#include "transport/tls/verified_chains.hpp"

#include <algorithm>

namespace dnstransport::detail {

bool verified_chains::known(const digest& chain, clock::time_point now) {
  const std::lock_guard lock(mutex_);
  const auto it = std::find_if(entries_.begin(), entries_.end(),
                               [&](const entry& e) { return e.chain == chain; });
  if (it == entries_.end()) return false;
  if (now - it->verified_at >= max_age) {
    entries_.erase(it);
    return false;
  }
  ++counts_.reused;
  return true;
}

void verified_chains::add(const digest& chain, clock::time_point now) {
  const std::lock_guard lock(mutex_);
  const auto it = std::find_if(entries_.begin(), entries_.end(),
                               [&](const entry& e) { return e.chain == chain; });
  if (it != entries_.end()) {
    it->verified_at = now;
    return;
  }
  if (entries_.size() >= capacity) {
    // The oldest verdict goes first.
    entries_.erase(std::min_element(
        entries_.begin(), entries_.end(),
        [](const entry& a, const entry& b) { return a.verified_at < b.verified_at; }));
  }
  entries_.push_back({chain, now});
}

void verified_chains::count_verification() noexcept {
  const std::lock_guard lock(mutex_);
  ++counts_.verified;
}

verified_chains::counts verified_chains::totals() const {
  const std::lock_guard lock(mutex_);
  return counts_;
}

}  // namespace dnstransport::detail
