#include <dnstransport/cpus.hpp>

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <charconv>
#include <string>
#include <thread>

#include <fmt/format.h>

#include <dnstransport/error.hpp>

#include "util/cpu_pinning.hpp"

namespace dnstransport {

namespace {

int parse_cpu(std::string_view text, std::string_view whole, std::string_view flag) {
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size() ||
      value >= CPU_SETSIZE) {
    throw setup_error(fmt::format("{}: \"{}\" in \"{}\" is not a CPU number", flag, text, whole));
  }
  return static_cast<int>(value);
}

}  // namespace

std::vector<int> parse_cpu_list(std::string_view text, std::string_view flag) {
  std::vector<int> cpus;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = text.find(',', start);
    const std::string_view item = text.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (item.empty()) throw setup_error(fmt::format("{}: empty item in \"{}\"", flag, text));
    const auto dash = item.find('-');
    if (dash == std::string_view::npos) {
      cpus.push_back(parse_cpu(item, text, flag));
    } else {
      const int first = parse_cpu(item.substr(0, dash), text, flag);
      const int last = parse_cpu(item.substr(dash + 1), text, flag);
      if (last < first) throw setup_error(fmt::format("{}: range \"{}\" is backwards", flag, item));
      for (int c = first; c <= last; ++c) cpus.push_back(c);
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  check_cpus(cpus, flag);
  return cpus;
}

void check_cpus(const std::vector<int>& cpus, std::string_view flag) {
  // Every CPU the machine has counts, even one outside this process's affinity mask (taskset
  // around the tool is a user's choice; pinning to such a CPU is then refused and ignored).
  const unsigned machine =
      std::max(std::thread::hardware_concurrency(), detail::usable_cpu_count());
  for (const int cpu : cpus) {
    if (cpu < 0 || static_cast<unsigned>(cpu) >= machine) {
      throw setup_error(fmt::format("{}: CPU {} does not exist (this machine has CPUs 0-{})", flag,
                                    cpu, machine - 1));
    }
  }
}

namespace detail {

bool pin_current_thread(int cpu) noexcept {
  if (cpu < 0 || cpu >= CPU_SETSIZE) return false;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

unsigned usable_cpu_count() noexcept {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  const int n = CPU_COUNT(&set);
  return n > 0 ? static_cast<unsigned>(n) : 1;
}

}  // namespace detail

}  // namespace dnstransport
