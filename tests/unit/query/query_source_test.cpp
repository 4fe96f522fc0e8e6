#include <dnstransport/query_source.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <dnstransport/error.hpp>

#include "error_text.hpp"
#include "wire_bytes.hpp"

namespace dnstransport {
namespace {

using error_text::contains;
using error_text::setup_error_of;
using wire_bytes::bytes;
using wire_bytes::to_bytes;

// Each query as a length-prefixed wire record.
bytes wire_stream(const std::vector<bytes>& queries) {
  bytes out;
  for (const auto& query : queries) {
    out.push_back(static_cast<std::uint8_t>(query.size() >> 8));
    out.push_back(static_cast<std::uint8_t>(query.size() & 0xff));
    out.insert(out.end(), query.begin(), query.end());
  }
  return out;
}

class query_source_file_test : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::path(::testing::TempDir()) /
           (std::string("dnstransport_query_source_") + info->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path write_file(const std::string& name, std::string_view contents) {
    const auto path = dir_ / name;
    std::ofstream(path, std::ios::binary)
        .write(contents.data(), static_cast<std::streamsize>(contents.size()));
    return path;
  }

  std::filesystem::path dir_;
};

TEST(query_source_test, add_checks_sizes_and_tracks_max) {
  query_set queries;
  EXPECT_TRUE(queries.empty());
  EXPECT_THROW(queries.add(bytes(11, 0)), std::invalid_argument);
  EXPECT_THROW(queries.add(bytes(65536, 0)), std::invalid_argument);
  queries.add(bytes(12, 1));
  queries.add(bytes(40, 2));
  queries.add(bytes(65535, 3));
  queries.add(bytes(20, 4));
  ASSERT_EQ(queries.size(), 4u);
  EXPECT_FALSE(queries.empty());
  EXPECT_EQ(queries.max_size(), 65535u);
  EXPECT_EQ(to_bytes(queries[1]), bytes(40, 2));
  EXPECT_EQ(to_bytes(queries[3]), bytes(20, 4));
  queries.set_origin("here");
  EXPECT_EQ(queries.origin(), "here");
}

TEST(query_source_test, text_basic_and_default_type) {
  const auto queries = parse_text_queries("www.example.com AAAA\nexample.org\n", "q.txt");
  ASSERT_EQ(queries.size(), 2u);
  EXPECT_EQ(to_bytes(queries[0]), encode_query("www.example.com", rr_type::aaaa));
  EXPECT_EQ(to_bytes(queries[1]), encode_query("example.org", rr_type::a));
  EXPECT_EQ(queries.origin(), "q.txt");
  EXPECT_EQ(queries.max_size(), queries[0].size());
}

TEST(query_source_test, text_comments_blank_lines_and_whitespace) {
  const std::string_view text =
      "; a comment line\n"
      "\n"
      "   \t  \n"
      "  example.com   MX   ; trailing comment\n"
      "\texample.net\ttxt\n"
      "example.org;comment right after the name\n"
      "    ; indented comment\n"
      "last.example type65";  // no final newline
  const auto queries = parse_text_queries(text, "q.txt");
  ASSERT_EQ(queries.size(), 4u);
  EXPECT_EQ(to_bytes(queries[0]), encode_query("example.com", rr_type::mx));
  EXPECT_EQ(to_bytes(queries[1]), encode_query("example.net", rr_type::txt));
  EXPECT_EQ(to_bytes(queries[2]), encode_query("example.org", rr_type::a));
  EXPECT_EQ(to_bytes(queries[3]), encode_query("last.example", 65));
}

TEST(query_source_test, text_crlf_line_endings) {
  const auto queries =
      parse_text_queries("a.example A\r\n\r\nb.example\r\n; c\r\nc.example NS ; x\r\n", "q.txt");
  ASSERT_EQ(queries.size(), 3u);
  EXPECT_EQ(to_bytes(queries[0]), encode_query("a.example", rr_type::a));
  EXPECT_EQ(to_bytes(queries[1]), encode_query("b.example", rr_type::a));
  EXPECT_EQ(to_bytes(queries[2]), encode_query("c.example", rr_type::ns));
}

TEST(query_source_test, text_escaped_semicolon_and_space_stay_in_name) {
  const auto queries = parse_text_queries("a\\;b.example TXT\nc\\ d.example\n", "q.txt");
  ASSERT_EQ(queries.size(), 2u);
  EXPECT_EQ(to_bytes(queries[0]), encode_query("a\\;b.example", rr_type::txt));
  EXPECT_EQ(to_bytes(queries[1]), encode_query("c\\ d.example", rr_type::a));
}

TEST(query_source_test, text_applies_query_options) {
  query_options options;
  options.recursion_desired = false;
  options.edns.enabled = true;
  options.edns.dnssec_ok = true;
  const auto queries = parse_text_queries("example.com DNSKEY\n", "q.txt", options);
  ASSERT_EQ(queries.size(), 1u);
  EXPECT_EQ(to_bytes(queries[0]), encode_query("example.com", rr_type::dnskey, options));
}

TEST(query_source_test, text_unknown_type_names_line) {
  const std::string text = "ok.example A\n; comment\nbad.example AAAAA\n";
  const auto message = setup_error_of([&] { parse_text_queries(text, "queries.txt"); });
  EXPECT_EQ(message, "queries.txt:3: unknown record type \"AAAAA\"");
}

TEST(query_source_test, text_bad_name_names_line_and_problem) {
  const auto message =
      setup_error_of([] { parse_text_queries("\r\nfine.example\r\na..b A\r\n", "queries.txt"); });
  EXPECT_EQ(message, "queries.txt:3: bad name \"a..b\": empty label");
  const auto escape = setup_error_of([] { parse_text_queries("\\256.example\n", "queries.txt"); });
  EXPECT_TRUE(contains(escape, "queries.txt:1: bad name \"\\256.example\"")) << escape;
  EXPECT_TRUE(contains(escape, "over 255")) << escape;
}

TEST(query_source_test, text_too_many_fields) {
  const auto message =
      setup_error_of([] { parse_text_queries("a.example\nexample.com IN A\n", "queries.txt"); });
  EXPECT_TRUE(contains(message, "queries.txt:2:")) << message;
  EXPECT_TRUE(contains(message, "3 fields")) << message;
}

TEST(query_source_test, text_without_queries) {
  for (std::string_view text : {"", "\n\n", "; only\n  ; comments\r\n"}) {
    EXPECT_EQ(setup_error_of([&] { parse_text_queries(text, "queries.txt"); }),
              "queries.txt: no queries found");
  }
}

TEST(query_source_test, wire_parse) {
  const bytes first = encode_query("a.example", rr_type::a);
  const bytes second_query = encode_query("b.example", rr_type::aaaa);
  const auto queries = parse_wire_queries(wire_stream({first, second_query}), "q.raw");
  ASSERT_EQ(queries.size(), 2u);
  EXPECT_EQ(to_bytes(queries[0]), first);
  EXPECT_EQ(to_bytes(queries[1]), second_query);
  EXPECT_EQ(queries.origin(), "q.raw");
}

TEST(query_source_test, wire_short_record) {
  const bytes first = encode_query("a.example", rr_type::a);
  const bytes stream = wire_stream({first, bytes(5, 0)});
  EXPECT_EQ(setup_error_of([&] { parse_wire_queries(stream, "file.raw"); }),
            "file.raw: query 2 at byte " + std::to_string(first.size() + 2) +
                ": length 5 is shorter than a DNS header");
}

TEST(query_source_test, wire_truncated_record) {
  const bytes first = encode_query("a.example", rr_type::a);
  bytes stream = wire_stream({first});
  const std::size_t second_at = stream.size();
  stream.push_back(0x01);
  stream.push_back(0x2c);  // 300
  stream.insert(stream.end(), 20, 0);
  EXPECT_EQ(setup_error_of([&] { parse_wire_queries(stream, "file.raw"); }),
            "file.raw: query 2 at byte " + std::to_string(second_at) +
                ": truncated: length 300 but only 20 bytes left");
}

TEST(query_source_test, wire_truncated_length_prefix) {
  bytes stream = wire_stream({encode_query("a.example", rr_type::a)});
  stream.push_back(0);
  const auto message = setup_error_of([&] { parse_wire_queries(stream, "file.raw"); });
  EXPECT_TRUE(contains(message, "file.raw: query 2 at byte ")) << message;
  EXPECT_TRUE(contains(message, "truncated")) << message;
}

TEST(query_source_test, wire_empty) {
  EXPECT_EQ(setup_error_of([] { parse_wire_queries({}, "file.raw"); }),
            "file.raw: no queries found");
}

TEST_F(query_source_file_test, wire_round_trip) {
  const auto original = parse_text_queries("a.example\nb.example AAAA\nc.example MX\n", "q.txt");
  const auto path = dir_ / "queries.raw";
  save_wire_queries(original, path);
  EXPECT_EQ(std::filesystem::file_size(path),
            original[0].size() + original[1].size() + original[2].size() + 3 * 2);
  const auto loaded = load_query_file(path);
  ASSERT_EQ(loaded.size(), original.size());
  for (std::size_t i = 0; i < original.size(); ++i) {
    EXPECT_EQ(to_bytes(loaded[i]), to_bytes(original[i])) << i;
  }
  EXPECT_EQ(loaded.origin(), path.string());
}

TEST_F(query_source_file_test, automatic_format_by_extension) {
  const auto queries = parse_text_queries("x.example NS\n", "q.txt");
  for (const char* name : {"q.raw", "q.wire", "q.bin", "Q.RAW"}) {
    save_wire_queries(queries, dir_ / name);
    const auto loaded = load_query_file(dir_ / name);
    ASSERT_EQ(loaded.size(), 1u) << name;
    EXPECT_EQ(to_bytes(loaded[0]), to_bytes(queries[0])) << name;
  }
  for (const char* name : {"q.txt", "queries", "q.raw.txt"}) {
    const auto loaded = load_query_file(write_file(name, "x.example NS\n"));
    ASSERT_EQ(loaded.size(), 1u) << name;
    EXPECT_EQ(to_bytes(loaded[0]), to_bytes(queries[0])) << name;
  }
}

TEST_F(query_source_file_test, explicit_format_overrides_extension) {
  const auto queries = parse_text_queries("x.example SOA\n", "q.txt");
  save_wire_queries(queries, dir_ / "wire.txt");
  const auto wire = load_query_file(dir_ / "wire.txt", query_file_format::wire);
  ASSERT_EQ(wire.size(), 1u);
  EXPECT_EQ(to_bytes(wire[0]), to_bytes(queries[0]));

  const auto text =
      load_query_file(write_file("text.raw", "x.example SOA\n"), query_file_format::text);
  ASSERT_EQ(text.size(), 1u);
  EXPECT_EQ(to_bytes(text[0]), to_bytes(queries[0]));
}

TEST_F(query_source_file_test, text_file_uses_options_and_names_file_in_errors) {
  query_options options;
  options.edns.enabled = true;
  const auto loaded = load_query_file(write_file("q.txt", "example.com HTTPS\n"),
                                      query_file_format::automatic, options);
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_EQ(to_bytes(loaded[0]), encode_query("example.com", rr_type::https, options));

  const auto path = write_file("bad.txt", "a.example\nb.example BOGUS\n");
  EXPECT_EQ(setup_error_of([&] { load_query_file(path); }),
            path.string() + ":2: unknown record type \"BOGUS\"");
}

TEST_F(query_source_file_test, missing_file) {
  const auto path = dir_ / "does-not-exist.txt";
  EXPECT_EQ(setup_error_of([&] { load_query_file(path); }),
            "cannot read query file \"" + path.string() + "\": No such file or directory");
}

TEST_F(query_source_file_test, directory_is_an_error) {
  const auto message = setup_error_of([&] { load_query_file(dir_); });
  EXPECT_TRUE(contains(message, "cannot read query file \"" + dir_.string() + "\"")) << message;
}

TEST_F(query_source_file_test, empty_files) {
  const auto text = write_file("empty.txt", "");
  EXPECT_EQ(setup_error_of([&] { load_query_file(text); }), text.string() + ": no queries found");
  const auto wire = write_file("empty.raw", "");
  EXPECT_EQ(setup_error_of([&] { load_query_file(wire); }), wire.string() + ": no queries found");
}

TEST_F(query_source_file_test, truncated_wire_file) {
  const auto path = write_file("cut.raw", std::string("\x00\x20\x00\x00", 4));
  EXPECT_EQ(setup_error_of([&] { load_query_file(path); }),
            path.string() + ": query 1 at byte 0: truncated: length 32 but only 2 bytes left");
}

TEST_F(query_source_file_test, unwritable_path) {
  const auto path = dir_ / "no-such-dir" / "q.raw";
  const auto message = setup_error_of([&] { save_wire_queries(default_queries(), path); });
  EXPECT_EQ(message,
            "cannot write query file \"" + path.string() + "\": No such file or directory");
}

TEST(query_source_test, default_queries_are_valid_and_match_their_text) {
  const auto queries = default_queries();
  EXPECT_GE(queries.size(), 250u);
  EXPECT_EQ(queries.origin(), "built-in default set");

  const std::string text = default_queries_text();
  std::istringstream lines(text);
  std::string line;
  std::size_t i = 0;
  std::set<std::string> seen;
  std::map<std::string, std::size_t> type_counts;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string name;
    std::string type;
    std::string extra;
    ASSERT_TRUE(fields >> name >> type) << line;
    EXPECT_FALSE(fields >> extra) << line;
    EXPECT_TRUE(seen.insert(line).second) << "duplicate " << line;
    ++type_counts[type];
    const auto parsed_type = parse_rr_type(type);
    ASSERT_TRUE(parsed_type.has_value()) << line;
    ASSERT_LT(i, queries.size());
    EXPECT_EQ(to_bytes(queries[i]), encode_query(name, *parsed_type)) << line;

    // A response that just echoes the query with QR set is accepted by check_response.
    bytes response = to_bytes(queries[i]);
    response[2] |= 0x80;
    patch_id(response.data(), static_cast<std::uint16_t>(i));
    EXPECT_EQ(check_response(response, queries[i], static_cast<std::uint16_t>(i)).verdict,
              response_verdict::ok)
        << line;
    ++i;
  }
  EXPECT_EQ(i, queries.size());
  // Mostly A, a good share of AAAA, and a spread of other types.
  EXPECT_GT(type_counts["A"] * 2, queries.size());
  EXPECT_GT(type_counts["AAAA"] * 10, queries.size());
  EXPECT_GE(type_counts.size(), 8u);
}

TEST(query_source_test, default_queries_apply_options) {
  query_options options;
  options.edns.enabled = true;
  const auto plain = default_queries();
  const auto with_edns = default_queries(options);
  ASSERT_EQ(plain.size(), with_edns.size());
  for (std::size_t i = 0; i < plain.size(); ++i) {
    EXPECT_EQ(with_edns[i].size(), plain[i].size() + 11);
    EXPECT_EQ(with_edns[i][11], 1);  // ARCOUNT
  }
}

}  // namespace
}  // namespace dnstransport
