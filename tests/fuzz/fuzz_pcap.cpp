// Packet captures: parse_pcap on any octets. Bad input must end in setup_error and nothing
// else; what parses must be consistent: one time and one client per query, every client a
// source, every query a standard query with id 0 that its own echo answers.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <dnstransport/error.hpp>
#include <dnstransport/pcap.hpp>

#include "fuzz_check.hpp"

using namespace dnstransport;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  pcap_capture capture;
  try {
    capture = parse_pcap(std::span(data, size), "fuzz.pcap");
  } catch (const setup_error&) {
    return 0;
  }
  const pcap_counts& n = capture.counts;
  FUZZ_CHECK(n.queries > 0 && n.queries == capture.queries.size());
  FUZZ_CHECK(capture.times_ns.size() == n.queries && capture.clients.size() == n.queries);
  FUZZ_CHECK(!capture.sources.empty() && capture.sources.size() <= n.queries);
  // Malformed counts DNS messages too, several per TCP segment; the rest are packets.
  FUZZ_CHECK(n.not_dns + n.fragments + n.tcp_without_data <= n.packets);
  for (std::size_t i = 0; i < capture.queries.size(); ++i) {
    FUZZ_CHECK(capture.clients[i] < capture.sources.size());
    const auto query = capture.queries[i];
    FUZZ_CHECK(read_id(query.data()) == 0 && (query[2] & 0xf8) == 0);
    std::vector<std::uint8_t> echo(query.begin(), query.end());
    echo[2] |= 0x80;
    FUZZ_CHECK(check_response(echo, query, 0).verdict == response_verdict::ok);
  }
  return 0;
}
