#include <dnstransport/text.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace dnstransport {

namespace {

std::string grouped(std::string_view digits) {
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i != 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace

std::string with_commas(std::uint64_t n) {
  return grouped(std::to_string(n));
}

std::string with_thousands(double value) {
  const bool negative = value < 0;
  const std::string digits = fmt::format("{:.0f}", negative ? -value : value);
  std::string out = grouped(digits);
  if (negative && digits != "0") out.insert(out.begin(), '-');
  return out;
}

std::string counted(std::uint64_t n, std::string_view one, std::string_view many) {
  if (n == 1) return fmt::format("1 {}", one);
  if (many.empty()) return fmt::format("{} {}s", with_commas(n), one);
  return fmt::format("{} {}", with_commas(n), many);
}

std::string and_list(const std::vector<std::string>& items) {
  if (items.empty()) return {};
  if (items.size() == 1) return items.front();
  return fmt::format("{} and {}", fmt::join(items.begin(), items.end() - 1, ", "), items.back());
}

std::string format_duration(double ns) {
  if (ns < 1e3) return fmt::format("{:.0f} ns", ns);
  if (ns < 1e6) return fmt::format("{:.{}f} us", ns / 1e3, ns < 1e4 ? 2 : 1);
  if (ns < 1e9) return fmt::format("{:.{}f} ms", ns / 1e6, ns < 1e7 ? 2 : 1);
  return fmt::format("{:.2f} s", ns / 1e9);
}

}  // namespace dnstransport
