// comparison_to_json: the comparison of several sweeps as one JSON document for scripts.
#include <boost/json.hpp>

#include <dnstransport/report.hpp>
#include <dnstransport/version.hpp>

#include "report/json_io.hpp"
#include "report/report_detail.hpp"
#include "report/sweep_json.hpp"

namespace dnstransport {

namespace json = boost::json;

std::string comparison_to_json(const std::vector<compared_sweep>& sweeps) {
  json::array compared;
  for (const auto& s : sweeps) {
    const sweep_result& r = s.result;
    json::object o{{"name", s.name},
                   {"source", s.source},
                   {"label", r.plan.base.output.label},
                   {"tool_version", r.tool_version},
                   {"started_at", r.started_at},
                   {"interrupted", r.interrupted},
                   {"target", detail::target_to_json(r.plan)},
                   {"targets", detail::targets_to_json(r.plan)},
                   {"machine", detail::machine_to_json(r.machine)}};
    detail::put_results(o, r, false);
    compared.emplace_back(std::move(o));
  }
  json::array findings;
  for (const auto& line : detail::comparison_findings(sweeps)) findings.emplace_back(line);
  json::array missing;
  for (const auto& line : missing_points(sweeps)) missing.emplace_back(line);
  const json::object document{{"schema", comparison_schema},
                              {"tool_version", library_version()},
                              {"sweeps", std::move(compared)},
                              {"findings", std::move(findings)},
                              {"missing", std::move(missing)}};
  return detail::pretty(document);
}

}  // namespace dnstransport
