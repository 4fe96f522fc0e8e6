#pragma once
/// \file
/// Numbers and counts as the tool writes them, in the tables, the reports and the messages
/// of the library and the CLI alike (lib/src/util/text.cpp).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dnstransport {

/// 1234567 -> "1,234,567".
std::string with_commas(std::uint64_t n);

/// Rounded to a whole number, with commas: 123456.7 -> "123,457", -1234 -> "-1,234".
std::string with_thousands(double value);

/// A count and its noun: counted(1, "client") is "1 client", counted(1000, "client")
/// "1,000 clients"; `many` where the plural is not the noun and an s: counted(2, "query",
/// "queries").
std::string counted(std::uint64_t n, std::string_view one, std::string_view many = {});

/// Items as a sentence lists them: "a", "a and b", "a, b and c"; "" for none.
std::string and_list(const std::vector<std::string>& items);

/// A duration in ns as a short human string with its unit ("812 ns", "1.42 ms", "2.0 s").
std::string format_duration(double nanoseconds);

}  // namespace dnstransport
