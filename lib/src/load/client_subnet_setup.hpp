#pragma once
// Internal: EDNS Client Subnet (load_spec::traffic.client_subnet) made ready for the engine:
// the range read and checked, the option every query carries, and where each query's
// address is (engine/client_subnets.hpp).

#include <cstdint>
#include <string>
#include <vector>

#include <dnstransport/load.hpp>
#include <dnstransport/message.hpp>
#include <dnstransport/query_source.hpp>

#include "engine/client_subnets.hpp"
#include "engine/run_plan.hpp"

namespace dnstransport::detail {

/// The subnets `settings` asks for (address_at left empty). Throws setup_error naming
/// `setting` for a range that does not read, or a source prefix longer than the address or
/// shorter than the range's prefix.
client_subnets read_client_subnets(const client_subnet_settings& settings,
                                   const std::string& setting);

/// The option each query carries: the family, the source prefix, a scope of 0 and an address
/// of zeros (the clients write each query's own as they send it).
edns_option client_subnet_option(const client_subnets& subnets);

/// Where the client subnet option's ADDRESS is in each query of `queries` (0: the query has
/// none).
std::vector<std::uint16_t> client_subnet_addresses(const query_set& queries);

/// The SOURCE PREFIX-LENGTH `settings` gives each subnet: its own, or by default 24 (IPv4) or
/// 56 (IPv6), and never shorter than the range's prefix.
unsigned source_prefix_of(const client_subnet_settings& settings, bool v4, unsigned range_prefix);

/// What a run's plan and result hold of its client subnets: where each query's address is
/// (run_plan::client_subnet), and the settings the result reports; nothing when `subnets` is
/// off.
void plan_client_subnets(run_plan& plan, run_result& result, const load_spec& spec,
                         client_subnets subnets, const query_set& queries);

}  // namespace dnstransport::detail
