#pragma once
// Internal: Boost.JSON conversions shared by the run and sweep documents.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json.hpp>

#include <dnstransport/histogram.hpp>
#include <dnstransport/load.hpp>
#include <dnstransport/search.hpp>

namespace dnstransport::detail {

boost::json::object histogram_to_json(const latency_histogram& histogram);
latency_histogram histogram_from_json(const boost::json::value& value);

boost::json::object run_result_to_json(const run_result& result);
// A search's criteria (search_spec without its load; arrivals included).
boost::json::object search_criteria_to_json(const search_spec& criteria);
search_spec search_criteria_from_json(const boost::json::object& object);
run_result run_result_from_json_value(const boost::json::value& value);

// Typed field access that throws std::invalid_argument naming the key.
double number_at(const boost::json::object& object, std::string_view key);
std::uint64_t count_at(const boost::json::object& object, std::string_view key);
const boost::json::object& object_at(const boost::json::object& object, std::string_view key);
std::string string_at(const boost::json::object& object, std::string_view key);
const boost::json::array& array_at(const boost::json::object& object, std::string_view key);
bool bool_at(const boost::json::object& object, std::string_view key);
// A "transport" field's kind: a registered transport, or one registered from the name alone
// (transport_of_record: a program's own transport); std::invalid_argument for a name no
// transport can have.
transport_kind read_transport(const std::string& name);

// The value at `key`; throws std::invalid_argument naming the key when it is missing.
const boost::json::value& at(const boost::json::object& object, std::string_view key);
// A count or number added after the first release: files written before it lack the key,
// which reads as 0.
std::uint64_t count_or_zero(const boost::json::object& object, std::string_view key);
double number_or_zero(const boost::json::object& object, std::string_view key);

// Counts by name (causes, codes) as an object, and back (nothing when the key is absent).
boost::json::object counts_to_json(const std::map<std::string, std::uint64_t>& counts);
void counts_from_json(const boost::json::object& object, std::string_view key,
                      std::map<std::string, std::uint64_t>& counts);

// Lists of integers (CPUs, process ids); ints_from_json gives an empty list when the key is
// absent (files written before it existed).
boost::json::array ints_to_json(const std::vector<int>& values);
std::vector<int> ints_from_json(const boost::json::object& object, std::string_view key);

// A measured double cut to 12 significant digits: Boost.JSON 1.81 does not parse 17-digit
// numbers back to the same double, and 12 digits are far beyond any measurement's precision.
double stable(double value);

// Pretty-printed with two-space indentation (Boost 1.81 has no pretty printer).
std::string pretty(const boost::json::value& value);

}  // namespace dnstransport::detail
