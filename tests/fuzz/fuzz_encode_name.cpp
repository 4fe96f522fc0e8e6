// Name encoding: encode_name on the input as presentation text. Whatever it accepts must
// be a legal wire name (labels of 1..63 octets, at most 255 in all, root last) that
// skip_name walks to its end, must come back unchanged through presentation form, and must
// make a query that its own echo answers.

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <dnstransport/message.hpp>

#include "fuzz_check.hpp"

using namespace dnstransport;

namespace {

// Wire name back to presentation form with RFC 1035 §5.1 escapes.
std::string presentation(const std::vector<std::uint8_t>& wire) {
  if (wire.size() == 1) return ".";
  std::string text;
  std::size_t pos = 0;
  while (wire[pos] != 0) {
    const std::size_t length = wire[pos];
    for (std::size_t i = pos + 1; i <= pos + length; ++i) {
      const std::uint8_t c = wire[i];
      if (c == '.' || c == '\\') {
        text += '\\';
        text += static_cast<char>(c);
      } else if (c > 0x20 && c < 0x7f) {
        text += static_cast<char>(c);
      } else {
        text += '\\';
        text += static_cast<char>('0' + c / 100);
        text += static_cast<char>('0' + c / 10 % 10);
        text += static_cast<char>('0' + c % 10);
      }
    }
    text += '.';
    pos += 1 + length;
  }
  return text;
}

void check_wire_name(const std::vector<std::uint8_t>& wire) {
  FUZZ_CHECK(!wire.empty() && wire.size() <= max_name_wire_size && wire.back() == 0);
  std::size_t pos = 0;
  while (wire[pos] != 0) {
    FUZZ_CHECK(wire[pos] <= max_label_size);
    pos += 1 + wire[pos];
    FUZZ_CHECK(pos < wire.size());
  }
  FUZZ_CHECK(pos + 1 == wire.size());
  const auto end = skip_name(wire, 0);
  FUZZ_CHECK(end && *end == wire.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view name(reinterpret_cast<const char*>(data), size);
  std::vector<std::uint8_t> wire;
  try {
    wire = encode_name(name);
  } catch (const std::invalid_argument&) {
    return 0;
  }
  check_wire_name(wire);
  FUZZ_CHECK(encode_name(presentation(wire)) == wire);

  const std::uint16_t type = size >= 2 ? static_cast<std::uint16_t>(data[0] << 8 | data[1]) : 1;
  const std::vector<std::uint8_t> query = encode_query(name, type);
  FUZZ_CHECK(query.size() == dns_header_size + wire.size() + 4);
  std::vector<std::uint8_t> echo = query;
  echo[2] |= 0x80;
  FUZZ_CHECK(check_response(echo, query, 0).verdict == response_verdict::ok);
  return 0;
}
