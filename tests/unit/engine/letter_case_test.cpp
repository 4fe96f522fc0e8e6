#include "engine/letter_case.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include <dnstransport/message.hpp>

namespace dnstransport::detail {
namespace {

std::string name_of(std::span<const std::uint8_t> message) {
  std::string out;
  for (std::size_t pos = dns_header_size; message[pos] != 0; pos += message[pos] + 1u) {
    if (!out.empty()) out += '.';
    out.append(message.begin() + static_cast<std::ptrdiff_t>(pos) + 1,
               message.begin() + static_cast<std::ptrdiff_t>(pos) + 1 + message[pos]);
  }
  return out;
}

TEST(letter_case_test, a_name_has_two_to_the_letters_patterns) {
  EXPECT_EQ(letter_case_patterns(encode_query("www.example.com", rr_type::a)), 1u << 13);
  EXPECT_EQ(letter_case_patterns(encode_query("a.", rr_type::a)), 2u);
  EXPECT_EQ(letter_case_patterns(encode_query("1.2.3.4", rr_type::a)), 1u);  // no letters
  EXPECT_EQ(letter_case_patterns(encode_query("b-2.x9", rr_type::a)), 4u);
  // Past 16 letters the patterns stop growing: more than a client's ids tell apart.
  EXPECT_EQ(letter_case_patterns(encode_query("abcdefghijklmnopqrstuvwxyz.example", rr_type::a)),
            65536u);
}

TEST(letter_case_test, a_pattern_says_which_letters_are_upper_case) {
  EXPECT_EQ(letter_case_pattern(encode_query("www.example.com", rr_type::a)), 0u);
  EXPECT_EQ(letter_case_pattern(encode_query("Ab-1.c", rr_type::a)), 0b001u);
  EXPECT_EQ(letter_case_pattern(encode_query("aB.C", rr_type::a)), 0b110u);
}

TEST(letter_case_test, every_pattern_gives_another_form_of_the_same_name) {
  const std::vector<std::uint8_t> query = encode_query("a-b.c1", rr_type::aaaa);
  std::vector<std::uint8_t> out(query.size());
  std::set<std::string> forms;
  for (std::uint32_t flips = 0; flips < letter_case_patterns(query); ++flips) {
    const auto varied = vary_letter_case(query, flips, out);
    ASSERT_EQ(varied.size(), query.size());
    forms.insert(name_of(varied));
    // Only the name's letters change: the header, type and class stay.
    EXPECT_TRUE(std::equal(query.begin(), query.begin() + dns_header_size, varied.begin()));
    EXPECT_TRUE(std::equal(query.end() - 4, query.end(), varied.end() - 4));
    EXPECT_EQ(letter_case_pattern(varied), flips);  // the query was all lower case
  }
  EXPECT_EQ(forms, (std::set<std::string>{"a-b.c1", "A-b.c1", "a-B.c1", "A-B.c1", "a-b.C1",
                                          "A-b.C1", "a-B.C1", "A-B.C1"}));
}

TEST(letter_case_test, only_an_answer_in_the_case_sent_echoes_it) {
  const std::vector<std::uint8_t> query = encode_query("www.example.com", rr_type::a);
  std::vector<std::uint8_t> sent(query.size());
  const std::uint32_t flips = 0b1000000000101;  // letters 0, 2 and 12
  vary_letter_case(query, flips, sent);
  EXPECT_EQ(name_of(sent), "WwW.example.coM");
  // The answer starts with the query's header and question.
  std::vector<std::uint8_t> answer(sent.begin(), sent.end());
  answer[2] |= 0x80;
  EXPECT_TRUE(echoes_letter_case(answer, query, flips));
  // Lower-cased by a server that does not echo the case.
  EXPECT_FALSE(echoes_letter_case(query, query, flips));
  EXPECT_TRUE(echoes_letter_case(query, query, 0));
  // Another query's form of the same name (one letter differs).
  std::vector<std::uint8_t> other = answer;
  other[dns_header_size + 2] ^= 0x20;
  EXPECT_FALSE(echoes_letter_case(other, query, flips));
  // A label length changed (the same letters, cut elsewhere) is not the name.
  std::vector<std::uint8_t> moved = answer;
  moved[dns_header_size] = 2;
  EXPECT_FALSE(echoes_letter_case(moved, query, flips));
  // Too short to hold the name.
  EXPECT_FALSE(echoes_letter_case(std::span(answer).first(dns_header_size + 3), query, flips));
}

}  // namespace
}  // namespace dnstransport::detail
