#pragma once
// Internal: the parts of a run's JSON (run_json.cpp puts them together), each to its object
// and back. A reader takes files written before a figure existed: what they lack is zero.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
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

// One member of a result struct as the JSON has it: its key, the member, and whether files
// written before it existed lack it (then it reads as its default).
template <typename S>
struct field_description {
  std::string_view key;
  std::variant<std::string S::*, bool S::*, std::uint16_t S::*, unsigned S::*, std::uint64_t S::*,
               double S::*>
      member;
  bool since_later = false;
};

// Every described field under its key, in the table's order (numbers with stable digits).
template <typename S>
void write_fields(boost::json::object& out, const S& s,
                  std::span<const field_description<S>> fields) {
  for (const auto& f : fields) {
    std::visit(
        [&](auto member) {
          using value = std::remove_cvref_t<decltype(s.*member)>;
          if constexpr (std::is_same_v<value, double>) {
            out[f.key] = stable(s.*member);
          } else {
            out[f.key] = s.*member;
          }
        },
        f.member);
  }
}

// Every described field; one the file lacks is an error, unless it came later.
template <typename S>
void read_fields(const boost::json::object& o, S& s, std::span<const field_description<S>> fields) {
  for (const auto& f : fields) {
    if (f.since_later && !o.contains(f.key)) continue;
    std::visit(
        [&](auto member) {
          using value = std::remove_cvref_t<decltype(s.*member)>;
          if constexpr (std::is_same_v<value, std::string>) {
            s.*member = string_at(o, f.key);
          } else if constexpr (std::is_same_v<value, bool>) {
            s.*member = bool_at(o, f.key);
          } else if constexpr (std::is_same_v<value, double>) {
            s.*member = number_at(o, f.key);
          } else {
            s.*member = static_cast<value>(count_at(o, f.key));
          }
        },
        f.member);
  }
}

// What a run was: its settings as the JSON has them (the transport, arrivals and query set
// are written apart).
extern const std::span<const field_description<run_result>> run_setting_fields;
// What a run measured as plain numbers.
extern const std::span<const field_description<run_result>> run_figure_fields;
// A rank's own figures under mpirun.
extern const std::span<const field_description<rank_result>> rank_fields;

boost::json::object connection_stats_to_json(const connection_stats& c);
connection_stats connection_stats_from_json(const boost::json::object& o);

// The answers' EDNS options; present only in runs that asked for them.
boost::json::object edns_stats_to_json(const edns_stats& e, std::uint64_t answers);
edns_stats edns_stats_from_json(const boost::json::object& o);
boost::json::object client_subnet_to_json(const client_subnet_stats& c, std::uint64_t answers);
client_subnet_stats client_subnet_from_json(const boost::json::object& o);

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
