#pragma once
// Internal: the questions one client has in flight. Two queries of a client in flight at
// once never look the same, so an answer carrying another query's id either matches nothing
// or fails the question check: a server that answers with a wrong id (any fixed offset, say)
// never gets an answer counted. Questions are numbered 0..n-1 per query set. Three ways:
// - one each: a client never keeps two queries with the same question in flight (for a set of
//   up to `bitmap_limit` questions one bit per question, for a larger set an open-addressing
//   table sized for its `outstanding`);
// - letter case (a set of fewer questions than `outstanding`): each query of a question in
//   flight has a letter-case pattern of its own (letter_case.hpp), which the answer must echo;
//   a question may have as many in flight as its name has patterns, each (question, pattern)
//   a key of the table;
// - unlimited: answers come back on the query's own stream (DoH, DoQ), which tells them
//   apart; nothing is kept.
// No allocation per query in any.

#include <algorithm>
#include <bit>
#include <cstdint>
#include <span>
#include <vector>

namespace dnstransport::detail {

class in_flight_questions {
 public:
  static constexpr std::uint32_t bitmap_limit = 16384;  // 2 KiB per client at most

  enum class mode : std::uint8_t { one_each, letter_case, unlimited };

  // At most `capacity` questions in flight, numbered below `questions`; one each.
  in_flight_questions(std::uint32_t capacity, std::uint32_t questions)
      : bitmap_(questions <= bitmap_limit) {
    size_for(capacity, questions);
  }

  // Letter case: question q has `patterns[q]` letter-case patterns (at most 65536), numbered
  // below it; fewer than 65536 questions. Unlimited: `patterns` is not read.
  in_flight_questions(std::uint32_t capacity, mode how, std::span<const std::uint32_t> patterns)
      : mode_(how), bitmap_(false) {
    if (how != mode::letter_case) return;
    size_for(capacity, UINT32_MAX);
    patterns_.assign(patterns.begin(), patterns.end());
    counts_.assign(patterns.size(), 0);
    cursors_.assign(patterns.size(), 0);
  }

  mode how() const noexcept { return mode_; }

  // Whether one more query of `question` may go in flight now.
  bool has_room(std::uint32_t question) const noexcept {
    switch (mode_) {
      case mode::one_each:
        return !contains(question);
      case mode::letter_case:
        return counts_[question] < patterns_[question];
      case mode::unlimited:
        break;
    }
    return true;
  }

  // Puts a query of `question` in flight (the caller checked has_room) and returns its
  // letter-case pattern: `preferred` (the query's own case) when the question has nothing in
  // flight, else the next pattern free after the last one taken. 0 when not in letter-case mode.
  std::uint32_t take(std::uint32_t question, std::uint32_t preferred = 0) noexcept {
    if (mode_ == mode::one_each) insert(question);
    if (mode_ != mode::letter_case) return 0;
    const std::uint32_t patterns = patterns_[question];
    std::uint32_t pattern = counts_[question] == 0 ? preferred % patterns : cursors_[question];
    while (!insert(key(question, pattern))) pattern = pattern + 1 == patterns ? 0 : pattern + 1;
    cursors_[question] = pattern + 1 == patterns ? 0 : pattern + 1;
    ++counts_[question];
    return pattern;
  }

  // The query of `question` with `pattern` is no longer in flight.
  void release(std::uint32_t question, std::uint32_t pattern) noexcept {
    switch (mode_) {
      case mode::one_each:
        erase(question);
        break;
      case mode::letter_case:
        erase(key(question, pattern));
        --counts_[question];
        break;
      case mode::unlimited:
        break;
    }
  }

  // One each: the primitives.
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

  static std::uint32_t key(std::uint32_t question, std::uint32_t pattern) noexcept {
    return question << 16 | pattern;  // below `empty`: fewer than 65536 questions
  }

  void size_for(std::uint32_t capacity, std::uint32_t questions) {
    if (bitmap_) {
      words_.assign((questions + 63) / 64, 0);
    } else {
      keys_.assign(std::bit_ceil(std::max<std::uint32_t>(capacity, 1) * 2u), empty);
      mask_ = static_cast<std::uint32_t>(keys_.size() - 1);
    }
  }

  std::uint32_t home(std::uint32_t question) const noexcept {
    return (question * 0x9e3779b1u) & mask_;
  }

  mode mode_ = mode::one_each;
  bool bitmap_;
  std::vector<std::uint64_t> words_;  // bitmap mode
  std::vector<std::uint32_t> keys_;   // table mode
  std::uint32_t mask_ = 0;
  // Letter case, per question: its patterns, its queries in flight, the next pattern to try.
  std::vector<std::uint32_t> patterns_;
  std::vector<std::uint32_t> counts_;
  std::vector<std::uint32_t> cursors_;
};

}  // namespace dnstransport::detail
