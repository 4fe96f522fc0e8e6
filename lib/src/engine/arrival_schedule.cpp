// A client's arrivals in an open-loop run: each query's scheduled time (constant gaps,
// Poisson gaps, or a capture's times), in order, and the queries waiting for a slot.
#include "engine/arrival_schedule.hpp"

#include "engine/engine.hpp"
#include "engine/query_feed.hpp"

#include <algorithm>
#include <cmath>

namespace dnstransport::detail {

arrival_schedule::arrival_schedule(const run_plan& plan, unsigned index)
    : period_ns_(plan.rate_per_client > 0 ? 1e9 / plan.rate_per_client : 0),
      // The phases spread the clients evenly over one period, so a constant load is smooth
      // rather than one burst from every client at the same instant.
      base_ns_(static_cast<double>(plan.start_ns) +
               period_ns_ * static_cast<double>(index) / static_cast<double>(plan.clients)),
      poisson_(plan.arrivals == run_plan::schedule::poisson),
      next_ns_(static_cast<std::uint64_t>(base_ns_)),
      random_(0x9e3779b97f4a7c15ULL * (std::uint64_t{index} + 1)),
      gap_(period_ns_ > 0 ? 1.0 / period_ns_ : 1.0),
      waiting_(std::max(plan.outstanding, 1u)) {
  if (plan.arrivals == run_plan::schedule::replay) {
    replay_ = &plan;
    replay_at_ = plan.replay_first[index];
    replay_end_ = plan.replay_first[index + 1];
    next_ns_ =
        replay_at_ < replay_end_ ? plan.start_ns + plan.replay_offset_ns[replay_at_] : UINT64_MAX;
    return;
  }
  if (poisson_) next_ns_ = plan.start_ns + static_cast<std::uint64_t>(gap_(random_));
}

std::uint32_t arrival_schedule::next_query() const noexcept {
  return replay_ != nullptr && replay_at_ < replay_end_ ? replay_->replay_query[replay_at_] : 0;
}

void arrival_schedule::advance() noexcept {
  if (replay_ != nullptr) {
    ++replay_at_;
    next_ns_ = replay_at_ < replay_end_ ? replay_->start_ns + replay_->replay_offset_ns[replay_at_]
                                        : UINT64_MAX;
  } else if (poisson_) {
    next_ns_ += static_cast<std::uint64_t>(gap_(random_));
  } else {
    ++k_;
    next_ns_ = static_cast<std::uint64_t>(base_ns_ + period_ns_ * static_cast<double>(k_));
  }
}

void arrival_schedule::push_back(arrival a) noexcept {
  waiting_[(waiting_head_ + waiting_count_) % waiting_.size()] = a;
  ++waiting_count_;
}

void arrival_schedule::push_front(arrival a) noexcept {
  waiting_head_ =
      waiting_head_ == 0 ? static_cast<std::uint32_t>(waiting_.size() - 1) : waiting_head_ - 1;
  waiting_[waiting_head_] = a;
  ++waiting_count_;
}

arrival_schedule::arrival arrival_schedule::take(std::uint32_t i) noexcept {
  const arrival a = waiting_at(i);
  // The ones before it move up one place, keeping their order.
  for (; i > 0; --i) {
    waiting_[(waiting_head_ + i) % waiting_.size()] =
        waiting_[(waiting_head_ + i - 1) % waiting_.size()];
  }
  pop_front();
  return a;
}

arrival_schedule::arrival arrival_schedule::pop_front() noexcept {
  const arrival a = waiting_[waiting_head_];
  waiting_head_ = waiting_head_ + 1 == waiting_.size() ? 0 : waiting_head_ + 1;
  --waiting_count_;
  return a;
}

// The client's side of its schedule: the arrivals admitted as they come due (or not sent,
// counted, when the client has no room), and the waiting ones that time out.

void client_base::open_schedule() {
  if (plan().open_loop() && feeder_ == nullptr) {
    schedule_ = std::make_unique<arrival_schedule>(plan(), index_);
  }
}

std::uint64_t client_base::next_arrival_ns() const noexcept {
  return schedule_ && arrivals_open_ ? schedule_->next() : UINT64_MAX;
}

void client_base::admit_arrivals(std::uint64_t now) noexcept {
  if (!schedule_) return;
  while (arrivals_open_ && schedule_->next() <= now) {
    const std::uint64_t t = schedule_->next();
    if (t >= plan().send_end_ns || quota_ == 0) {
      arrivals_open_ = false;
      break;
    }
    const bool counted = t >= plan().measure_start_ns;
    if (counted && quota_ != UINT64_MAX) --quota_;
    // A replayed query may wait for its question to be answered; the others of the cycle
    // never wait for one.
    const std::uint32_t limit = schedule_->replays() ? plan().outstanding : question_room_;
    if (slots_.in_flight() + schedule_->waiting() < limit) {
      schedule_->push_back({t, schedule_->next_query()});
    } else if (counted) {
      owner_.roll_timeline(now);
      ++counts().not_sent_outstanding;
    }
    schedule_->advance();
  }
  if (quota_ == 0) arrivals_open_ = false;
}

void client_base::expire_waiting(std::uint64_t now) noexcept {
  if (plan().feed != nullptr) {
    counts().not_sent_timeout += plan().feed->expire_waiting(now, plan().timeout_ns);
    return;
  }
  if (!schedule_) return;
  while (!schedule_->waiting_empty() && schedule_->oldest_waiting() + plan().timeout_ns <= now) {
    if (schedule_->pop_front().at >= plan().measure_start_ns) ++counts().not_sent_timeout;
  }
}

}  // namespace dnstransport::detail
