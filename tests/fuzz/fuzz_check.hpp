#pragma once
// Shared by the fuzz targets: a check that stops the fuzzer with a message when a property
// of the code under test does not hold (sanitizers catch the rest), and the chunk sizes in
// which a target feeds bytes to the code under test.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(condition)                                                               \
  do {                                                                                      \
    if (!(condition)) {                                                                     \
      std::fprintf(stderr, "%s:%d: property failed: %s\n", __FILE__, __LINE__, #condition); \
      std::abort();                                                                         \
    }                                                                                       \
  } while (false)

// Chunk sizes chosen by one fuzzer byte: one octet at a time, a fixed size, pseudo-random
// sizes up to `largest`, or as much as fits.
class chunker {
 public:
  chunker(std::uint8_t scheme, std::size_t largest)
      : mode_(scheme & 3), state_(scheme | 1u), largest_(largest) {}
  std::size_t next() {
    switch (mode_) {
      case 0:
        return 1;
      case 1:
        return (state_ >> 2) + 1;
      case 2:
        state_ = state_ * 1103515245u + 12345u;
        return (state_ >> 16) % largest_ + 1;
      default:
        return SIZE_MAX;
    }
  }

 private:
  unsigned mode_;
  std::uint32_t state_;
  std::size_t largest_;
};
