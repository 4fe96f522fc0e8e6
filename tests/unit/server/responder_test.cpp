#include "server/responder.hpp"

#include <gtest/gtest.h>

#include <vector>

#include <dnstransport/message.hpp>

namespace dnstransport::detail {
namespace {

std::vector<std::uint8_t> answer(const std::vector<std::uint8_t>& query, answer_mode mode) {
  std::vector<std::uint8_t> out(query.size() + answer_overhead);
  out.resize(build_answer(query, mode, out));
  return out;
}

TEST(responder_test, echo_returns_the_query_with_qr_set) {
  auto query = encode_query("www.example.com", rr_type::a);
  patch_id(query.data(), 0x1234);
  const auto reply = answer(query, answer_mode::echo);
  ASSERT_EQ(reply.size(), query.size());
  EXPECT_EQ(reply[2] & 0x80, 0x80);
  EXPECT_EQ(check_response(reply, query, 0x1234).verdict, response_verdict::ok);
}

TEST(responder_test, answer_mode_gives_an_a_record) {
  auto query = encode_query("www.example.com", rr_type::a);
  patch_id(query.data(), 7);
  const auto reply = answer(query, answer_mode::answer);
  const auto summary = check_response(reply, query, 7);
  EXPECT_EQ(summary.verdict, response_verdict::ok);
  EXPECT_EQ(summary.rcode, 0);
  EXPECT_EQ(summary.answer_count, 1);
  // The address is the last four octets: 192.0.2.1.
  ASSERT_GE(reply.size(), 4u);
  EXPECT_EQ(std::vector<std::uint8_t>(reply.end() - 4, reply.end()),
            (std::vector<std::uint8_t>{192, 0, 2, 1}));
}

TEST(responder_test, answer_mode_aaaa_and_nodata_for_other_types) {
  auto aaaa = encode_query("example.net", rr_type::aaaa);
  EXPECT_EQ(check_response(answer(aaaa, answer_mode::answer), aaaa, 0).answer_count, 1);
  auto mx = encode_query("example.net", rr_type::mx);
  const auto summary = check_response(answer(mx, answer_mode::answer), mx, 0);
  EXPECT_EQ(summary.verdict, response_verdict::ok);
  EXPECT_EQ(summary.answer_count, 0);
}

TEST(responder_test, edns_query_gets_an_opt_record_back_with_do) {
  query_options options;
  options.edns.enabled = true;
  options.edns.dnssec_ok = true;
  auto query = encode_query("example.org", rr_type::a, options);
  const auto reply = answer(query, answer_mode::answer);
  EXPECT_EQ(check_response(reply, query, 0).verdict, response_verdict::ok);
  ASSERT_GE(reply.size(), 11u);
  // The OPT record closes the message: name 0, type 41, class 1232, TTL with DO, rdlength 0.
  const std::vector<std::uint8_t> opt(reply.end() - 11, reply.end());
  EXPECT_EQ(opt, (std::vector<std::uint8_t>{0, 0, 41, 0x04, 0xd0, 0, 0, 0x80, 0, 0, 0}));
  EXPECT_EQ(reply[11], 1);  // ARCOUNT
}

TEST(responder_test, junk_is_dropped_or_formerr) {
  EXPECT_TRUE(answer({1, 2, 3}, answer_mode::answer).empty());
  auto response = encode_query("example.com", rr_type::a);
  response[2] |= 0x80;  // a response is never answered
  EXPECT_TRUE(answer(response, answer_mode::answer).empty());
  std::vector<std::uint8_t> bad_question{0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0x40};
  const auto reply = answer(bad_question, answer_mode::answer);
  ASSERT_EQ(reply.size(), dns_header_size);
  EXPECT_EQ(reply[3] & 0x0f, 1);  // FORMERR
}

}  // namespace
}  // namespace dnstransport::detail
