#pragma once
/// \file
/// Results as data and as text: run_result to and from JSON (the source of truth), and the
/// human-readable table printed after a run.

#include <string>
#include <string_view>

#include <dnstransport/load.hpp>

namespace dnstransport {

/// Version of the library, "major.minor.patch".
std::string_view library_version() noexcept;

/// Schema tag written into every run JSON document.
inline constexpr std::string_view run_schema = "dnstransport.run/1";

/// The full result as a JSON document (pretty-printed, histograms included), with the keys
/// scripts rely on: queries_sent, responses_received, lost, qps, client_cpu_seconds,
/// latency_ns{min,mean,p50,p90,p99,p999,max,histogram}, connections, handshakes, ...
std::string to_json(const run_result& result);

/// Reads a document written by to_json. Throws setup_error naming `source_name` when the
/// text is not JSON, not a run result, or of another schema version.
run_result run_result_from_json(std::string_view text, std::string_view source_name);

/// The table printed after a run: what was run, where every query went, throughput,
/// latency percentiles, client CPU cost, and connection figures for TCP/TLS.
std::string format_table(const run_result& result);

/// A duration in ns as a short human string with its unit ("812 ns", "1.42 ms", "2.0 s").
std::string format_duration(double nanoseconds);

}  // namespace dnstransport
