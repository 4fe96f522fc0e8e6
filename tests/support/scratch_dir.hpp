#pragma once
/// \file
/// Test support: files for one test, in a directory of this process (ctest runs tests in
/// parallel), removed with the object.

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>

#include <gtest/gtest.h>

namespace dnstransport::hostile {

/// A directory path of this process's own under the test temporary directory (ctest runs
/// tests in parallel processes), not created: for a responder's certificates.
inline std::string scratch_directory(const char* name) {
  return (std::filesystem::path(::testing::TempDir()) /
          (std::string(name) + "-" + std::to_string(getpid())))
      .string();
}

/// The whole file at `path`; empty when it cannot be read.
inline std::string contents(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

class scratch {
 public:
  explicit scratch(const std::string& name = "dnstransport-test")
      : directory_(std::filesystem::path(::testing::TempDir()) /
                   (name + "-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(directory_);
    std::filesystem::create_directories(directory_);
  }
  ~scratch() {
    std::error_code ignored;
    std::filesystem::remove_all(directory_, ignored);
  }
  scratch(const scratch&) = delete;
  scratch& operator=(const scratch&) = delete;

  /// Writes `contents` to `name` in the directory; returns its path.
  std::string file(const std::string& name, const std::string& contents) const {
    const auto path = directory_ / name;
    std::ofstream(path, std::ios::binary) << contents;
    return path.string();
  }
  /// The path of `name` in the directory (not created).
  std::string path(const std::string& name) const { return (directory_ / name).string(); }

 private:
  std::filesystem::path directory_;
};

}  // namespace dnstransport::hostile
