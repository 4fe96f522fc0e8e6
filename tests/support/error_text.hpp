#pragma once
/// \file
/// Test support: the message of the setup_error a call throws, to check that it names the
/// file, line or flag at fault.

#include <string>
#include <string_view>

#include <dnstransport/error.hpp>

namespace dnstransport::error_text {

/// What `action()` threw as a setup_error; "no error" when it threw none.
std::string setup_error_of(const auto& action) {
  try {
    action();
  } catch (const setup_error& e) {
    return e.what();
  }
  return "no error";
}

inline bool contains(const std::string& haystack, std::string_view needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace dnstransport::error_text
