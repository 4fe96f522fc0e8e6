#pragma once
/// \file
/// The library's version.

#include <string_view>

namespace dnstransport {

/// Version of the library, "major.minor.patch".
std::string_view library_version() noexcept;

}  // namespace dnstransport
