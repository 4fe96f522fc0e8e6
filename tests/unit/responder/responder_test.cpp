#include "responder/responder.hpp"

#include <gtest/gtest.h>

#include <vector>

#include <dnstransport/message.hpp>
#include <dnstransport/query_source.hpp>

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

std::vector<std::uint8_t> answer(const std::vector<std::uint8_t>& query, const answer_edns& edns) {
  std::vector<std::uint8_t> out(query.size() + answer_room(edns));
  out.resize(build_answer(query, answer_mode::answer, out, edns));
  return out;
}

// A query carrying keepalive and padding (to 128 octets), as `run --edns-keepalive
// --edns-padding block:128` sends them.
std::vector<std::uint8_t> keepalive_padded_query(std::uint16_t type = rr_type::a) {
  query_options options;
  options.edns.enabled = true;
  options.edns.options.push_back({edns_option_code::tcp_keepalive, {}});
  options.edns.padding_block = 128;
  return encode_query("www.example.com", type, options);
}

TEST(responder_test, answer_edns_follows_the_transport) {
  server_options options;
  const answer_edns udp = answer_edns_for(options, transport_kind::udp);
  EXPECT_FALSE(udp.keepalive);
  EXPECT_EQ(udp.padding_block, 0);
  const answer_edns tcp = answer_edns_for(options, transport_kind::tcp);
  EXPECT_TRUE(tcp.keepalive);
  EXPECT_EQ(tcp.keepalive_timeout, 1200);  // 120 s in units of 100 ms
  EXPECT_EQ(tcp.padding_block, 0);         // never in clear
  for (const auto t : {transport_kind::tls, transport_kind::doh}) {
    EXPECT_TRUE(answer_edns_for(options, t).keepalive);
    EXPECT_EQ(answer_edns_for(options, t).padding_block, 468);
  }
  const answer_edns doq = answer_edns_for(options, transport_kind::doq);
  EXPECT_FALSE(doq.keepalive);  // RFC 9250 section 5.5.2
  EXPECT_EQ(doq.padding_block, 468);

  options.idle_timeout_seconds = 3;
  EXPECT_EQ(answer_edns_for(options, transport_kind::tcp).keepalive_timeout, 30);
  options.keepalive_timeout_seconds = 0.25;  // rounded to the unit
  EXPECT_EQ(answer_edns_for(options, transport_kind::tcp).keepalive_timeout, 3);
  options.keepalive_timeout_seconds = 0;
  EXPECT_EQ(answer_edns_for(options, transport_kind::tls).keepalive_timeout, 0);
  options.padding_block = 0;
  EXPECT_EQ(answer_edns_for(options, transport_kind::tls).padding_block, 0);
}

// A query carrying an EDNS Client Subnet option with `data` (and, with `padded`, padding to
// 128 octets after it).
std::vector<std::uint8_t> subnet_query(const std::vector<std::uint8_t>& data, bool padded = false) {
  query_options options;
  options.edns.enabled = true;
  options.edns.options.push_back({edns_option_code::client_subnet, data});
  if (padded) options.edns.padding_block = 128;
  return encode_query("www.example.com", rr_type::a, options);
}

TEST(responder_test, a_client_subnet_is_echoed_with_the_scope_asked_for) {
  server_options options;
  EXPECT_EQ(answer_edns_for(options, transport_kind::udp).client_subnet_scope, 0);
  const std::vector<std::uint8_t> subnet{0, 1, 24, 0, 10, 0, 7};
  const auto query = subnet_query(subnet);
  answer_edns edns;
  edns.client_subnet_scope = 0;
  auto reply = answer(query, edns);
  auto summary = check_response(reply, query, 0, true);
  ASSERT_EQ(summary.verdict, response_verdict::ok);
  ASSERT_TRUE(summary.client_subnet);
  EXPECT_EQ(summary.client_subnet_scope_prefix, 0);
  EXPECT_EQ(std::vector<std::uint8_t>(reply.end() - 11, reply.end()),
            (std::vector<std::uint8_t>{0, 8, 0, 7, 0, 1, 24, 0, 10, 0, 7}));
  // A scope of its own; one longer than the family's addresses is cut to it.
  edns.client_subnet_scope = 20;
  EXPECT_EQ(check_response(answer(query, edns), query, 0, true).client_subnet_scope_prefix, 20);
  edns.client_subnet_scope = 64;
  EXPECT_EQ(check_response(answer(query, edns), query, 0, true).client_subnet_scope_prefix, 32);
  // Before the padding, which still fills the block.
  edns.padding_block = 468;
  const auto padded = subnet_query(subnet, true);
  reply = answer(padded, edns);
  EXPECT_EQ(reply.size(), 468u);
  summary = check_response(reply, padded, 0, true);
  EXPECT_TRUE(summary.client_subnet);
  EXPECT_TRUE(summary.padded);
  // Not echoed when the responder plays a server that does not know the option.
  edns.client_subnet_scope = -1;
  EXPECT_FALSE(check_response(answer(query, edns), query, 0, true).client_subnet);
}

TEST(responder_test, a_client_subnet_that_does_not_read_is_not_echoed) {
  answer_edns edns;
  edns.client_subnet_scope = 0;
  for (const std::vector<std::uint8_t>& data : std::vector<std::vector<std::uint8_t>>{
           {0, 1, 24},                     // shorter than its fixed fields
           {0, 3, 24, 0, 10, 0, 7},        // no such family
           {0, 1, 33, 0, 10, 0, 7, 1, 1},  // a prefix longer than IPv4's
           {0, 1, 24, 0, 10, 0},           // fewer octets than the prefix needs
           {0, 1, 16, 0, 10, 0, 7},        // more
       }) {
    const auto query = subnet_query(data);
    const auto reply = answer(query, edns);
    const auto summary = check_response(reply, query, 0, true);
    EXPECT_EQ(summary.verdict, response_verdict::ok);
    EXPECT_FALSE(summary.client_subnet);
    EXPECT_EQ(summary.answer_count, 1);
  }
}

TEST(responder_test, keepalive_and_padding_answered_over_tls) {
  const auto query = keepalive_padded_query();
  answer_edns edns;
  edns.keepalive = true;
  edns.keepalive_timeout = 25;
  edns.padding_block = 468;
  const auto reply = answer(query, edns);
  ASSERT_EQ(reply.size(), 468u);
  const auto summary = check_response(reply, query, 0, true);
  EXPECT_EQ(summary.verdict, response_verdict::ok);
  EXPECT_EQ(summary.answer_count, 1);
  EXPECT_TRUE(summary.keepalive);
  EXPECT_EQ(summary.keepalive_timeout, 25);
  EXPECT_TRUE(summary.padded);
  // The OPT record: keepalive first, then the padding option filling the block.
  const std::size_t opt_start = 12 + 17 + 4 + 16;  // header, question, A record
  const std::vector<std::uint8_t> keepalive(reply.begin() + opt_start + 11,
                                            reply.begin() + opt_start + 17);
  EXPECT_EQ(keepalive, (std::vector<std::uint8_t>{0, 11, 0, 2, 0, 25}));
  const std::size_t padding = 468 - (opt_start + 17 + 4);
  EXPECT_EQ(reply[opt_start + 17], 0);
  EXPECT_EQ(reply[opt_start + 18], 12);
  EXPECT_EQ((reply[opt_start + 19] << 8) | reply[opt_start + 20], static_cast<int>(padding));
}

TEST(responder_test, padding_to_every_block_for_every_default_query) {
  answer_edns edns;
  edns.padding_block = 468;
  query_options options;
  options.edns.enabled = true;
  options.edns.padding_block = 128;
  const query_set queries = default_queries(options);
  for (std::size_t i = 0; i < queries.size(); ++i) {
    const std::vector<std::uint8_t> query(queries[i].begin(), queries[i].end());
    const auto reply = answer(query, edns);
    EXPECT_EQ(reply.size() % 468, 0u) << "query " << i;
    const auto summary = check_response(reply, query, 0, true);
    EXPECT_EQ(summary.verdict, response_verdict::ok) << "query " << i;
    EXPECT_TRUE(summary.padded);
    EXPECT_FALSE(summary.keepalive);  // not asked
  }
}

TEST(responder_test, options_are_answered_only_where_the_transport_allows) {
  const auto query = keepalive_padded_query();
  server_options options;
  // UDP: neither (RFC 7828: never over UDP; padding only where encrypted).
  auto summary =
      check_response(answer(query, answer_edns_for(options, transport_kind::udp)), query, 0, true);
  EXPECT_EQ(summary.verdict, response_verdict::ok);
  EXPECT_FALSE(summary.keepalive);
  EXPECT_FALSE(summary.padded);
  // TCP: keepalive, no padding.
  summary =
      check_response(answer(query, answer_edns_for(options, transport_kind::tcp)), query, 0, true);
  EXPECT_TRUE(summary.keepalive);
  EXPECT_EQ(summary.keepalive_timeout, 1200);
  EXPECT_FALSE(summary.padded);
  // DoQ: padding, no keepalive.
  const auto doq_reply = answer(query, answer_edns_for(options, transport_kind::doq));
  summary = check_response(doq_reply, query, 0, true);
  EXPECT_FALSE(summary.keepalive);
  EXPECT_TRUE(summary.padded);
  EXPECT_EQ(doq_reply.size(), 468u);
  // A query without the options gets neither, whatever the transport allows.
  query_options plain;
  plain.edns.enabled = true;
  const auto edns_query = encode_query("www.example.com", rr_type::a, plain);
  const auto reply = answer(edns_query, answer_edns_for(options, transport_kind::tls));
  summary = check_response(reply, edns_query, 0, true);
  EXPECT_FALSE(summary.keepalive);
  EXPECT_FALSE(summary.padded);
  EXPECT_EQ(reply, answer(edns_query, answer_mode::answer));
}

TEST(responder_test, padding_that_does_not_fit_is_left_out) {
  const auto query = keepalive_padded_query();
  answer_edns edns;
  edns.padding_block = 468;
  std::vector<std::uint8_t> out(query.size() + answer_overhead);  // too small for 468
  out.resize(build_answer(query, answer_mode::answer, out, edns));
  const auto summary = check_response(out, query, 0, true);
  EXPECT_EQ(summary.verdict, response_verdict::ok);
  EXPECT_FALSE(summary.padded);
}

TEST(responder_test, broken_options_in_a_query_never_break_the_answer) {
  answer_edns edns;
  edns.keepalive = true;
  edns.keepalive_timeout = 7;
  edns.padding_block = 468;
  // Keepalive, then an option that claims more data than the record holds: the walk stops
  // there, the keepalive before it is answered.
  const std::vector<std::uint8_t> base = encode_query("example.org", rr_type::a);
  std::vector<std::uint8_t> query = base;
  query[11] = 1;  // ARCOUNT
  const std::vector<std::uint8_t> opt{0, 0, 41, 0x04, 0xd0, 0, 0,  0, 0, 0,
                                      8, 0, 11, 0,    0,    0, 12, 0, 40};
  query.insert(query.end(), opt.begin(), opt.end());
  const auto reply = answer(query, edns);
  const auto summary = check_response(reply, query, 0, true);
  EXPECT_EQ(summary.verdict, response_verdict::ok);
  EXPECT_TRUE(summary.keepalive);
  EXPECT_FALSE(summary.padded);
  // Every prefix of the query: an answer or nothing, never a read past the end.
  for (std::size_t n = 0; n < query.size(); ++n) {
    const std::vector<std::uint8_t> cut(query.begin(),
                                        query.begin() + static_cast<std::ptrdiff_t>(n));
    std::vector<std::uint8_t> out(cut.size() + answer_room(edns));
    EXPECT_LE(build_answer(cut, answer_mode::answer, out, edns), out.size());
  }
}

}  // namespace
}  // namespace dnstransport::detail
