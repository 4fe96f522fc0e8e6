#pragma once
// Internal: output_settings::on_answer as the workers call it. The first exception it throws
// is kept for the load to end with, and no call follows it.

#include <atomic>
#include <exception>
#include <functional>
#include <mutex>
#include <utility>

#include <dnstransport/load.hpp>

namespace dnstransport::detail {

class answer_callback {
 public:
  explicit answer_callback(std::function<void(const answer_event&)> call)
      : call_(std::move(call)) {}

  // On a worker thread, for an answer counted in responses_received.
  void operator()(const answer_event& event) noexcept {
    if (failed_.load(std::memory_order_relaxed)) return;
    try {
      call_(event);
    } catch (...) {
      const std::lock_guard lock(mutex_);
      if (!error_) error_ = std::current_exception();
      failed_.store(true, std::memory_order_release);
    }
  }

  // The exception it threw, once it has (null until then).
  std::exception_ptr error() const {
    if (!failed_.load(std::memory_order_acquire)) return nullptr;
    const std::lock_guard lock(mutex_);
    return error_;
  }

 private:
  std::function<void(const answer_event&)> call_;
  std::atomic<bool> failed_{false};
  mutable std::mutex mutex_;
  std::exception_ptr error_;
};

}  // namespace dnstransport::detail
