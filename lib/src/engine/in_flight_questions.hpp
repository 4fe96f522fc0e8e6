#pragma once
// Internal: the questions one client has in flight. A client never keeps two queries with
// the same question in flight on one socket, so an answer carrying another query's id
// either matches nothing or fails the question check: a server that answers with a wrong id
// (any fixed offset, say) never gets an answer counted. Questions are numbered 0..n-1 per
// query set; for a set of up to `bitmap_limit` questions the client keeps one bit per
// question, for a larger set an open-addressing table sized for its `outstanding`. No
// allocation per query either way.

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

namespace dnstransport::detail {

class in_flight_questions {
 public:
  static constexpr std::uint32_t bitmap_limit = 16384;  // 2 KiB per client at most

  // At most `capacity` questions in flight, numbered below `questions`.
  in_flight_questions(std::uint32_t capacity, std::uint32_t questions)
      : bitmap_(questions <= bitmap_limit) {
    if (bitmap_) {
      words_.assign((questions + 63) / 64, 0);
    } else {
      keys_.assign(std::bit_ceil(std::max<std::uint32_t>(capacity, 1) * 2u), empty);
      mask_ = static_cast<std::uint32_t>(keys_.size() - 1);
    }
  }

  bool contains(std::uint32_t question) const noexcept {
    if (bitmap_) return (words_[question / 64] >> (question % 64) & 1u) != 0;
    for (std::uint32_t i = home(question);; i = (i + 1) & mask_) {
      if (keys_[i] == question) return true;
      if (keys_[i] == empty) return false;
    }
  }

  // Adds `question` unless it is there already; false if it was. The caller keeps at most
  // `capacity` questions in the set.
  bool insert(std::uint32_t question) noexcept {
    if (bitmap_) {
      std::uint64_t& word = words_[question / 64];
      const std::uint64_t bit = std::uint64_t{1} << (question % 64);
      if ((word & bit) != 0) return false;
      word |= bit;
      return true;
    }
    std::uint32_t i = home(question);
    for (; keys_[i] != empty; i = (i + 1) & mask_) {
      if (keys_[i] == question) return false;
    }
    keys_[i] = question;
    return true;
  }

  void erase(std::uint32_t question) noexcept {
    if (bitmap_) {
      words_[question / 64] &= ~(std::uint64_t{1} << (question % 64));
      return;
    }
    std::uint32_t i = home(question);
    while (keys_[i] != question) {
      if (keys_[i] == empty) return;
      i = (i + 1) & mask_;
    }
    // Backward-shift deletion: move later entries of the run into the hole when their home
    // position allows it, so lookups never need tombstones.
    for (std::uint32_t j = (i + 1) & mask_; keys_[j] != empty; j = (j + 1) & mask_) {
      const std::uint32_t h = home(keys_[j]);
      const bool movable = i <= j ? (h <= i || h > j) : (h <= i && h > j);
      if (movable) {
        keys_[i] = keys_[j];
        i = j;
      }
    }
    keys_[i] = empty;
  }

 private:
  static constexpr std::uint32_t empty = UINT32_MAX;

  std::uint32_t home(std::uint32_t question) const noexcept {
    return (question * 0x9e3779b1u) & mask_;
  }

  bool bitmap_;
  std::vector<std::uint64_t> words_;  // bitmap mode
  std::vector<std::uint32_t> keys_;   // table mode
  std::uint32_t mask_ = 0;
};

}  // namespace dnstransport::detail
