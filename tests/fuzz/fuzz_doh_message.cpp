// What DNS over HTTPS adds around a DNS message, read from the other side of a connection:
// the base64url of a GET request's `dns` parameter (the responder decodes it), the request
// target split at '?', the parameter found among others, and the Content-Type test. A
// decoded parameter re-encodes to the same text (the decoder takes canonical base64url
// only, padded or not), and any octets encode to a text that decodes back to them.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "transport/doh/doh_message.hpp"

using namespace dnstransport::detail;

namespace {

void check_decode(std::string_view text) {
  const auto decoded = base64url_decode(text);
  if (!decoded) return;
  std::string_view unpadded = text;
  while (!unpadded.empty() && unpadded.back() == '=') unpadded.remove_suffix(1);
  FUZZ_CHECK(base64url_encode(*decoded) == unpadded);
  // Padding, where there is some, completes the last group of four and no more.
  if (unpadded.size() != text.size()) {
    FUZZ_CHECK(unpadded.size() % 4 != 0 && text.size() == (unpadded.size() + 3) / 4 * 4);
  }
}

void check_encode(std::span<const std::uint8_t> octets) {
  const std::string text = base64url_encode(octets);
  FUZZ_CHECK(text.size() == (octets.size() * 4 + 2) / 3);
  const auto back = base64url_decode(text);
  FUZZ_CHECK(back && std::equal(back->begin(), back->end(), octets.begin(), octets.end()));
  std::string appended = "x";
  base64url_append(octets, appended);
  FUZZ_CHECK(appended == std::string("x") + text);
}

void check_target(std::string_view target) {
  const doh_target parts = split_doh_target(target);
  FUZZ_CHECK(parts.path.find('?') == std::string_view::npos);
  if (parts.path.size() == target.size()) {
    FUZZ_CHECK(parts.query.empty());
  } else {
    FUZZ_CHECK(parts.path.size() + 1 + parts.query.size() == target.size());
    FUZZ_CHECK(target[parts.path.size()] == '?');
  }
  if (const auto dns = doh_dns_parameter(parts.query)) {
    // A view into the query, after "dns=", up to the next '&'.
    FUZZ_CHECK(dns->data() >= parts.query.data() + 4 &&
               dns->data() + dns->size() <= parts.query.data() + parts.query.size());
    FUZZ_CHECK(std::string_view(dns->data() - 4, 4) == "dns=");
    FUZZ_CHECK(dns->find('&') == std::string_view::npos);
    check_decode(*dns);
  }
  (void)is_doh_media_type(target);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  check_decode(text);
  check_encode({data, size});
  check_target(text);
  return 0;
}
