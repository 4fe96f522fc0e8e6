// DoQ stream data (RFC 9250, section 4.2: one message with its 2-octet length, then FIN): the
// doq_stream_reader fed a stream in chunks whose sizes the input's first octet chooses, FIN
// with the last chunk or alone after it (the second octet's low bit), against a straight
// judgement of the whole stream. Both must agree on the outcome and, for a message, on its
// octets; once decided, the reader ignores what follows.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "fuzz_check.hpp"
#include "message/doq_stream_reader.hpp"

using dnstransport::detail::doq_stream_reader;
using outcome = doq_stream_reader::outcome;

namespace {

outcome judge(std::span<const std::uint8_t> stream) {
  if (stream.size() < 2) return outcome::too_short;
  const std::size_t expected = 2 + (std::size_t{stream[0]} << 8 | stream[1]);
  if (stream.size() > expected) return outcome::overrun;
  if (stream.size() < expected) return outcome::cut;
  return outcome::message;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  chunker chunks(data[0], 512);
  const bool fin_alone = (data[1] & 1) != 0;
  const std::span<const std::uint8_t> stream(data + 2, size - 2);
  const outcome expected = judge(stream);

  doq_stream_reader reader;
  outcome got = outcome::more;
  std::size_t pos = 0;
  do {
    const std::size_t n = std::min(chunks.next(), stream.size() - pos);
    const bool last = pos + n == stream.size();
    got = reader.add(stream.subspan(pos, n), last && !fin_alone);
    pos += n;
    FUZZ_CHECK(got == reader.state());
    if (got != outcome::more) break;
  } while (pos < stream.size());
  if (got == outcome::more) got = reader.add({}, true);  // FIN on its own
  FUZZ_CHECK(got == expected);
  if (got == outcome::message) {
    const auto message = reader.message();
    FUZZ_CHECK(std::equal(message.begin(), message.end(), stream.begin() + 2, stream.end()));
  } else {
    FUZZ_CHECK(reader.message().empty());
  }
  // Decided: more data changes nothing.
  FUZZ_CHECK(reader.add(stream, true) == expected);
  reader.reset();
  FUZZ_CHECK(reader.state() == outcome::more);
  return 0;
}
