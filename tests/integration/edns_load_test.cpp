// EDNS options real clients send, against the built-in responder over loopback:
// edns-tcp-keepalive (RFC 7828) advertised back over TCP, TLS and DoH, answers padded (RFC
// 7830, RFC 8467) over TLS, DoH and DoQ, and clients that honour the advertised timeout.
#include <dnstransport/load.hpp>

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <dnstransport/error.hpp>
#include <dnstransport/message.hpp>
#include <dnstransport/query_source.hpp>
#include <dnstransport/report.hpp>
#include <dnstransport/server.hpp>

#include "scratch_dir.hpp"

namespace dnstransport {
namespace {

using hostile::scratch_directory;

std::string transport_param_name(const ::testing::TestParamInfo<transport_kind>& param) {
  return std::string(transport_name(param.param));
}

server_options listening_on(transport_kind t) {
  server_options o;
  o.listen[t] = endpoint{"127.0.0.1", 0};
  o.certificate_directory = scratch_directory("edns_load_test");
  return o;
}

load_spec edns_spec_for(const server& s, transport_kind t) {
  load_spec spec;
  spec.target.transport = t;
  spec.target.port = s.port(t);
  if (t == transport_kind::doq) spec.tls.backend = tls_backend::gnutls;
  // The responder answers everything: a long timeout costs nothing and no busy machine
  // turns an answer into a loss.
  spec.traffic.timeout_seconds = 10;
  return spec;
}

// Padding: every transport with connections (answers padded where encrypted).
class edns_stream_test : public ::testing::TestWithParam<transport_kind> {};

TEST_P(edns_stream_test, padded_queries_get_answers_padded_to_468_where_encrypted) {
  server responder(listening_on(GetParam()));
  load_spec spec = edns_spec_for(responder, GetParam());
  spec.traffic.clients = 2;
  spec.traffic.count = 300;
  spec.traffic.edns_keepalive = GetParam() != transport_kind::doq;
  spec.traffic.edns_padding_block = 128;
  const run_result r = run_load(spec);
  ASSERT_EQ(r.responses_received, 300u);
  EXPECT_EQ(r.edns.padding_block, 128);
  if (GetParam() == transport_kind::tcp) {
    // In clear: the responder does not pad, and the run says the padding hid nothing.
    EXPECT_EQ(r.edns.padded_answers, 0u);
    EXPECT_TRUE(r.edns.padded_sizes.empty());
    ASSERT_FALSE(r.warnings.empty());
    EXPECT_NE(r.warnings.front().find("load_spec::traffic.edns_padding_block"), std::string::npos);
    return;
  }
  EXPECT_EQ(r.edns.padded_answers, 300u);
  std::uint64_t in_sizes = 0;
  for (const auto& [size, n] : r.edns.padded_sizes) {
    EXPECT_EQ(size % 468, 0u) << size;
    in_sizes += n;
  }
  EXPECT_EQ(in_sizes, 300u);
  // The built-in answers are short: one block each.
  EXPECT_EQ(r.edns.padded_sizes.size(), 1u);
  EXPECT_EQ(r.edns.padded_sizes.begin()->first, 468u);
  if (GetParam() != transport_kind::doq) {
    EXPECT_EQ(r.edns.keepalive_answers, 300u);
  }
}

TEST_P(edns_stream_test, edns_figures_survive_the_json_round_trip) {
  server_options o = listening_on(GetParam());
  o.keepalive_timeout_seconds = 0.7;
  server responder(o);
  load_spec spec = edns_spec_for(responder, GetParam());
  spec.traffic.count = 50;
  spec.traffic.edns_keepalive = GetParam() != transport_kind::doq;
  spec.traffic.edns_padding_block = 64;
  const run_result r = run_load(spec);
  const std::string text = to_json(r);
  const run_result back = run_result_from_json(text, "edns.json");
  EXPECT_EQ(back.edns.keepalive_sent, r.edns.keepalive_sent);
  EXPECT_EQ(back.edns.padding_block, 64);
  EXPECT_EQ(back.edns.keepalive_answers, r.edns.keepalive_answers);
  EXPECT_EQ(back.edns.keepalive_min_seconds, r.edns.keepalive_min_seconds);
  EXPECT_EQ(back.edns.keepalive_max_seconds, r.edns.keepalive_max_seconds);
  EXPECT_EQ(back.edns.padded_answers, r.edns.padded_answers);
  EXPECT_EQ(back.edns.padded_sizes, r.edns.padded_sizes);
  EXPECT_EQ(back.connections.closed_idle_keepalive, r.connections.closed_idle_keepalive);
  EXPECT_EQ(to_json(back), text);
  // The table says it too.
  const std::string table = format_table(r);
  if (spec.traffic.edns_keepalive) {
    EXPECT_NE(table.find("0.7 to 0.7 s"), std::string::npos) << table;
  }
  if (GetParam() != transport_kind::tcp) {
    EXPECT_NE(table.find("468 octets 50"), std::string::npos) << table;
  }
}

#ifdef DNSTRANSPORT_HAVE_DOQ
constexpr transport_kind edns_transports[] = {transport_kind::tcp, transport_kind::tls,
                                              transport_kind::doh, transport_kind::doq};
#else
constexpr transport_kind edns_transports[] = {transport_kind::tcp, transport_kind::tls,
                                              transport_kind::doh};
#endif

INSTANTIATE_TEST_SUITE_P(edns_load_test, edns_stream_test, ::testing::ValuesIn(edns_transports),
                         transport_param_name);

// Keepalive: the stream transports, the only ones it is allowed on.
class keepalive_test : public ::testing::TestWithParam<transport_kind> {};

TEST_P(keepalive_test, every_answer_advertises_the_responders_keepalive) {
  server_options o = listening_on(GetParam());
  o.keepalive_timeout_seconds = 2.5;
  server responder(o);
  load_spec spec = edns_spec_for(responder, GetParam());
  spec.traffic.clients = 2;
  spec.traffic.outstanding = 10;
  spec.traffic.count = 300;
  spec.traffic.edns_keepalive = true;
  const run_result r = run_load(spec);
  EXPECT_EQ(r.responses_received, 300u);
  EXPECT_TRUE(r.edns.keepalive_sent);
  EXPECT_EQ(r.edns.keepalive_answers, 300u);
  EXPECT_EQ(r.edns.keepalive_min_seconds, 2.5);
  EXPECT_EQ(r.edns.keepalive_max_seconds, 2.5);
  EXPECT_EQ(r.edns.padded_answers, 0u);  // not asked
  EXPECT_EQ(r.malformed, 0u);
  EXPECT_EQ(r.connections.closed_idle_keepalive, 0u);
}

// One client, four queries half a second apart, a server that advertises 0.2 s: the client
// closes its idle connection after each of the first three answers and opens a new one for
// the next query; after the fourth it is done and closes as it always does.
TEST_P(keepalive_test, idle_connections_close_after_the_advertised_timeout) {
  server_options o = listening_on(GetParam());
  o.keepalive_timeout_seconds = 0.2;
  server responder(o);
  load_spec spec = edns_spec_for(responder, GetParam());
  spec.traffic.clients = 1;
  spec.traffic.count = 4;
  spec.traffic.rate = 2;
  spec.traffic.edns_keepalive = true;
  spec.connections.honour_keepalive = true;
  const run_result r = run_load(spec);
  EXPECT_EQ(r.responses_received, 4u);
  EXPECT_EQ(r.connections.opened, 4u);
  EXPECT_EQ(r.connections.closed_idle_keepalive, 3u);
  EXPECT_EQ(r.connections.closed_by_client, 1u);  // the last, at the end of the run
  EXPECT_EQ(r.connections.closed_by_server, 0u);
  EXPECT_EQ(r.edns.keepalive_answers, 4u);

  // Not honoured: one connection carries the four queries.
  spec.connections.honour_keepalive = false;
  const run_result kept = run_load(spec);
  EXPECT_EQ(kept.responses_received, 4u);
  EXPECT_EQ(kept.connections.opened, 1u);
  EXPECT_EQ(kept.connections.closed_idle_keepalive, 0u);
}

// A timeout longer than the gaps never closes a connection.
TEST_P(keepalive_test, busy_connections_stay_open) {
  server_options o = listening_on(GetParam());
  o.keepalive_timeout_seconds = 2;
  server responder(o);
  load_spec spec = edns_spec_for(responder, GetParam());
  spec.traffic.clients = 2;
  spec.traffic.count = 20;
  spec.traffic.rate = 40;
  spec.traffic.edns_keepalive = true;
  spec.connections.honour_keepalive = true;
  const run_result r = run_load(spec);
  EXPECT_EQ(r.responses_received, 20u);
  EXPECT_EQ(r.connections.opened, 2u);
  EXPECT_EQ(r.connections.closed_idle_keepalive, 0u);
}

INSTANTIATE_TEST_SUITE_P(edns_load_test, keepalive_test,
                         ::testing::Values(transport_kind::tcp, transport_kind::tls,
                                           transport_kind::doh),
                         transport_param_name);

// Queries that carry an OPT record of their own (a wire file's, say): the options go into
// it, the cookie stays, and every query is padded all the same.
TEST(edns_load_test, queries_with_their_own_opt_record_take_the_options) {
  server responder(listening_on(transport_kind::tls));
  load_spec spec = edns_spec_for(responder, transport_kind::tls);
  query_options options;
  options.edns.enabled = true;
  options.edns.dnssec_ok = true;
  options.edns.options.push_back({10, {1, 2, 3, 4, 5, 6, 7, 8}});  // a client cookie
  auto queries = std::make_shared<query_set>(default_queries(options));
  queries->set_origin("cookies.raw");
  spec.traffic.queries = queries;
  spec.traffic.count = 400;
  spec.traffic.edns_keepalive = true;
  spec.traffic.edns_padding_block = 128;
  const run_result r = run_load(spec);
  EXPECT_EQ(r.responses_received, 400u);
  EXPECT_EQ(r.edns.keepalive_answers, 400u);
  EXPECT_EQ(r.edns.padded_answers, 400u);
  EXPECT_EQ(r.query_origin, "cookies.raw");

  // A signed query cannot take them: refused before anything is sent, naming the query.
  auto signed_queries = std::make_shared<query_set>();
  std::vector<std::uint8_t> tsig = encode_query("example.com", rr_type::a);
  tsig[11] = 1;  // ARCOUNT: one TSIG record, root owner, no data
  for (const std::uint8_t octet : {0, 0, 250, 0, 255, 0, 0, 0, 0, 0, 0}) tsig.push_back(octet);
  signed_queries->add(encode_query("example.org", rr_type::a));
  signed_queries->add(tsig);
  signed_queries->set_origin("signed.raw");
  spec.traffic.queries = signed_queries;
  try {
    run_load(spec);
    ADD_FAILURE() << "a TSIG-signed query was padded";
  } catch (const setup_error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("load_spec::traffic.edns_padding_block"), std::string::npos) << message;
    EXPECT_NE(message.find("query 2 of signed.raw"), std::string::npos) << message;
    EXPECT_NE(message.find("TSIG"), std::string::npos) << message;
  }
}

// An echo server sends each query back: its empty keepalive option advertises nothing, and
// its padding option makes the "answer" padded to the query's block.
TEST(edns_load_test, echoed_options_are_read_as_they_are) {
  server_options o = listening_on(transport_kind::tls);
  o.mode = answer_mode::echo;
  server responder(o);
  load_spec spec = edns_spec_for(responder, transport_kind::tls);
  spec.traffic.count = 200;
  spec.traffic.edns_keepalive = true;
  spec.traffic.edns_padding_block = 128;
  const run_result r = run_load(spec);
  EXPECT_EQ(r.responses_received, 200u);
  EXPECT_EQ(r.malformed, 0u);
  EXPECT_EQ(r.edns.keepalive_answers, 0u);
  EXPECT_EQ(r.edns.keepalive_min_seconds, 0);
  EXPECT_EQ(r.edns.padded_answers, 200u);
  for (const auto& [size, n] : r.edns.padded_sizes) EXPECT_EQ(size % 128, 0u) << size;
}

TEST(edns_load_test, keepalive_where_rfcs_forbid_it_is_refused) {
  load_spec spec;
  spec.target.port = 53;
  spec.traffic.edns_keepalive = true;
  for (const auto t : {transport_kind::udp, transport_kind::doq}) {
    spec.target.transport = t;
    if (t == transport_kind::doq) spec.tls.backend = tls_backend::gnutls;
    try {
      validate(spec);
      ADD_FAILURE() << transport_name(t) << " accepted --edns-keepalive";
    } catch (const setup_error& e) {
      EXPECT_NE(std::string(e.what()).find("load_spec::traffic.edns_keepalive applies to"),
                std::string::npos)
          << e.what();
    }
  }
  spec.target.transport = transport_kind::tcp;
  spec.traffic.edns_keepalive = false;
  spec.connections.honour_keepalive = true;
  try {
    validate(spec);
    ADD_FAILURE() << "--honour-keepalive accepted without --edns-keepalive";
  } catch (const setup_error& e) {
    EXPECT_NE(std::string(e.what()).find("load_spec::connections.honour_keepalive needs"),
              std::string::npos)
        << e.what();
  }
}

TEST(edns_load_test, padding_flag_syntax) {
  EXPECT_EQ(parse_edns_padding("block:128"), 128);
  EXPECT_EQ(parse_edns_padding("block:1"), 1);
  EXPECT_EQ(parse_edns_padding("block:65535"), 65535);
  EXPECT_EQ(parse_edns_padding("none"), 0);
  for (const char* bad : {"128", "block:", "block:0", "block:65536", "block:12x", "block:-1",
                          "Block:128", "block: 128", ""}) {
    try {
      parse_edns_padding(bad);
      ADD_FAILURE() << "accepted \"" << bad << "\"";
    } catch (const setup_error& e) {
      EXPECT_NE(std::string(e.what()).find("load_spec::traffic.edns_padding_block"),
                std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace dnstransport
