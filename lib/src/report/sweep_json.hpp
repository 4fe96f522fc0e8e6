#pragma once
// Internal: the parts of the sweep JSON document shared by its writer and reader.

#include <boost/json.hpp>

#include <dnstransport/report.hpp>

namespace dnstransport::detail {

// "plan": the axes, repeats, timing, query set and every run option.
boost::json::object plan_to_json(const sweep_result& result);
// Reads "plan" back into result.plan, result.query_origin and result.query_count.
void plan_from_json(const boost::json::object& plan, sweep_result& result);

// "target" (server, ports per transport, description) and "machine".
boost::json::object target_to_json(const sweep_plan& plan);
void target_from_json(const boost::json::object& target, sweep_plan& plan);
// "targets": [{name, server, ports, description}], empty with one server.
boost::json::array targets_to_json(const sweep_plan& plan);
void targets_from_json(const boost::json::value& targets, sweep_plan& plan);
boost::json::object machine_to_json(const machine_info& machine);
machine_info machine_from_json(const boost::json::object& machine);

// Adds "transport", "tls_backend" ("" unless tls) and "label" (e.g. "tls-openssl").
void put_transport(boost::json::object& into, const sweep_transport& transport);
sweep_transport transport_from_json(const boost::json::object& from);

// "points" (each with its repeats, or only its summary), "percent_of_udp", "amortization",
// "costs", "warnings" and "findings": what the sweep measured and what follows from it.
void put_results(boost::json::object& into, const sweep_result& result, bool with_repeats);

}  // namespace dnstransport::detail
