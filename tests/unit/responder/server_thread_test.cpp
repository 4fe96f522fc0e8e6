// A responder thread's known cost (server_options::cost_answer_us, cost_handshake_us): CPU
// spent on the calling thread's own clock, per answer and per set-up, nothing when 0; a cost
// that is no cost is refused before anything is bound.
#include "responder/server_thread.hpp"

#include <gtest/gtest.h>

#include <ctime>
#include <limits>
#include <string>

#include <dnstransport/error.hpp>
#include <dnstransport/server.hpp>

namespace dnstransport::detail {
namespace {

std::uint64_t this_thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

// The thread CPU `spend` costs, in nanoseconds.
template <typename Spend>
std::uint64_t cpu_of(Spend spend) {
  const std::uint64_t before = this_thread_cpu_ns();
  spend();
  return this_thread_cpu_ns() - before;
}

TEST(server_thread_test, spends_the_cpu_asked_for_on_the_calling_threads_clock) {
  constexpr std::uint64_t asked = 20'000'000;  // 20 ms
  const std::uint64_t spent = cpu_of([] { spend_thread_cpu(asked); });
  EXPECT_GE(spent, asked);
  // It stops at the first reading past the amount: one clock reading more, not a multiple.
  EXPECT_LT(spent, 2 * asked);
}

TEST(server_thread_test, spends_the_known_cost_per_answer_and_per_set_up) {
  server_options options;
  options.cost_answer_us = 2000;
  options.cost_handshake_us = 5000;
  const server_thread thread(options, nullptr, nullptr);
  EXPECT_GE(cpu_of([&] { thread.spend_answer_cost(3); }), 6'000'000u);
  EXPECT_GE(cpu_of([&] { thread.spend_handshake_cost(); }), 5'000'000u);
}

TEST(server_thread_test, a_thread_without_a_known_cost_spends_nothing_more) {
  const server_options options;
  const server_thread thread(options, nullptr, nullptr);
  // Without a cost neither call reads the clock: far less than a millisecond, even under a
  // sanitizer.
  EXPECT_LT(cpu_of([&] {
              thread.spend_answer_cost(1000);
              thread.spend_handshake_cost();
            }),
            1'000'000u);
}

TEST(server_thread_test, a_negative_or_unknown_cost_is_a_setup_error) {
  for (const double bad : {-1.0, 2e6, std::numeric_limits<double>::quiet_NaN(),
                           std::numeric_limits<double>::infinity()}) {
    for (const bool per_answer : {true, false}) {
      server_options options;
      options.listen[transport_kind::udp] = endpoint{"127.0.0.1", 0};
      (per_answer ? options.cost_answer_us : options.cost_handshake_us) = bad;
      const std::string name =
          per_answer ? "server_options::cost_answer_us" : "server_options::cost_handshake_us";
      try {
        server responder(options);
        ADD_FAILURE() << name << " " << bad << " accepted";
      } catch (const setup_error& e) {
        EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
      }
    }
  }
}

}  // namespace
}  // namespace dnstransport::detail
