#pragma once
// Internal: reading a query file whole, shared by every format.

#include <cstdint>
#include <filesystem>
#include <vector>

namespace dnstransport::detail {

// The file's contents. Throws setup_error naming the file when it cannot be read.
std::vector<std::uint8_t> read_query_file(const std::filesystem::path& path);

}  // namespace dnstransport::detail
