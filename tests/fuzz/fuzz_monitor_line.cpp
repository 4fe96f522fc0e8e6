// The lines `run --monitor-command` reads from a `dnstransport monitor` on another host:
// parse_monitor_line takes any text and either refuses it with a reason or gives a reading
// that format_monitor_line writes as a line which reads back to the same reading.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <dnstransport/monitor.hpp>

#include "fuzz_check.hpp"

using namespace dnstransport;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string error;
  const auto line = parse_monitor_line(text, error);
  if (!line) {
    FUZZ_CHECK(!error.empty());
    return 0;
  }
  FUZZ_CHECK(line->sample.pid > 0 && line->time >= 0);
  FUZZ_CHECK(line->sample.cpu_user_seconds >= 0 && line->sample.cpu_system_seconds >= 0);
  // The writer rounds (milliseconds, hundredths of a second): what it wrote reads back to
  // the same line, the times within that rounding (and a double's precision).
  const std::string written = format_monitor_line(*line);
  std::string again_error;
  const auto again = parse_monitor_line(written, again_error);
  FUZZ_CHECK(again.has_value());
  FUZZ_CHECK(again->exited == line->exited && again->sample.pid == line->sample.pid);
  const auto near = [](double a, double b, double rounding) {
    return std::fabs(a - b) <= rounding + 1e-15 * std::fabs(b);
  };
  FUZZ_CHECK(near(again->time, line->time, 0.0005));
  if (line->exited) return 0;
  const process_sample& a = again->sample;
  const process_sample& b = line->sample;
  FUZZ_CHECK(near(a.cpu_user_seconds, b.cpu_user_seconds, 0.005));
  FUZZ_CHECK(near(a.cpu_system_seconds, b.cpu_system_seconds, 0.005));
  FUZZ_CHECK(a.rss_bytes == b.rss_bytes && a.fds == b.fds && a.threads == b.threads);
  FUZZ_CHECK(again->tcp_connections == line->tcp_connections);
  return 0;
}
