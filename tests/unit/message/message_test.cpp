#include <dnstransport/message.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "wire_bytes.hpp"

namespace dnstransport {
namespace {

using namespace wire_bytes;

bytes text(std::string_view s) {
  return bytes(s.begin(), s.end());
}

// The answer record every test response carries: owner name compressed to the question.
bytes a_record_for_question() {
  return bytes{0xc0, 0x0c} + u16(rr_type::a) + u16(class_in) + bytes{0, 0, 0x0e, 0x10} + u16(4) +
         bytes{192, 0, 2, 1};
}

// A well-formed answer to encode_query("www.example.com", A) with the given id.
bytes good_response(std::uint16_t id, std::uint16_t flags = response_flags) {
  return header(id, flags, 1, 1, 0, 0) + question("www.example.com") + a_record_for_question();
}

std::string error_of(std::string_view name) {
  try {
    encode_name(name);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "no error";
}

TEST(message_test, encode_name_root) {
  EXPECT_EQ(encode_name("."), bytes{0});
}

TEST(message_test, encode_name_rejects_empty_string) {
  EXPECT_THROW(encode_name(""), std::invalid_argument);
}

TEST(message_test, encode_name_trailing_dot_is_optional) {
  const bytes expected =
      bytes{3} + text("www") + bytes{7} + text("example") + bytes{3} + text("com") + bytes{0};
  EXPECT_EQ(encode_name("www.example.com"), expected);
  EXPECT_EQ(encode_name("www.example.com."), expected);
}

TEST(message_test, encode_name_escaped_dot_stays_in_label) {
  EXPECT_EQ(encode_name("a\\.b.c"), bytes{3} + text("a.b") + bytes{1} + text("c") + bytes{0});
  // An escaped final dot is part of the label, not the root.
  EXPECT_EQ(encode_name("a\\."), bytes{2} + text("a.") + bytes{0});
  EXPECT_EQ(encode_name("a\\.."), bytes{2} + text("a.") + bytes{0});
}

TEST(message_test, encode_name_other_escapes_are_literal) {
  EXPECT_EQ(encode_name("a\\\\b"), bytes{3} + text("a\\b") + bytes{0});
  EXPECT_EQ(encode_name("\\a\\;"), bytes{2} + text("a;") + bytes{0});
  EXPECT_EQ(error_of("abc\\"), "backslash at the end of the name");
}

TEST(message_test, encode_name_decimal_escapes) {
  EXPECT_EQ(encode_name("\\000a"), (bytes{2, 0, 'a', 0}));
  EXPECT_EQ(encode_name("\\255"), (bytes{1, 0xff, 0}));
  EXPECT_EQ(encode_name("x\\0461"), (bytes{3, 'x', '.', '1', 0}));
  EXPECT_EQ(encode_name("\\065\\066.c"), (bytes{2, 'A', 'B', 1, 'c', 0}));
}

TEST(message_test, encode_name_rejects_bad_decimal_escapes) {
  EXPECT_NE(error_of("\\256").find("over 255"), std::string::npos);
  EXPECT_NE(error_of("\\999.com").find("over 255"), std::string::npos);
  EXPECT_NE(error_of("\\0").find("three digits"), std::string::npos);
  EXPECT_NE(error_of("\\12").find("three digits"), std::string::npos);
  EXPECT_NE(error_of("\\12.com").find("three digits"), std::string::npos);
  EXPECT_NE(error_of("a\\0b").find("three digits"), std::string::npos);
}

TEST(message_test, encode_name_label_length_limit) {
  const std::string label63(63, 'x');
  const bytes wire = encode_name(label63 + ".com");
  ASSERT_EQ(wire.size(), 1 + 63 + 1 + 3 + 1u);
  EXPECT_EQ(wire[0], 63);
  EXPECT_NE(error_of(std::string(64, 'x') + ".com").find("label longer than 63"),
            std::string::npos);
  // Escapes count as one octet each.
  EXPECT_EQ(encode_name(std::string(62, 'x') + "\\.").size(), 65u);
  EXPECT_THROW(encode_name(std::string(63, 'x') + "\\."), std::invalid_argument);
}

TEST(message_test, encode_name_total_length_limit) {
  const std::string label63(63, 'a');
  // 3 * (1 + 63) + (1 + 61) + 1 = 255.
  const std::string longest = label63 + "." + label63 + "." + label63 + "." + std::string(61, 'b');
  EXPECT_EQ(encode_name(longest).size(), 255u);
  EXPECT_EQ(encode_name(longest + ".").size(), 255u);
  const std::string too_long = label63 + "." + label63 + "." + label63 + "." + std::string(62, 'b');
  EXPECT_NE(error_of(too_long).find("name longer than 255"), std::string::npos);
  EXPECT_THROW(encode_name(longest + ".c"), std::invalid_argument);
  // 127 one-octet labels fill 255 octets; one more is one too many.
  std::string many_labels;
  for (int i = 0; i < 127; ++i) many_labels += "a.";
  EXPECT_EQ(encode_name(many_labels).size(), 255u);
  EXPECT_THROW(encode_name(many_labels + "a"), std::invalid_argument);
}

TEST(message_test, encode_name_rejects_empty_labels) {
  for (const char* name : {"a..b", ".a", "..", "a..", ".a.", "a.b.."}) {
    EXPECT_EQ(error_of(name), "empty label") << name;
  }
}

TEST(message_test, encode_query_exact_bytes_without_edns) {
  const bytes expected = header(0, 0x0100, 1, 0, 0, 0) + bytes{7} + text("example") + bytes{3} +
                         text("com") + bytes{0} + bytes{0, 1, 0, 1};
  EXPECT_EQ(encode_query("example.com", rr_type::a), expected);

  query_options options;
  options.recursion_desired = false;
  options.qclass = 3;
  const bytes no_rd = header(0, 0, 1, 0, 0, 0) + bytes{7} + text("example") + bytes{3} +
                      text("com") + bytes{0} + bytes{0, 28, 0, 3};
  EXPECT_EQ(encode_query("example.com.", rr_type::aaaa, options), no_rd);
}

TEST(message_test, encode_query_exact_bytes_with_edns) {
  query_options options;
  options.edns.enabled = true;
  const bytes question_part =
      bytes{7} + text("example") + bytes{3} + text("com") + bytes{0} + bytes{0, 15, 0, 1};
  // Root owner, type 41, class 1232, TTL 0 (ext-rcode, version, no DO), RDLENGTH 0.
  const bytes opt = bytes{0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(encode_query("example.com", rr_type::mx, options),
            header(0, 0x0100, 1, 0, 0, 1) + question_part + opt);

  options.edns.dnssec_ok = true;
  options.edns.udp_payload_size = 4096;
  const bytes opt_do = bytes{0, 0, 41, 0x10, 0x00, 0, 0, 0x80, 0, 0, 0};
  EXPECT_EQ(encode_query("example.com", rr_type::mx, options),
            header(0, 0x0100, 1, 0, 0, 1) + question_part + opt_do);
}

TEST(message_test, encode_query_writes_edns_options_in_order) {
  query_options options;
  options.edns.enabled = true;
  options.edns.dnssec_ok = true;
  options.edns.options.push_back({10, {1, 2, 3, 4, 5, 6, 7, 8}});
  options.edns.options.push_back({11, {}});
  const bytes expected = header(0, 0x0100, 1, 0, 0, 1) + bytes{1} + text("a") + bytes{0} +
                         bytes{0, 1, 0, 1} + bytes{0, 0, 41, 0x04, 0xd0, 0, 0, 0x80, 0} + u16(16) +
                         u16(10) + u16(8) + bytes{1, 2, 3, 4, 5, 6, 7, 8} + u16(11) + u16(0);
  EXPECT_EQ(encode_query("a", rr_type::a, options), expected);
}

TEST(message_test, encode_query_rejects_bad_name_and_oversized_options) {
  EXPECT_THROW(encode_query("a..b", rr_type::a), std::invalid_argument);
  query_options options;
  options.edns.enabled = true;
  options.edns.options.push_back({65001, bytes(65536, 0)});
  EXPECT_THROW(encode_query("a", rr_type::a, options), std::invalid_argument);
}

TEST(message_test, parse_rr_type_is_case_insensitive) {
  EXPECT_EQ(parse_rr_type("A"), rr_type::a);
  EXPECT_EQ(parse_rr_type("a"), rr_type::a);
  EXPECT_EQ(parse_rr_type("aaaa"), rr_type::aaaa);
  EXPECT_EQ(parse_rr_type("Https"), rr_type::https);
  EXPECT_EQ(parse_rr_type("dnsKEY"), rr_type::dnskey);
  EXPECT_EQ(parse_rr_type("caa"), 257);
}

TEST(message_test, parse_rr_type_numeric_form) {
  EXPECT_EQ(parse_rr_type("TYPE65"), 65);
  EXPECT_EQ(parse_rr_type("type1"), 1);
  EXPECT_EQ(parse_rr_type("TYPE0"), 0);
  EXPECT_EQ(parse_rr_type("TYPE65535"), 65535);
  EXPECT_EQ(parse_rr_type("TYPE065534"), 65534);
  EXPECT_EQ(parse_rr_type("TYPE65536"), std::nullopt);
  EXPECT_EQ(parse_rr_type("TYPE99999999999"), std::nullopt);
  EXPECT_EQ(parse_rr_type("TYPE"), std::nullopt);
  EXPECT_EQ(parse_rr_type("TYPE-1"), std::nullopt);
  EXPECT_EQ(parse_rr_type("TYPE+1"), std::nullopt);
  EXPECT_EQ(parse_rr_type("TYPE1x"), std::nullopt);
  EXPECT_EQ(parse_rr_type("AAAAA"), std::nullopt);
  EXPECT_EQ(parse_rr_type(""), std::nullopt);
  EXPECT_EQ(parse_rr_type(" A"), std::nullopt);
}

TEST(message_test, rr_type_mnemonics_round_trip) {
  for (const char* name :
       {"A",     "NS",    "CNAME",   "SOA",        "PTR",   "HINFO",      "MX",    "TXT",
        "RP",    "AFSDB", "SIG",     "KEY",        "AAAA",  "LOC",        "SRV",   "NAPTR",
        "KX",    "CERT",  "DNAME",   "OPT",        "APL",   "DS",         "SSHFP", "IPSECKEY",
        "RRSIG", "NSEC",  "DNSKEY",  "DHCID",      "NSEC3", "NSEC3PARAM", "TLSA",  "SMIMEA",
        "HIP",   "CDS",   "CDNSKEY", "OPENPGPKEY", "CSYNC", "ZONEMD",     "SVCB",  "HTTPS",
        "SPF",   "EUI48", "EUI64",   "TKEY",       "TSIG",  "IXFR",       "AXFR",  "ANY",
        "URI",   "CAA"}) {
    const auto type = parse_rr_type(name);
    ASSERT_TRUE(type.has_value()) << name;
    EXPECT_EQ(rr_type_name(*type), name);
  }
  EXPECT_EQ(parse_rr_type("SRV"), rr_type::srv);
  EXPECT_EQ(parse_rr_type("ANY"), rr_type::any);
  EXPECT_EQ(parse_rr_type("OPT"), rr_type::opt);
}

TEST(message_test, rr_type_name_falls_back_to_number) {
  EXPECT_EQ(rr_type_name(65534), "TYPE65534");
  EXPECT_EQ(rr_type_name(0), "TYPE0");
  for (unsigned type = 0; type <= 0xffff; ++type) {
    const auto parsed = parse_rr_type(rr_type_name(static_cast<std::uint16_t>(type)));
    ASSERT_EQ(parsed, type);
  }
}

TEST(message_test, rcode_names) {
  const char* expected[] = {"NOERROR",  "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED",
                            "YXDOMAIN", "YXRRSET", "NXRRSET",  "NOTAUTH",  "NOTZONE"};
  for (unsigned rcode = 0; rcode < std::size(expected); ++rcode) {
    EXPECT_EQ(rcode_name(rcode), expected[rcode]);
  }
  EXPECT_EQ(rcode_name(11), "RCODE11");
  EXPECT_EQ(rcode_name(23), "RCODE23");
}

TEST(message_test, verdict_names) {
  EXPECT_EQ(verdict_name(response_verdict::ok), "ok");
  EXPECT_EQ(verdict_name(response_verdict::too_short), "too_short");
  EXPECT_EQ(verdict_name(response_verdict::not_response), "not_response");
  EXPECT_EQ(verdict_name(response_verdict::wrong_id), "wrong_id");
  EXPECT_EQ(verdict_name(response_verdict::wrong_opcode), "wrong_opcode");
  EXPECT_EQ(verdict_name(response_verdict::wrong_question), "wrong_question");
  EXPECT_EQ(verdict_name(response_verdict::malformed), "malformed");
}

TEST(message_test, patch_and_read_id) {
  bytes query = encode_query("example.com", rr_type::a);
  patch_id(query.data(), 0xbeef);
  EXPECT_EQ(query[0], 0xbe);
  EXPECT_EQ(query[1], 0xef);
  EXPECT_EQ(read_id(query.data()), 0xbeef);
}

TEST(message_test, skip_name_walks_plain_and_compressed_names) {
  const bytes message = header(0, 0, 0, 0, 0, 0) + encode_name("example.com") + bytes{3} +
                        text("www") + bytes{0xc0, 12} + bytes{0};
  EXPECT_EQ(skip_name(message, 12), 25u);
  EXPECT_EQ(skip_name(message, 25), 31u);  // stops after the pointer, does not follow it back
  EXPECT_EQ(skip_name(message, 31), 32u);  // root
  EXPECT_EQ(skip_name(message, 32), std::nullopt);
  EXPECT_EQ(skip_name(message, 1000), std::nullopt);
}

TEST(message_test, skip_name_rejects_bad_names) {
  const bytes base = header(0, 0, 0, 0, 0, 0);
  // Label running past the end.
  EXPECT_EQ(skip_name(base + bytes{5, 'a', 'b'}, 12), std::nullopt);
  // Missing terminating root label.
  EXPECT_EQ(skip_name(base + bytes{1, 'a'}, 12), std::nullopt);
  // Pointer cut after its first octet.
  EXPECT_EQ(skip_name(base + bytes{1, 'a', 0xc0}, 12), std::nullopt);
  // Pointer to itself, and a label followed by a pointer back to it (a.a.a...).
  EXPECT_EQ(skip_name(base + bytes{0xc0, 12}, 12), std::nullopt);
  EXPECT_EQ(skip_name(base + bytes{1, 'a', 0xc0, 12}, 12), std::nullopt);
  // Two pointers pointing at each other.
  EXPECT_EQ(skip_name(base + bytes{0, 0xc0, 15, 0xc0, 13}, 15), std::nullopt);
  // Pointers forward, inside and past the end.
  EXPECT_EQ(skip_name(base + bytes{0xc0, 14, 0}, 12), std::nullopt);
  EXPECT_EQ(skip_name(base + bytes{0xc0, 0xff}, 12), std::nullopt);
  EXPECT_EQ(skip_name(base + bytes{0xff, 0xff}, 12), std::nullopt);
  // Reserved label types 0x40 and 0x80.
  EXPECT_EQ(skip_name(base + bytes{0x41, 'a', 0}, 12), std::nullopt);
  EXPECT_EQ(skip_name(base + bytes{0x81, 'a', 0}, 12), std::nullopt);
}

TEST(message_test, skip_name_rejects_names_over_255_octets) {
  bytes message = header(0, 0, 0, 0, 0, 0);
  for (int i = 0; i < 4; ++i) message = message + bytes{63} + bytes(63, 'x');
  message.push_back(0);
  EXPECT_EQ(skip_name(message, 12), std::nullopt);
  // The same length reached through a pointer: 3 * 64 + 64 + 1 octets.
  bytes tail = header(0, 0, 0, 0, 0, 0) + bytes{63} + bytes(63, 'y') + bytes{0};
  const std::size_t name_at = tail.size();
  for (int i = 0; i < 3; ++i) tail = tail + bytes{63} + bytes(63, 'x');
  tail = tail + bytes{0xc0, 12};
  EXPECT_EQ(skip_name(tail, name_at), std::nullopt);
  EXPECT_EQ(skip_name(tail, 12), 77u);
}

TEST(message_test, check_response_ok) {
  const bytes query = encode_query("www.example.com", rr_type::a);
  const auto summary = check_response(good_response(0x1234), query, 0x1234);
  EXPECT_EQ(summary.verdict, response_verdict::ok);
  EXPECT_EQ(summary.id, 0x1234);
  EXPECT_EQ(summary.rcode, 0);
  EXPECT_FALSE(summary.truncated);
  EXPECT_FALSE(summary.authenticated);
  EXPECT_EQ(summary.answer_count, 1);
}

TEST(message_test, check_response_reads_the_ad_bit) {
  const bytes query = encode_query("www.example.com", rr_type::a);
  bytes response = good_response(0x1234);
  response[3] |= 0x20;  // AD, beside RCODE in the fourth octet
  const auto summary = check_response(response, query, 0x1234);
  EXPECT_EQ(summary.verdict, response_verdict::ok);
  EXPECT_TRUE(summary.authenticated);
  EXPECT_EQ(summary.rcode, 0);
}

TEST(message_test, check_response_too_short) {
  const bytes query = encode_query("www.example.com", rr_type::a);
  const bytes response = good_response(0x4242);
  auto summary = check_response(std::span(response).first(11), query, 0x4242);
  EXPECT_EQ(summary.verdict, response_verdict::too_short);
  EXPECT_EQ(summary.id, 0x4242);
  summary = check_response(std::span(response).first(1), query, 0x4242);
  EXPECT_EQ(summary.verdict, response_verdict::too_short);
  EXPECT_EQ(summary.id, 0);
  EXPECT_EQ(check_response({}, query, 0).verdict, response_verdict::too_short);
}

TEST(message_test, check_response_not_response) {
  const bytes query = encode_query("www.example.com", rr_type::a);
  bytes echoed = query;
  patch_id(echoed.data(), 7);
  EXPECT_EQ(check_response(echoed, query, 7).verdict, response_verdict::not_response);
}

TEST(message_test, check_response_wrong_id) {
  const bytes query = encode_query("www.example.com", rr_type::a);
  const auto summary = check_response(good_response(8), query, 7);
  EXPECT_EQ(summary.verdict, response_verdict::wrong_id);
  EXPECT_EQ(summary.id, 8);
}

TEST(message_test, check_response_wrong_opcode) {
  const bytes query = encode_query("www.example.com", rr_type::a);
  // Opcode 2 (STATUS) in bits 3..6 of octet 2.
  EXPECT_EQ(check_response(good_response(1, response_flags | 0x1000), query, 1).verdict,
            response_verdict::wrong_opcode);
  // A NOTIFY query (opcode 4) answered with opcode 4 is fine.
  bytes notify = query;
  notify[2] |= 4 << 3;
  EXPECT_EQ(check_response(good_response(1, response_flags | 0x2000), notify, 1).verdict,
            response_verdict::ok);
}

TEST(message_test, check_response_wrong_question) {
  const bytes query = encode_query("www.example.com", rr_type::a);
  const auto with_question = [](const bytes& q) {
    return header(3, response_flags, 1, 1, 0, 0) + q + a_record_for_question();
  };
  EXPECT_EQ(check_response(with_question(question("www.example.org")), query, 3).verdict,
            response_verdict::wrong_question);
  EXPECT_EQ(check_response(with_question(question("example.com")), query, 3).verdict,
            response_verdict::wrong_question);
  EXPECT_EQ(check_response(with_question(question("www.example.com.x")), query, 3).verdict,
            response_verdict::wrong_question);
  EXPECT_EQ(
      check_response(with_question(question("www.example.com", rr_type::aaaa)), query, 3).verdict,
      response_verdict::wrong_question);
  EXPECT_EQ(
      check_response(with_question(question("www.example.com", rr_type::a, 3)), query, 3).verdict,
      response_verdict::wrong_question);
}

TEST(message_test, check_response_question_compare_ignores_ascii_case_only) {
  const bytes query = encode_query("www.example.com", rr_type::a);
  const bytes upper =
      header(3, response_flags, 1, 1, 0, 0) + question("WWW.Example.COM") + a_record_for_question();
  EXPECT_EQ(check_response(upper, query, 3).verdict, response_verdict::ok);

  // 0xc0 and 0xe0 differ by 0x20 like 'A' and 'a' but are not letters.
  const bytes binary_query = encode_query("\\192", rr_type::a);
  const bytes binary_response = header(3, response_flags, 1, 0, 0, 0) + question("\\224");
  EXPECT_EQ(check_response(binary_response, binary_query, 3).verdict,
            response_verdict::wrong_question);
}

TEST(message_test, check_response_follows_pointer_in_question) {
  // The root name compressed as a pointer to octet 4, the high octet of QDCOUNT (zero).
  const bytes query = encode_query(".", rr_type::ns);
  const bytes response =
      header(9, response_flags, 1, 0, 0, 0) + bytes{0xc0, 4} + u16(rr_type::ns) + u16(class_in);
  EXPECT_EQ(check_response(response, query, 9).verdict, response_verdict::ok);
}

TEST(message_test, check_response_missing_question) {
  const bytes query = encode_query("www.example.com", rr_type::a);
  const auto empty_question = [](unsigned rcode) {
    return header(5, static_cast<std::uint16_t>(response_flags | rcode), 0, 0, 0, 0);
  };
  EXPECT_EQ(check_response(empty_question(0), query, 5).verdict, response_verdict::wrong_question);
  EXPECT_EQ(check_response(empty_question(2), query, 5).verdict, response_verdict::wrong_question);
  EXPECT_EQ(check_response(empty_question(3), query, 5).verdict, response_verdict::wrong_question);
  for (unsigned rcode : {1u, 4u, 5u}) {
    const auto summary = check_response(empty_question(rcode), query, 5);
    EXPECT_EQ(summary.verdict, response_verdict::ok) << rcode;
    EXPECT_EQ(summary.rcode, rcode);
  }
  // A structural problem still wins.
  const bytes refused_broken =
      header(5, response_flags | 5, 0, 1, 0, 0) + bytes{0} + u16(1) + u16(1);
  EXPECT_EQ(check_response(refused_broken, query, 5).verdict, response_verdict::malformed);
}

TEST(message_test, check_response_query_without_question) {
  // A query from a wire file may have no question; any well-formed answer then echoes it.
  const bytes query = header(0, 0x0100, 0, 0, 0, 0);
  EXPECT_EQ(check_response(header(2, response_flags | 1, 0, 0, 0, 0), query, 2).verdict,
            response_verdict::ok);
  EXPECT_EQ(check_response(good_response(2), query, 2).verdict, response_verdict::ok);
}

TEST(message_test, check_response_reports_tc_rcode_and_answer_count) {
  const bytes query = encode_query("www.example.com", rr_type::a);
  const bytes truncated =
      header(6, response_flags | 0x0200, 1, 0, 0, 0) + question("www.example.com");
  auto summary = check_response(truncated, query, 6);
  EXPECT_EQ(summary.verdict, response_verdict::ok);
  EXPECT_TRUE(summary.truncated);
  EXPECT_EQ(summary.answer_count, 0);

  const bytes nxdomain = header(6, response_flags | 3, 1, 0, 1, 0) + question("www.example.com") +
                         bytes{0xc0, 16} + u16(rr_type::soa) + u16(class_in) + bytes{0, 0, 0, 60} +
                         u16(2) + bytes{0, 0};
  summary = check_response(nxdomain, query, 6);
  EXPECT_EQ(summary.verdict, response_verdict::ok);
  EXPECT_EQ(summary.rcode, 3);
  EXPECT_FALSE(summary.truncated);

  bytes three = header(6, response_flags | 2, 1, 3, 0, 0) + question("www.example.com");
  for (int i = 0; i < 3; ++i) three = three + a_record_for_question();
  summary = check_response(three, query, 6);
  EXPECT_EQ(summary.verdict, response_verdict::ok);
  EXPECT_EQ(summary.rcode, 2);
  EXPECT_EQ(summary.answer_count, 3);
}

TEST(message_test, check_response_walks_all_sections) {
  query_options options;
  options.edns.enabled = true;
  const bytes query = encode_query("www.example.com", rr_type::a, options);
  const bytes ns_record = bytes{0xc0, 16} + u16(rr_type::ns) + u16(class_in) + bytes{0, 0, 0, 60} +
                          u16(6) + bytes{3, 'n', 's', '1', 0xc0, 16};
  const bytes opt_record = bytes{0} + u16(rr_type::opt) + u16(1232) + bytes{0, 0, 0, 0} + u16(0);
  const bytes response = header(4, response_flags, 1, 1, 1, 1) + question("www.example.com") +
                         a_record_for_question() + ns_record + opt_record;
  EXPECT_EQ(check_response(response, query, 4).verdict, response_verdict::ok);
  // Trailing octets after the last record are tolerated.
  EXPECT_EQ(check_response(response + bytes{0xde, 0xad}, query, 4).verdict, response_verdict::ok);
  // Every proper prefix cuts a record or the question short. Each is copied into a buffer of
  // its own size so that AddressSanitizer catches a read past its end.
  for (std::size_t size = 12; size < response.size(); ++size) {
    const bytes prefix(response.begin(), response.begin() + static_cast<std::ptrdiff_t>(size));
    EXPECT_EQ(check_response(prefix, query, 4).verdict, response_verdict::malformed) << size;
  }
}

TEST(message_test, check_response_survives_corrupted_responses) {
  const bytes query = encode_query("www.example.com", rr_type::a);
  const bytes ns_record = bytes{0xc0, 16} + u16(rr_type::ns) + u16(class_in) + bytes{0, 0, 0, 60} +
                          u16(6) + bytes{3, 'n', 's', '1', 0xc0, 16};
  const bytes original = header(4, response_flags, 1, 1, 1, 0) + question("www.example.com") +
                         a_record_for_question() + ns_record;
  // Deterministic corruption: overwrite one or two octets, then cut the message somewhere.
  // The verdict does not matter here; AddressSanitizer checks that no read leaves the buffer.
  std::uint32_t state = 12345;
  const auto next = [&state] {
    state = state * 1103515245u + 12345u;
    return state >> 8;
  };
  int ok_count = 0;
  for (int round = 0; round < 20000; ++round) {
    bytes corrupted = original;
    for (int edits = 1 + static_cast<int>(next() % 2); edits > 0; --edits) {
      corrupted[next() % corrupted.size()] = static_cast<std::uint8_t>(next());
    }
    const bytes cut(corrupted.begin(), corrupted.begin() + static_cast<std::ptrdiff_t>(
                                                               next() % (corrupted.size() + 1)));
    if (check_response(cut, query, 4).verdict == response_verdict::ok) ++ok_count;
  }
  EXPECT_GT(ok_count, 0);
}

TEST(message_test, check_response_malformed) {
  const bytes query = encode_query("www.example.com", rr_type::a);
  const bytes head = header(1, response_flags, 1, 1, 0, 0);
  const bytes good_question = question("www.example.com");
  const auto record_with_owner = [](const bytes& owner) {
    return owner + u16(rr_type::a) + u16(class_in) + bytes{0, 0, 0, 1} + u16(4) +
           bytes{192, 0, 2, 1};
  };
  const std::size_t answer_at = 12 + good_question.size();
  const auto at = static_cast<std::uint8_t>(answer_at);

  // Compression pointer loops: to itself, and a label pointing back at itself.
  EXPECT_EQ(check_response(head + good_question + record_with_owner({0xc0, at}), query, 1).verdict,
            response_verdict::malformed);
  EXPECT_EQ(check_response(head + good_question + record_with_owner({1, 'a', 0xc0, at}), query, 1)
                .verdict,
            response_verdict::malformed);
  // Pointer forward past the end.
  EXPECT_EQ(
      check_response(head + good_question + record_with_owner({0xc0, 0xf0}), query, 1).verdict,
      response_verdict::malformed);
  // RDLENGTH running past the end.
  const bytes long_rdata = head + good_question + bytes{0xc0, 12} + u16(rr_type::a) +
                           u16(class_in) + bytes{0, 0, 0, 1} + u16(5) + bytes{192, 0, 2, 1};
  EXPECT_EQ(check_response(long_rdata, query, 1).verdict, response_verdict::malformed);
  // Fixed part cut short.
  EXPECT_EQ(check_response(head + good_question + bytes{0xc0, 12, 0, 1, 0, 1}, query, 1).verdict,
            response_verdict::malformed);
  // ANCOUNT promises more records than there are.
  const bytes missing_record =
      header(1, response_flags, 1, 2, 0, 0) + good_question + a_record_for_question();
  EXPECT_EQ(check_response(missing_record, query, 1).verdict, response_verdict::malformed);
  // Question without type and class.
  EXPECT_EQ(check_response(header(1, response_flags, 1, 0, 0, 0) + encode_name("www.example.com"),
                           query, 1)
                .verdict,
            response_verdict::malformed);
  // QDCOUNT promising a second question.
  EXPECT_EQ(check_response(header(1, response_flags, 2, 0, 0, 0) + good_question, query, 1).verdict,
            response_verdict::malformed);
}

TEST(message_test, check_response_malformed_wins_over_wrong_question) {
  const bytes query = encode_query("www.example.com", rr_type::a);
  // Unparseable question: label length past the end.
  const bytes bad_question = header(1, response_flags, 1, 0, 0, 0) + bytes{40, 'w', 'w', 'w'};
  EXPECT_EQ(check_response(bad_question, query, 1).verdict, response_verdict::malformed);
  // Question that loops.
  const bytes looping_question =
      header(1, response_flags, 1, 0, 0, 0) + bytes{0xc0, 12} + u16(1) + u16(1);
  EXPECT_EQ(check_response(looping_question, query, 1).verdict, response_verdict::malformed);
  // Wrong question and a broken record after it.
  const bytes both =
      header(1, response_flags, 1, 1, 0, 0) + question("other.example") + bytes{0xc0, 12} + u16(1);
  EXPECT_EQ(check_response(both, query, 1).verdict, response_verdict::malformed);
}

TEST(message_test, check_response_several_questions_compares_the_first) {
  const bytes query = encode_query("www.example.com", rr_type::a);
  const bytes second_compressed = bytes{3, 'f', 'o', 'o', 0xc0, 16} + u16(1) + u16(1);
  const bytes response =
      header(1, response_flags, 2, 0, 0, 0) + question("www.example.com") + second_compressed;
  EXPECT_EQ(check_response(response, query, 1).verdict, response_verdict::ok);
  const bytes swapped = header(1, response_flags, 2, 0, 0, 0) + question("foo.example.com") +
                        question("www.example.com");
  EXPECT_EQ(check_response(swapped, query, 1).verdict, response_verdict::wrong_question);
}

TEST(message_test, udp_answer_limit_is_512_or_the_edns_payload_size) {
  EXPECT_EQ(udp_answer_limit(encode_query("www.example.com", rr_type::a)), 512u);
  query_options edns;
  edns.edns.enabled = true;
  edns.edns.udp_payload_size = 1232;
  EXPECT_EQ(udp_answer_limit(encode_query("www.example.com", rr_type::a, edns)), 1232u);
  edns.edns.udp_payload_size = 4096;
  edns.edns.options.push_back({10, bytes(8, 0x11)});  // a cookie before the size is read
  EXPECT_EQ(udp_answer_limit(encode_query("www.example.com", rr_type::a, edns)), 4096u);
  // RFC 6891 6.2.5: a size below 512 is treated as 512.
  edns.edns.udp_payload_size = 100;
  EXPECT_EQ(udp_answer_limit(encode_query("www.example.com", rr_type::a, edns)), 512u);
  // An OPT record outside the additional section is not the requestor's.
  const bytes opt_as_answer = header(0, 0x0100, 1, 1, 0, 0) + question("example.com") + bytes{0} +
                              u16(rr_type::opt) + u16(4096) + u16(0) + u16(0) + u16(0);
  EXPECT_EQ(udp_answer_limit(opt_as_answer), 512u);
  const bytes opt_additional = header(0, 0x0100, 1, 0, 0, 1) + question("example.com") + bytes{0} +
                               u16(rr_type::opt) + u16(2048) + u16(0) + u16(0) + u16(0);
  EXPECT_EQ(udp_answer_limit(opt_additional), 2048u);
  // Broken or short queries allow 512; nothing is read past the end.
  EXPECT_EQ(udp_answer_limit(bytes{1, 2, 3}), 512u);
  const bytes cut(opt_additional.begin(), opt_additional.end() - 7);
  EXPECT_EQ(udp_answer_limit(cut), 512u);
}

}  // namespace
}  // namespace dnstransport
