#pragma once
// Internal: the parts of a run's JSON (run_json.cpp puts them together), each to its object
// and back. A reader takes files written before a figure existed: what they lack is zero.

#include <optional>
#include <vector>

#include <boost/json.hpp>

#include <dnstransport/load.hpp>

#include "report/json_io.hpp"

namespace dnstransport::detail {

// Every described count of a group, under its name.
template <typename Counts>
void write_counts(boost::json::object& out, const Counts& counts) {
  for (const auto& d : count_descriptions<Counts>) out[d.name] = counts.*d.member;
}

// Every described count of a group; one the file does not have (written before it was
// counted) is zero.
template <typename Counts>
void read_counts(const boost::json::object& o, Counts& counts) {
  for (const auto& d : count_descriptions<Counts>) counts.*d.member = count_or_zero(o, d.name);
}

boost::json::object connection_stats_to_json(const connection_stats& c);
connection_stats connection_stats_from_json(const boost::json::object& o);

// The answers' EDNS options; present only in runs that asked for them.
boost::json::object edns_stats_to_json(const edns_stats& e, std::uint64_t answers);
edns_stats edns_stats_from_json(const boost::json::object& o);

boost::json::object early_data_to_json(const early_data_stats& e);
early_data_stats early_data_from_json(const boost::json::object& o);
// Results written before DoT and DoH had 0-RTT kept DoQ's figures in "quic".
early_data_stats early_data_of_older_doq(const boost::json::object& quic);

boost::json::object quic_stats_to_json(const quic_stats& q);
quic_stats quic_stats_from_json(const boost::json::object& o);

// With the figures per answer, which need the run's answers.
boost::json::object generator_stats_to_json(const run_result& r);
generator_stats generator_stats_from_json(const boost::json::object& o);

boost::json::object server_stats_to_json(const process_usage& s);
process_usage server_stats_from_json(const boost::json::object& o);

boost::json::array timeline_to_json(const std::vector<timeline_row>& rows);
std::vector<timeline_row> timeline_from_json(const boost::json::value& value);

// null when the run's queries did not come from a capture.
boost::json::value capture_to_json(const std::optional<capture_summary>& capture);
capture_summary capture_from_json(const boost::json::object& o);

}  // namespace dnstransport::detail
