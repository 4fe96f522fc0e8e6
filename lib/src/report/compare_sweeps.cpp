// comparison_of: the sweeps of a comparison named, a sweep of several targets split by
// target, and one with a distinct-sources axis by its values.
#include <filesystem>

#include <fmt/format.h>

#include <dnstransport/report.hpp>
#include <dnstransport/text.hpp>

namespace dnstransport {

namespace {

// One sweep per target of a sweep of several servers, each as if it had been run alone.
std::vector<sweep_result> split_by_target(const sweep_result& r) {
  std::vector<sweep_result> out;
  for (const auto& target : r.plan.targets) {
    sweep_result one = r;
    one.plan.targets.clear();
    one.plan.base.target.server = target.server;
    one.plan.ports = target.ports;
    one.plan.target_description = target.description;
    one.planned_points = r.planned_points / r.plan.targets.size();
    one.points.clear();
    for (const auto& p : r.points) {
      if (p.point.target != target.name) continue;
      one.points.push_back(p);
      one.points.back().point.target.clear();
    }
    derive_results(one);
    out.push_back(std::move(one));
  }
  return out;
}

// A sweep with a distinct-sources axis: one entry per value, each as if swept at that value
// alone, named by it ("unbound, 100 sources"), so that no table or plot, all keyed by
// transport and clients, mixes the values.
void split_by_distinct_sources(compared_sweep sweep, std::vector<compared_sweep>& into) {
  const std::vector<std::uint64_t> values = sweep.result.plan.distinct_sources;
  if (values.empty()) {
    into.push_back(std::move(sweep));
    return;
  }
  for (const std::uint64_t value : values) {
    sweep_result one = sweep.result;
    one.plan.distinct_sources.clear();
    one.planned_points = sweep.result.planned_points / values.size();
    one.points.clear();
    for (const auto& p : sweep.result.points) {
      if (p.point.distinct_sources != value) continue;
      one.points.push_back(p);
      one.points.back().point.distinct_sources = 0;
    }
    derive_results(one);
    into.push_back({fmt::format("{}, {}", sweep.name, counted(value, "source")), sweep.source,
                    std::move(one)});
  }
}

}  // namespace

std::vector<compared_sweep> comparison_of(
    const std::vector<std::pair<std::string, sweep_result>>& files) {
  std::vector<compared_sweep> sweeps;
  for (const auto& [source, result] : files) {
    std::string name = result.plan.base.output.label;
    if (name.empty()) name = std::filesystem::path(source).stem().string();
    if (result.plan.targets.empty()) {
      split_by_distinct_sources({name, source, result}, sweeps);
      continue;
    }
    // A sweep of several servers: one entry per server, named by its target (and by the
    // file too when several files are compared).
    const auto parts = split_by_target(result);
    for (std::size_t i = 0; i < parts.size(); ++i) {
      const std::string& target = result.plan.targets[i].name;
      split_by_distinct_sources(
          {files.size() == 1 ? target : name + "/" + target, source, parts[i]}, sweeps);
    }
  }
  // Two sweeps of one name (unlabelled files of one name in different directories, or one
  // label given twice) are told apart by their place in the list.
  for (std::size_t i = 0; i < sweeps.size(); ++i) {
    bool repeated = false;
    for (std::size_t j = 0; j < sweeps.size(); ++j) {
      repeated = repeated || (i != j && sweeps[j].name == sweeps[i].name);
    }
    if (!repeated) continue;
    const std::string name = sweeps[i].name;
    for (std::size_t j = i; j < sweeps.size(); ++j) {
      if (sweeps[j].name == name) {
        sweeps[j].name = fmt::format("{} #{}", name, j + 1);
      }
    }
  }
  return sweeps;
}

}  // namespace dnstransport
