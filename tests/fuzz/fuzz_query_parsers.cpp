// Query files: parse_text_queries (options from the first octet) and parse_wire_queries on
// the rest. Bad input must end in setup_error and nothing else; what parses must be usable:
// every text query is answered by its own echo, and a wire stream is exactly its queries.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include <dnstransport/error.hpp>
#include <dnstransport/query_source.hpp>

#include "fuzz_check.hpp"

using namespace dnstransport;

namespace {

void check_text(std::string_view text, const query_options& options) {
  query_set queries;
  try {
    queries = parse_text_queries(text, "fuzz.txt", options);
  } catch (const setup_error&) {
    return;
  }
  FUZZ_CHECK(!queries.empty());
  FUZZ_CHECK(queries.origin() == "fuzz.txt");
  for (std::size_t i = 0; i < queries.size(); ++i) {
    const auto query = queries[i];
    FUZZ_CHECK(query.size() >= dns_header_size && query.size() <= queries.max_size());
    FUZZ_CHECK(read_id(query.data()) == 0);
    std::vector<std::uint8_t> echo(query.begin(), query.end());
    echo[2] |= 0x80;
    FUZZ_CHECK(check_response(echo, query, 0).verdict == response_verdict::ok);
  }
}

void check_wire(std::span<const std::uint8_t> data) {
  query_set queries;
  try {
    queries = parse_wire_queries(data, "fuzz.raw");
  } catch (const setup_error&) {
    return;
  }
  std::vector<std::uint8_t> again;
  for (std::size_t i = 0; i < queries.size(); ++i) {
    const auto query = queries[i];
    again.push_back(static_cast<std::uint8_t>(query.size() >> 8));
    again.push_back(static_cast<std::uint8_t>(query.size()));
    again.insert(again.end(), query.begin(), query.end());
  }
  FUZZ_CHECK(std::equal(again.begin(), again.end(), data.begin(), data.end()));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  query_options options;
  options.recursion_desired = (data[0] & 1) != 0;
  options.edns.enabled = (data[0] & 2) != 0;
  options.edns.dnssec_ok = (data[0] & 4) != 0;
  if ((data[0] & 8) != 0) options.edns.options.push_back({15, {data[0], 0}});
  if ((data[0] & 16) != 0) options.qclass = 3;  // CH
  const std::span<const std::uint8_t> rest(data + 1, size - 1);
  check_text(std::string_view(reinterpret_cast<const char*>(rest.data()), rest.size()), options);
  check_wire(rest);
  return 0;
}
