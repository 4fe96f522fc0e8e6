// Response parsing and classification: check_response against a fixed query (with and
// without EDNS, its OPT options read or not) and against a query cut from the input itself,
// add_edns_options on the input as a query, and skip_name at the start of the input and
// every early offset.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <vector>

#include <dnstransport/message.hpp>

#include "fuzz_check.hpp"

using namespace dnstransport;

namespace {

void check(std::span<const std::uint8_t> response, std::span<const std::uint8_t> query,
           std::uint16_t id) {
  const response_summary s = check_response(response, query, id);
  FUZZ_CHECK(static_cast<unsigned>(s.verdict) <=
             static_cast<unsigned>(response_verdict::malformed));
  FUZZ_CHECK(!verdict_name(s.verdict).empty());
  if (response.size() < dns_header_size) FUZZ_CHECK(s.verdict == response_verdict::too_short);
  if (response.size() >= 2) FUZZ_CHECK(s.id == read_id(response.data()));
  if (s.verdict == response_verdict::ok) FUZZ_CHECK(s.id == id && s.rcode < 16);
  FUZZ_CHECK(!s.keepalive && !s.padded);  // read only when asked
  // Reading the OPT record's options changes nothing but what they say, or finds them
  // malformed (in the record walk, which also follows a wrong question).
  const response_summary e = check_response(response, query, id, true);
  FUZZ_CHECK(e.verdict == s.verdict || ((s.verdict == response_verdict::ok ||
                                         s.verdict == response_verdict::wrong_question) &&
                                        e.verdict == response_verdict::malformed));
}

// The input as a wire query given keepalive and padding: refused, or padded to the block
// with the options in a well-formed OPT record.
void check_add_options(std::span<const std::uint8_t> query) {
  edns_config edns;
  edns.options.push_back({edns_option_code::tcp_keepalive, {}});
  edns.padding_block = 128;
  std::vector<std::uint8_t> with;
  try {
    with = add_edns_options(query, edns);
  } catch (const std::invalid_argument&) {
    return;
  }
  FUZZ_CHECK(with.size() % 128 == 0 && with.size() <= 0xffff);
  with[2] |= 0x80;  // as its own echo: the OPT record and its options parse
  const response_summary s = check_response(with, with, read_id(with.data()), true);
  FUZZ_CHECK(s.verdict == response_verdict::ok || s.verdict == response_verdict::malformed);
  if (s.verdict == response_verdict::ok) FUZZ_CHECK(s.padded);
}

// A message checked against itself echoes its own question: it can be malformed, or (QR
// clear) not a response, but never a mismatch. A copy with QR set would not do: a name may
// point into the header (accepted, see message_test) and read the flags as a label.
void check_self(std::span<const std::uint8_t> message) {
  if (message.size() < dns_header_size) return;
  const response_verdict v = check_response(message, message, read_id(message.data())).verdict;
  if ((message[2] & 0x80) == 0) {
    FUZZ_CHECK(v == response_verdict::not_response);
  } else {
    FUZZ_CHECK(v == response_verdict::ok || v == response_verdict::malformed);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::vector<std::uint8_t> plain = encode_query("www.example.com", rr_type::a);
  static const std::vector<std::uint8_t> with_edns = [] {
    query_options options;
    options.edns.enabled = true;
    options.edns.options.push_back({10, {1, 2, 3, 4, 5, 6, 7, 8}});
    return encode_query("Mixed.Case.Example", rr_type::aaaa, options);
  }();
  const std::span<const std::uint8_t> input(data, size);
  const std::uint16_t id = size >= 2 ? read_id(data) : 0;

  check(input, plain, id);
  check(input, with_edns, static_cast<std::uint16_t>(id ^ 1));
  check_self(input);
  check_add_options(input);

  // The first octet says where the query ends and the response starts.
  if (size > 1) {
    const std::size_t query_size = std::min<std::size_t>(data[0], size - 1);
    const auto query = input.subspan(1, query_size);
    const auto response = input.subspan(1 + query_size);
    check(response, query, response.size() >= 2 ? read_id(response.data()) : 0);
    check(query, response, id);
  }

  for (std::size_t offset = 0; offset < std::min<std::size_t>(size + 1, 300); ++offset) {
    if (const auto end = skip_name(input, offset)) FUZZ_CHECK(*end > offset && *end <= size);
  }
  return 0;
}
