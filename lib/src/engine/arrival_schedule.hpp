#pragma once
// Internal: one open-loop client's arrivals (arrival_schedule.cpp), part of client_base.

#include <cstdint>
#include <random>
#include <vector>

namespace dnstransport::detail {

struct run_plan;

// The arrival times of one open-loop client's queries, and those whose time came but that
// were not sent yet (at most as many as the client may have in flight). A replay schedule
// also says which query each arrival is; the others leave that to the query cycle.
class arrival_schedule {
 public:
  arrival_schedule(const run_plan& plan, unsigned index);

  // The next arrival (UINT64_MAX: none, a replay that is over) and, replaying, its query.
  std::uint64_t next() const noexcept { return next_ns_; }
  std::uint32_t next_query() const noexcept;
  void advance() noexcept;
  bool replays() const noexcept { return replay_ != nullptr; }

  struct arrival {
    std::uint64_t at = 0;     // scheduled time
    std::uint32_t query = 0;  // replay: the query; otherwise unused
  };
  // Queries waiting to be sent, oldest first.
  bool waiting_empty() const noexcept { return waiting_count_ == 0; }
  std::uint32_t waiting() const noexcept { return waiting_count_; }
  std::uint64_t oldest_waiting() const noexcept { return waiting_[waiting_head_].at; }
  const arrival& waiting_at(std::uint32_t i) const noexcept {
    return waiting_[(waiting_head_ + i) % waiting_.size()];
  }
  void push_back(arrival a) noexcept;
  void push_front(arrival a) noexcept;
  arrival pop_front() noexcept;
  // Takes the i-th waiting arrival out (a replayed query sent before older ones that wait).
  arrival take(std::uint32_t i) noexcept;

 private:
  double period_ns_;
  double base_ns_;
  bool poisson_;
  std::uint64_t k_ = 0;  // arrivals so far (constant)
  std::uint64_t next_ns_;
  std::mt19937_64 random_;
  std::exponential_distribution<double> gap_;
  const run_plan* replay_ = nullptr;  // set when replaying
  std::uint32_t replay_at_ = 0;       // index of the next arrival in the plan's replay lists
  std::uint32_t replay_end_ = 0;
  std::vector<arrival> waiting_;  // ring
  std::uint32_t waiting_head_ = 0;
  std::uint32_t waiting_count_ = 0;
};

}  // namespace dnstransport::detail
