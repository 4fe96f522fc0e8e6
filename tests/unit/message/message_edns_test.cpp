// The EDNS options of message.hpp real clients send and read: edns-tcp-keepalive (RFC
// 7828) and padding (RFC 7830, RFC 8467) in queries, and both read back from answers.

#include <dnstransport/message.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "wire_bytes.hpp"

#include <dnstransport/query_source.hpp>

namespace dnstransport {
namespace {

using namespace wire_bytes;

// An OPT record (payload 1232, no DO) with `options` as its data.
bytes opt_record(const bytes& options) {
  return bytes{0} + u16(rr_type::opt) + u16(1232) + bytes{0, 0, 0, 0} +
         u16(static_cast<std::uint16_t>(options.size())) + options;
}

bytes option(std::uint16_t code, const bytes& data) {
  return u16(code) + u16(static_cast<std::uint16_t>(data.size())) + data;
}

// An answer to encode_query("www.example.com", A) carrying `additional` records.
bytes answer_with(const bytes& additional, std::uint16_t additional_count = 1) {
  const bytes a_record = bytes{0xc0, 0x0c} + u16(rr_type::a) + u16(class_in) +
                         bytes{0, 0, 0x0e, 0x10} + u16(4) + bytes{192, 0, 2, 1};
  return header(9, response_flags, 1, 1, 0, additional_count) + question("www.example.com") +
         a_record + additional;
}

query_options padded(std::uint16_t block) {
  query_options options;
  options.edns.enabled = true;
  options.edns.padding_block = block;
  return options;
}

TEST(message_edns_test, padding_for_reaches_the_next_multiple) {
  EXPECT_EQ(padding_for(44, 128), 80u);    // 44 + 4 + 80 = 128
  EXPECT_EQ(padding_for(124, 128), 0u);    // 124 + 4 is a multiple already
  EXPECT_EQ(padding_for(125, 128), 127u);  // 125 + 4 + 127 = 256
  EXPECT_EQ(padding_for(500, 1), 0u);
  EXPECT_EQ(padding_for(500, 0), 0u);
}

TEST(message_edns_test, encode_query_pads_to_the_block_exactly) {
  // Header 12, www.example.com 17, type and class 4, OPT 11: 44 octets, then the padding
  // option's 4-octet header and 80 zero octets make 128.
  const bytes query = encode_query("www.example.com", rr_type::a, padded(128));
  const bytes expected = header(0, 0x0100, 1, 0, 0, 1) + question("www.example.com") +
                         opt_record(option(edns_option_code::padding, bytes(80, 0)));
  EXPECT_EQ(query, expected);
  EXPECT_EQ(query.size(), 128u);
}

TEST(message_edns_test, encode_query_puts_padding_after_the_other_options) {
  query_options options = padded(128);
  options.edns.options.push_back({edns_option_code::tcp_keepalive, {}});
  const bytes query = encode_query("www.example.com", rr_type::a, options);
  ASSERT_EQ(query.size(), 128u);
  // 44 + keepalive 4 + padding header 4 = 52: 76 octets of padding.
  EXPECT_EQ(query, header(0, 0x0100, 1, 0, 0, 1) + question("www.example.com") +
                       opt_record(option(edns_option_code::tcp_keepalive, {}) +
                                  option(edns_option_code::padding, bytes(76, 0))));
}

TEST(message_edns_test, block_of_one_sends_an_empty_padding_option) {
  const bytes query = encode_query("a", rr_type::a, padded(1));
  EXPECT_EQ(query, header(0, 0x0100, 1, 0, 0, 1) + encode_name("a") + u16(rr_type::a) +
                       u16(class_in) + opt_record(option(edns_option_code::padding, {})));
}

TEST(message_edns_test, padding_needs_an_opt_record) {
  query_options options;
  options.edns.padding_block = 128;  // EDNS off: no OPT record, so no padding either
  EXPECT_EQ(encode_query("a", rr_type::a, options).size(), 12u + 3u + 4u);
}

TEST(message_edns_test, every_default_query_is_a_multiple_of_the_block) {
  for (const std::uint16_t block : {std::uint16_t{128}, std::uint16_t{468}, std::uint16_t{7}}) {
    const query_set queries = default_queries(padded(block));
    ASSERT_FALSE(queries.empty());
    for (std::size_t i = 0; i < queries.size(); ++i) {
      EXPECT_EQ(queries[i].size() % block, 0u) << "query " << i << " block " << block;
    }
  }
}

TEST(message_edns_test, add_edns_options_gives_a_query_without_opt_one) {
  const bytes plain = encode_query("www.example.com", rr_type::a);
  edns_config edns;
  edns.options.push_back({edns_option_code::tcp_keepalive, {}});
  const bytes with = add_edns_options(plain, edns);
  EXPECT_EQ(with, header(0, 0x0100, 1, 0, 0, 1) + question("www.example.com") +
                      opt_record(option(edns_option_code::tcp_keepalive, {})));
  edns.dnssec_ok = true;
  edns.udp_payload_size = 4096;
  const bytes with_do = add_edns_options(plain, edns);
  const bytes opt_do = bytes{0} + u16(rr_type::opt) + u16(4096) + bytes{0, 0, 0x80, 0} + u16(4) +
                       option(edns_option_code::tcp_keepalive, {});
  EXPECT_EQ(bytes(with_do.end() - 15, with_do.end()), opt_do);
}

TEST(message_edns_test, add_edns_options_keeps_the_queries_own_options) {
  // A wire query with a cookie and an old padding option: the cookie stays, keepalive is
  // added, the padding is replaced by one sized for the new message.
  const bytes cookie = option(10, bytes{1, 2, 3, 4, 5, 6, 7, 8});
  const bytes query = header(0, 0x0100, 1, 0, 0, 1) + question("www.example.com") +
                      opt_record(cookie + option(edns_option_code::padding, bytes(3, 0)));
  edns_config edns;
  edns.options.push_back({edns_option_code::tcp_keepalive, {}});
  edns.padding_block = 128;
  const bytes with = add_edns_options(query, edns);
  ASSERT_EQ(with.size(), 128u);
  // 44 + cookie 12 + keepalive 4 + padding header 4 = 64: 64 octets of padding.
  EXPECT_EQ(with, header(0, 0x0100, 1, 0, 0, 1) + question("www.example.com") +
                      opt_record(cookie + option(edns_option_code::tcp_keepalive, {}) +
                                 option(edns_option_code::padding, bytes(64, 0))));
  // Already there: not added twice.
  EXPECT_EQ(add_edns_options(with, edns), with);
}

TEST(message_edns_test, a_client_subnet_of_the_run_replaces_the_queries_own) {
  // A captured query from a resolver carries its own subnet and a cookie: the run's subnet
  // takes the place of the former, the cookie stays.
  const bytes cookie = option(10, bytes{1, 2, 3, 4, 5, 6, 7, 8});
  const bytes own = option(edns_option_code::client_subnet, bytes{0, 1, 16, 0, 192, 168});
  const bytes query =
      header(0, 0x0100, 1, 0, 0, 1) + question("www.example.com") + opt_record(own + cookie);
  edns_config edns;
  const bytes ours{0, 1, 24, 0, 0, 0, 0};
  edns.options.push_back({edns_option_code::client_subnet, ours});
  EXPECT_EQ(add_edns_options(query, edns),
            header(0, 0x0100, 1, 0, 0, 1) + question("www.example.com") +
                opt_record(cookie + option(edns_option_code::client_subnet, ours)));
  // Without one in the run, the query's own subnet is left as it was.
  edns.options = {{edns_option_code::tcp_keepalive, {}}};
  EXPECT_EQ(add_edns_options(query, edns),
            header(0, 0x0100, 1, 0, 0, 1) + question("www.example.com") +
                opt_record(own + cookie + option(edns_option_code::tcp_keepalive, {})));
}

TEST(message_edns_test, check_response_reads_an_echoed_client_subnet) {
  const auto query = encode_query("www.example.com", rr_type::a);
  const bytes echo = option(edns_option_code::client_subnet, bytes{0, 1, 24, 16, 10, 0, 7});
  const bytes reply = answer_with(opt_record(echo));
  const auto summary = check_response(reply, query, 9, true);
  ASSERT_EQ(summary.verdict, response_verdict::ok);
  EXPECT_TRUE(summary.client_subnet);
  EXPECT_EQ(summary.client_subnet_family, 1);
  EXPECT_EQ(summary.client_subnet_source_prefix, 24);
  EXPECT_EQ(summary.client_subnet_scope_prefix, 16);
  ASSERT_EQ(summary.client_subnet_address_size, 3);
  EXPECT_EQ(reply[summary.client_subnet_address_at], 10);
  EXPECT_EQ(reply[summary.client_subnet_address_at + 2u], 7);
  // Not read unless asked.
  EXPECT_FALSE(check_response(reply, query, 9, false).client_subnet);
  // Shorter than its fixed fields, or more address than an IPv6 one: malformed.
  const bytes stub = option(edns_option_code::client_subnet, bytes{0, 1, 24});
  EXPECT_EQ(check_response(answer_with(opt_record(stub)), query, 9, true).verdict,
            response_verdict::malformed);
  const bytes long_one = option(edns_option_code::client_subnet, bytes(4 + 17, 0));
  EXPECT_EQ(check_response(answer_with(opt_record(long_one)), query, 9, true).verdict,
            response_verdict::malformed);
}

TEST(message_edns_test, add_edns_options_refuses_what_it_cannot_change) {
  edns_config edns;
  edns.padding_block = 128;
  const bytes base = header(0, 0x0100, 1, 0, 0, 2) + question("example.com");
  const bytes tsig = bytes{0} + u16(250) + u16(255) + bytes{0, 0, 0, 0} + u16(0);
  EXPECT_THROW(
      add_edns_options(header(0, 0x0100, 1, 0, 0, 1) + question("example.com") + tsig, edns),
      std::invalid_argument);
  EXPECT_THROW(add_edns_options(base + opt_record({}) + tsig, edns), std::invalid_argument);
  EXPECT_THROW(add_edns_options(base + opt_record({}) + opt_record({}), edns),
               std::invalid_argument);
  // An option running past the OPT record's data.
  const bytes broken_option = u16(10) + u16(9) + bytes{1, 2, 3};
  EXPECT_THROW(add_edns_options(header(0, 0x0100, 1, 0, 0, 1) + question("example.com") +
                                    opt_record(broken_option),
                                edns),
               std::invalid_argument);
  EXPECT_THROW(add_edns_options(bytes{0, 1, 2}, edns), std::invalid_argument);
  bytes cut = header(0, 0x0100, 1, 0, 0, 1) + question("example.com") + opt_record({});
  cut.pop_back();
  EXPECT_THROW(add_edns_options(cut, edns), std::invalid_argument);
}

TEST(message_edns_test, every_default_query_takes_keepalive_and_padding) {
  edns_config edns;
  edns.options.push_back({edns_option_code::tcp_keepalive, {}});
  edns.padding_block = 128;
  const query_set queries = default_queries();
  for (std::size_t i = 0; i < queries.size(); ++i) {
    const bytes with = add_edns_options(queries[i], edns);
    EXPECT_EQ(with.size() % 128, 0u) << "query " << i;
    // The echo of the query with QR set is a well-formed answer: the OPT record parses.
    bytes echoed = with;
    echoed[2] |= 0x80;
    const auto summary = check_response(echoed, with, 0, true);
    EXPECT_EQ(summary.verdict, response_verdict::ok) << "query " << i;
    EXPECT_TRUE(summary.padded);
    EXPECT_FALSE(summary.keepalive);  // the query's empty option, echoed: no timeout
  }
}

TEST(message_edns_test, check_response_reads_keepalive_and_padding_when_asked) {
  const bytes query = encode_query("www.example.com", rr_type::a);
  const bytes answer = answer_with(opt_record(option(edns_option_code::tcp_keepalive, u16(1200)) +
                                              option(edns_option_code::padding, bytes(20, 0))));
  const auto read = check_response(answer, query, 9, true);
  EXPECT_EQ(read.verdict, response_verdict::ok);
  EXPECT_TRUE(read.keepalive);
  EXPECT_EQ(read.keepalive_timeout, 1200);
  EXPECT_TRUE(read.padded);
  const auto unread = check_response(answer, query, 9);
  EXPECT_EQ(unread.verdict, response_verdict::ok);
  EXPECT_FALSE(unread.keepalive);
  EXPECT_FALSE(unread.padded);
}

TEST(message_edns_test, check_response_without_options_reads_nothing) {
  const bytes query = encode_query("www.example.com", rr_type::a);
  for (const bytes& answer : {answer_with({}, 0), answer_with(opt_record({})),
                              answer_with(opt_record(option(10, bytes(16, 7))))}) {
    const auto summary = check_response(answer, query, 9, true);
    EXPECT_EQ(summary.verdict, response_verdict::ok);
    EXPECT_FALSE(summary.keepalive);
    EXPECT_FALSE(summary.padded);
  }
}

TEST(message_edns_test, check_response_reports_a_malformed_opt_only_when_reading_it) {
  const bytes query = encode_query("www.example.com", rr_type::a);
  const std::vector<bytes> broken{
      // an option longer than the record's data
      answer_with(opt_record(u16(edns_option_code::padding) + u16(30) + bytes(10, 0))),
      // three octets: no room for an option header
      answer_with(opt_record(bytes{0, 12, 0})),
      // keepalive with more than a TIMEOUT
      answer_with(opt_record(option(edns_option_code::tcp_keepalive, bytes{0}))),
      answer_with(opt_record(option(edns_option_code::tcp_keepalive, bytes{0, 1, 2}))),
      // two OPT records (RFC 6891 6.1.1)
      answer_with(opt_record({}) + opt_record({}), 2),
  };
  for (std::size_t i = 0; i < broken.size(); ++i) {
    EXPECT_EQ(check_response(broken[i], query, 9, true).verdict, response_verdict::malformed)
        << "case " << i;
    EXPECT_EQ(check_response(broken[i], query, 9).verdict, response_verdict::ok) << "case " << i;
  }
  // Every prefix of a good answer: never a crash, never a read past the end.
  const bytes good = answer_with(opt_record(option(edns_option_code::tcp_keepalive, u16(5)) +
                                            option(edns_option_code::padding, bytes(8, 0))));
  for (std::size_t n = 0; n < good.size(); ++n) {
    const bytes cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_NE(check_response(cut, query, 9, true).verdict, response_verdict::ok) << n;
  }
}

}  // namespace
}  // namespace dnstransport
