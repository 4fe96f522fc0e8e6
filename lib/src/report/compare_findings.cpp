// What holds across the servers of a comparison, in words (comparison_findings).
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "report/report_detail.hpp"

namespace dnstransport::detail {

std::vector<std::string> comparison_findings(const std::vector<compared_sweep>& sweeps) {
  std::vector<std::string> out;
  if (sweeps.size() < 2) return out;
  auto shares = [&](std::size_t i, std::size_t k) {
    for (const auto& a : sweeps[i].result.plan.transports) {
      for (const auto& b : sweeps[k].result.plan.transports) {
        if (a.transport == b.transport) return true;
      }
    }
    return false;
  };
  std::vector<std::size_t> apart;  // servers that share no transport with any other
  for (std::size_t i = 0; i < sweeps.size(); ++i) {
    bool shared = false;
    for (std::size_t k = 0; k < sweeps.size(); ++k) shared = shared || (k != i && shares(i, k));
    if (!shared) apart.push_back(i);
  }
  if (apart.size() == sweeps.size()) {
    std::vector<std::string> each;
    for (const auto& s : sweeps) {
      each.push_back(fmt::format("{} over {}", s.name, transports_list(s.result)));
    }
    out.push_back(fmt::format(
        "No transport was measured on more than one server ({}): each server's figures and "
        "lines in the plots compare only with its own, never across servers.",
        fmt::join(each, "; ")));
    return out;
  }
  for (const std::size_t i : apart) {
    out.push_back(fmt::format(
        "{} was measured over {} alone, which no other server here was: its figures and lines "
        "in the plots compare only with each other, never with the other servers'.",
        sweeps[i].name, transports_list(sweeps[i].result)));
  }
  return out;
}

}  // namespace dnstransport::detail
