// The readers of what `report FILE` reads: run, sweep and search results as JSON
// (run_result_from_json, sweep_result_from_json, search_result_from_json) and schema_of.
// A document that is not one of ours ends in setup_error and nothing else; one that reads
// is written again (to_json), and that text reads back to a result written the same way.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <dnstransport/error.hpp>
#include <dnstransport/report.hpp>

#include "fuzz_check.hpp"

using namespace dnstransport;

namespace {

template <typename Result>
void check_reader(std::string_view text,
                  Result (*read)(std::string_view text, std::string_view source_name)) {
  Result result;
  try {
    result = read(text, "fuzz.json");
  } catch (const setup_error&) {
    return;
  }
  const std::string written = to_json(result);
  Result again;
  try {
    again = read(written, "written.json");
  } catch (const setup_error& e) {
    std::fprintf(stderr, "written again, not read back: %s\n", e.what());
    FUZZ_CHECK(false);
  }
  FUZZ_CHECK(to_json(again) == written);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)schema_of(text);
  check_reader<run_result>(text, run_result_from_json);
  check_reader<sweep_result>(text, sweep_result_from_json);
  check_reader<search_result>(text, search_result_from_json);
  return 0;
}
