// The responder's answer to a query read from any transport (build_answer, shared by the
// UDP, TCP, TLS, DoH and DoQ listeners): the first octet chooses the mode and what the
// listener answers to EDNS options, the rest is the query. A query shorter than a header or
// with QR set is dropped; every other one gets an answer, inside the room the listeners
// give it, with the query's id and QR set; an echo is the query itself; an answer that is
// not FORMERR, to a query whose name has no compression pointer, is the response to it
// (check_response), padded to the block when asked.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include <dnstransport/message.hpp>

#include "fuzz_check.hpp"
#include "responder/responder.hpp"

using namespace dnstransport;
using namespace dnstransport::detail;

namespace {

// Whether the question's name is written out in full (no compression pointer): only then
// must it read the same in the answer, which keeps the question and drops what follows.
bool question_name_is_plain(std::span<const std::uint8_t> query) {
  for (std::size_t at = dns_header_size; at < query.size();) {
    const std::uint8_t length = query[at];
    if (length == 0) return true;
    if ((length & 0xc0) != 0) return false;
    at += 1 + length;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const answer_mode mode = (data[0] & 1) != 0 ? answer_mode::echo : answer_mode::answer;
  answer_edns edns;
  edns.keepalive = (data[0] & 2) != 0;
  edns.keepalive_timeout = data[0];
  edns.padding_block = (data[0] & 4) != 0 ? 128 : (data[0] & 8) != 0 ? 468 : 0;
  const std::span<const std::uint8_t> query(data + 1, size - 1);
  // Exactly the room a listener gives, so that a write past it is a sanitizer report.
  std::vector<std::uint8_t> out(query.size() + answer_room(edns));
  const std::size_t n = build_answer(query, mode, out, edns);
  FUZZ_CHECK(n <= out.size());
  if (query.size() < dns_header_size || (query[2] & 0x80) != 0) {
    FUZZ_CHECK(n == 0);
    return 0;
  }
  FUZZ_CHECK(n >= dns_header_size);
  const std::span<const std::uint8_t> answer(out.data(), n);
  FUZZ_CHECK(read_id(answer.data()) == read_id(query.data()) && (answer[2] & 0x80) != 0);
  if (mode == answer_mode::echo) {
    FUZZ_CHECK(n == query.size() && std::memcmp(answer.data() + 3, query.data() + 3, n - 3) == 0);
    return 0;
  }
  // Opcode and RD as the query's; RA set.
  FUZZ_CHECK((answer[2] & 0x79) == (query[2] & 0x79) && (answer[3] & 0x80) != 0);
  const unsigned rcode = answer[3] & 0x0f;
  if (rcode == 1) {  // FORMERR: the header alone
    FUZZ_CHECK(n == dns_header_size);
    return 0;
  }
  FUZZ_CHECK(rcode == 0);
  const response_summary s = check_response(answer, query, read_id(query.data()), true);
  // A compressed question name may point past the question, into what the answer replaces:
  // then it reads as another name, or none.
  if (question_name_is_plain(query)) FUZZ_CHECK(s.verdict == response_verdict::ok);
  if (s.verdict == response_verdict::ok && s.padded && edns.padding_block != 0) {
    FUZZ_CHECK(n % edns.padding_block == 0);
  }
  return 0;
}
