// The DoH client against an in-memory HTTP/2 server (no socket, no TLS: the scripted stream
// says its handshake agreed on h2): answers matched by stream, in any order, HTTP failures
// named by cause, RST_STREAM, GOAWAY with queries in flight, the server's stream limit,
// queries per connection, GET and POST, and cancelled streams. Every expectation is an exact
// count that follows from the script.
#include "transport/doh/doh_client.hpp"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "h2_server.hpp"
#include "misbehaviour.hpp"
#include "scripted_h2.hpp"
#include "scripted_run.hpp"
#include "transport/doh/doh_message.hpp"

namespace dnstransport::detail {
namespace {

using hostile::h2_request;
using scripted::h2_connection;
using scripted::h2_handler;
using scripted::h2_script;

struct doh_run {
  counters counts;
  scripted::h2_log log;
};

doh_run run_doh(const h2_script& script, const scripted::run_shape& shape, doh_settings doh = {},
                stream_settings stream = {}) {
  doh_run out;
  doh.authority = "dns.example";
  doh_transport transport(stream, std::move(doh), make_tcp_connector(),
                          scripted::make_h2_socket_factory(script, out.log));
  out.counts = scripted::run_on_one_worker(transport, shape);
  return out;
}

// A script whose every connection handles its requests with `handler`.
h2_script every_request(h2_handler handler) {
  h2_script script;
  script.handler_for_connection = [handler = std::move(handler)] { return handler; };
  return script;
}

std::uint64_t cause(const std::map<std::string, std::uint64_t>& counts, const std::string& name) {
  const auto it = counts.find(name);
  return it == counts.end() ? 0 : it->second;
}

void expect_all_answered(const doh_run& r, std::uint64_t count) {
  const query_counters& q = r.counts.queries;
  EXPECT_EQ(q.queries_sent, count);
  EXPECT_EQ(q.responses_received, count);
  EXPECT_EQ(q.lost + q.lost_on_close + q.malformed + q.mismatched + q.http_failed, 0u);
  EXPECT_EQ(r.log.requests, count);
}

TEST(doh_client_test, every_query_is_answered_on_its_own_stream) {
  const auto r = run_doh({}, {.count = 60, .clients = 2, .outstanding = 10});
  expect_all_answered(r, 60);
  EXPECT_EQ(r.log.posts, 60u);
  EXPECT_EQ(r.log.gets, 0u);
  EXPECT_EQ(r.log.most_open_streams, 10u);
  EXPECT_EQ(r.counts.connections.opened, 2u);
  EXPECT_EQ(r.counts.connections.answered, 60u);
  EXPECT_EQ(r.counts.connections.first_query_latency.count(), 2u);
  EXPECT_EQ(r.counts.connections.closed_by_client, 2u);
  EXPECT_EQ(r.counts.connections.goaway, 0u);
  EXPECT_EQ(r.counts.queries.out_of_order, 0u);
  EXPECT_EQ(r.log.connections, 2u);
  EXPECT_EQ(r.log.closed_by_client, 2u);
}

TEST(doh_client_test, post_sends_the_query_as_a_dns_message_body_with_id_0) {
  auto well_formed = std::make_shared<std::uint64_t>(0);
  const auto r = run_doh(every_request([well_formed](h2_connection& c, const h2_request& q) {
                           if (q.method == "POST" && q.path == "/dns-query" &&
                               q.content_type == doh_media_type && q.query.size() > 12 &&
                               q.query[0] == 0 && q.query[1] == 0) {
                             ++*well_formed;
                           }
                           c.answer(q);
                         }),
                         {.count = 20, .outstanding = 5});
  expect_all_answered(r, 20);
  EXPECT_EQ(*well_formed, 20u);
}

TEST(doh_client_test, get_carries_the_query_in_the_path_and_no_body) {
  auto well_formed = std::make_shared<std::uint64_t>(0);
  doh_settings doh;
  doh.use_get = true;
  const auto r = run_doh(every_request([well_formed](h2_connection& c, const h2_request& q) {
                           // The server decoded ?dns= into the query.
                           if (q.method == "GET" && q.path.starts_with("/dns-query?dns=") &&
                               q.content_type.empty() && q.query.size() > 12 && q.query[0] == 0 &&
                               q.query[1] == 0) {
                             ++*well_formed;
                           }
                           c.answer(q);
                         }),
                         {.count = 20, .outstanding = 5}, doh);
  expect_all_answered(r, 20);
  EXPECT_EQ(r.log.gets, 20u);
  EXPECT_EQ(r.log.posts, 0u);
  EXPECT_EQ(*well_formed, 20u);
}

TEST(doh_client_test, answers_in_reverse_order_are_matched_by_stream_and_counted_out_of_order) {
  // Requests held until five are in, then answered last first, each sent before the next.
  h2_script script;
  script.handler_for_connection = [] {
    return [held = std::vector<h2_request>()](h2_connection& c, const h2_request& q) mutable {
      held.push_back(q);
      if (held.size() < 5) return;
      for (auto it = held.rbegin(); it != held.rend(); ++it) {
        c.answer(*it);
        c.flush();
      }
      held.clear();
    };
  };
  // Ten rounds of five: in each, the last query's answer comes first, and the other four
  // arrive after a later one.
  const auto r = run_doh(script, {.count = 50, .outstanding = 5});
  expect_all_answered(r, 50);
  EXPECT_EQ(r.counts.queries.out_of_order, 40u);
}

TEST(doh_client_test, statuses_other_than_200_are_http_failures_named_by_code) {
  for (const unsigned status : {404u, 500u, 503u}) {
    SCOPED_TRACE(status);
    const auto r = run_doh(every_request([status](h2_connection& c, const h2_request& q) {
                             c.respond(q.stream_id, status, "text/plain", {'n', 'o'});
                           }),
                           {.count = 20, .outstanding = 5});
    EXPECT_EQ(r.counts.queries.queries_sent, 20u);
    EXPECT_EQ(r.counts.queries.responses_received, 0u);
    EXPECT_EQ(r.counts.queries.http_failed, 20u);
    EXPECT_EQ(cause(r.counts.queries.http_failures, "status_" + std::to_string(status)), 20u);
    EXPECT_EQ(r.counts.queries.lost + r.counts.queries.lost_on_close, 0u);
    EXPECT_EQ(r.counts.connections.opened, 1u);  // the connection stays usable
  }
}

// Each broken 200 response, and the cause it is counted under.
struct broken_response {
  const char* cause;
  h2_handler respond;
};

TEST(doh_client_test, broken_200_responses_are_http_failures_named_by_what_is_wrong) {
  const std::vector<broken_response> cases{
      {"content_type",
       [](h2_connection& c, const h2_request& q) {
         c.respond(q.stream_id, 200, "text/html", hostile::answer_to(q.query));
       }},
      {"empty_body", [](h2_connection& c,
                        const h2_request& q) { c.respond(q.stream_id, 200, doh_media_type, {}); }},
      {"content_length",
       [](h2_connection& c, const h2_request& q) {
         hostile::bytes answer = hostile::answer_to(q.query);
         const std::size_t claimed = answer.size() + 5;
         c.respond(q.stream_id, 200, doh_media_type, std::move(answer), claimed);
       }},
      {"no_status",
       [](h2_connection& c, const h2_request& q) {
         c.respond_with(q.stream_id, {{"content-type", std::string(doh_media_type)}},
                        hostile::answer_to(q.query));
       }},
  };
  for (const broken_response& b : cases) {
    SCOPED_TRACE(b.cause);
    const auto r = run_doh(every_request(b.respond), {.count = 20, .outstanding = 5});
    EXPECT_EQ(r.counts.queries.queries_sent, 20u);
    EXPECT_EQ(r.counts.queries.responses_received, 0u);
    EXPECT_EQ(r.counts.queries.http_failed, 20u);
    EXPECT_EQ(cause(r.counts.queries.http_failures, b.cause), 20u);
  }
}

TEST(doh_client_test, a_body_that_is_no_dns_message_is_malformed_as_over_any_transport) {
  const auto r = run_doh(every_request([](h2_connection& c, const h2_request& q) {
                           c.respond(q.stream_id, 200, doh_media_type, {1, 2, 3});
                         }),
                         {.count = 20, .outstanding = 5});
  EXPECT_EQ(r.counts.queries.malformed, 20u);
  EXPECT_EQ(r.counts.queries.http_failed, 0u);
}

TEST(doh_client_test, rst_stream_fails_those_queries_only) {
  // One connection: requests 2, 5, ..., 29 reset, the twenty others answered.
  const auto r = run_doh(every_request([](h2_connection& c, const h2_request& q) {
                           if (q.number % 3 == 2) {
                             c.reset(q.stream_id);
                           } else {
                             c.answer(q);
                           }
                         }),
                         {.count = 30, .outstanding = 10});
  EXPECT_EQ(r.counts.queries.queries_sent, 30u);
  EXPECT_EQ(r.counts.queries.responses_received, 20u);
  EXPECT_EQ(r.counts.queries.http_failed, 10u);
  EXPECT_EQ(cause(r.counts.queries.http_failures, "stream_reset"), 10u);
  EXPECT_EQ(r.counts.queries.lost_on_close, 0u);
  EXPECT_EQ(r.counts.connections.opened, 1u);
  EXPECT_EQ(r.counts.connections.reset_by_server, 0u);
}

TEST(doh_client_test, a_refused_stream_is_sent_again_and_its_query_answered_once) {
  // The first connection's second request (stream 3) is refused (REFUSED_STREAM: not
  // processed, RFC 9113 section 8.7), every other request answered: that query goes again on
  // a new stream of the same connection and is answered once.
  auto refused = std::make_shared<bool>(false);
  const auto r = run_doh(every_request([refused](h2_connection& c, const h2_request& q) {
                           if (q.stream_id == 3 && !*refused) {
                             *refused = true;
                             c.reset(q.stream_id, NGHTTP2_REFUSED_STREAM);
                           } else {
                             c.answer(q);
                           }
                         }),
                         {.count = 30, .outstanding = 10});
  EXPECT_EQ(r.counts.queries.queries_sent, 30u);
  EXPECT_EQ(r.counts.queries.responses_received, 30u);
  EXPECT_EQ(r.counts.queries.unprocessed_retried, 1u);
  EXPECT_EQ(r.counts.queries.lost_on_close, 0u);
  EXPECT_EQ(r.counts.queries.lost, 0u);
  EXPECT_EQ(r.counts.queries.http_failed, 0u);
  EXPECT_EQ(r.counts.queries.duplicates + r.counts.queries.unexpected, 0u);
  EXPECT_EQ(r.log.requests, 31u);  // the refused one twice
  EXPECT_EQ(r.counts.connections.opened, 1u);
}

TEST(doh_client_test, a_server_that_refuses_every_stream_fails_each_query_after_three_resends) {
  const auto r = run_doh(every_request([](h2_connection& c, const h2_request& q) {
                           c.reset(q.stream_id, NGHTTP2_REFUSED_STREAM);
                         }),
                         {.count = 10, .outstanding = 5});
  EXPECT_EQ(r.counts.queries.queries_sent, 10u);
  EXPECT_EQ(r.counts.queries.responses_received, 0u);
  EXPECT_EQ(r.counts.queries.unprocessed_retried, 10u);  // each query counted once
  EXPECT_EQ(r.counts.queries.http_failed, 10u);
  EXPECT_EQ(cause(r.counts.queries.http_failures, "refused_stream"), 10u);
  EXPECT_EQ(r.counts.queries.lost_on_close + r.counts.queries.lost, 0u);
  EXPECT_EQ(r.log.requests, 40u);  // each sent once and again three times
  EXPECT_EQ(r.counts.connections.opened, 1u);
}

TEST(doh_client_test, goaway_with_queries_in_flight_sends_the_unprocessed_again_on_the_next) {
  // Each connection carries ten requests at once: the first seven are answered, then GOAWAY
  // names the seventh as the last processed; the three after it never are, and go again,
  // first, on the next connection. 30 queries at 7 answers a connection: 5 connections
  // (7 + 7 + 7 + 7 + 2 answers), of which the first 4 leave 3, 3, 3 and 2 unprocessed.
  const auto r = run_doh(every_request([](h2_connection& c, const h2_request& q) {
                           if (q.number < 7) c.answer(q);
                           if (q.number == 6) c.goaway(q.stream_id);
                         }),
                         {.count = 30, .outstanding = 10});
  EXPECT_EQ(r.counts.queries.queries_sent, 30u);
  EXPECT_EQ(r.counts.queries.responses_received, 30u);
  EXPECT_EQ(r.counts.queries.unprocessed_retried, 11u);
  EXPECT_EQ(r.counts.queries.lost_on_close, 0u);
  EXPECT_EQ(r.counts.queries.lost, 0u);
  EXPECT_EQ(r.counts.queries.http_failed, 0u);
  EXPECT_EQ(r.counts.connections.goaway, 4u);
  EXPECT_EQ(r.counts.connections.opened, 5u);
  // The client closes each once its last answer came: the server did not.
  EXPECT_EQ(r.counts.connections.closed_by_client, 5u);
  EXPECT_EQ(r.counts.connections.closed_by_server, 0u);
  EXPECT_EQ(r.log.connections, 5u);
  EXPECT_EQ(r.log.closed_by_client, 5u);
  EXPECT_EQ(r.log.requests, 41u);
}

TEST(doh_client_test, a_query_left_unprocessed_on_every_connection_fails_after_three_resends) {
  // GOAWAY naming no stream processed, on every connection: each query goes on four
  // connections, then fails.
  const auto r = run_doh(every_request([](h2_connection& c, const h2_request& q) {
                           if (q.number == 0) c.goaway(0);
                         }),
                         {.count = 5, .outstanding = 5});
  EXPECT_EQ(r.counts.queries.queries_sent, 5u);
  EXPECT_EQ(r.counts.queries.responses_received, 0u);
  EXPECT_EQ(r.counts.queries.unprocessed_retried, 5u);
  EXPECT_EQ(r.counts.queries.http_failed, 5u);
  EXPECT_EQ(cause(r.counts.queries.http_failures, "goaway_unprocessed"), 5u);
  EXPECT_EQ(r.counts.queries.lost_on_close + r.counts.queries.lost, 0u);
  EXPECT_EQ(r.counts.connections.goaway, 4u);
  EXPECT_EQ(r.counts.connections.opened, 4u);
  EXPECT_EQ(r.log.requests, 20u);
}

TEST(doh_client_test, the_servers_stream_limit_is_kept_once_its_settings_came) {
  // The first ten requests go before the server's SETTINGS (limit 2) are read: it refuses
  // the eight beyond its limit (REFUSED_STREAM: not processed), and they go again, two at a
  // time as every query after them.
  h2_script script;
  script.h2.max_concurrent_streams = 2;
  const auto r = run_doh(script, {.count = 40, .outstanding = 10});
  EXPECT_EQ(r.counts.queries.queries_sent, 40u);
  EXPECT_EQ(r.counts.queries.responses_received, 40u);
  EXPECT_EQ(r.counts.queries.unprocessed_retried, 8u);
  EXPECT_EQ(r.counts.queries.lost_on_close, 0u);
  EXPECT_EQ(r.counts.queries.http_failed, 0u);
  EXPECT_EQ(r.log.requests, 40u);  // the refused never reached the handler
  EXPECT_EQ(r.log.most_open_streams, 2u);
  EXPECT_EQ(r.counts.connections.opened, 1u);
}

TEST(doh_client_test, a_second_answer_on_a_stream_that_ended_is_a_duplicate) {
  const auto r = run_doh(every_request([](h2_connection& c, const h2_request& q) {
                           c.answer(q);
                           c.send_raw(h2_connection::raw_answer_frames(q));
                         }),
                         {.count = 20, .outstanding = 5});
  expect_all_answered(r, 20);
  EXPECT_EQ(r.counts.queries.duplicates, 20u);
  EXPECT_EQ(r.counts.queries.late + r.counts.queries.unexpected, 0u);
  EXPECT_EQ(r.counts.connections.opened, 1u);
  EXPECT_EQ(r.counts.connections.closed_protocol_error, 0u);
}

TEST(doh_client_test, a_server_that_breaks_http2_is_closed_by_us_not_counted_as_its_reset) {
  // On each connection, at its first request, a DATA frame on stream 0 (PROTOCOL_ERROR): the
  // client's nghttp2 ends the session, and the client closes the connection.
  const auto r = run_doh(every_request([](h2_connection& c, const h2_request& q) {
                           if (q.number == 0) c.send_raw(h2_connection::raw_broken_frame());
                         }),
                         {.count = 10, .outstanding = 5});
  EXPECT_EQ(r.counts.queries.queries_sent, 10u);
  EXPECT_EQ(r.counts.queries.lost_on_close, 10u);  // in flight when we closed
  EXPECT_EQ(r.counts.connections.opened, 2u);
  EXPECT_EQ(r.counts.connections.closed_protocol_error, 2u);
  EXPECT_EQ(cause(r.counts.connections.failures, "http2_error"), 2u);
  EXPECT_EQ(r.counts.connections.reset_by_server, 0u);
  EXPECT_EQ(r.counts.connections.closed_by_server, 0u);
}

class doh_queries_per_connection_test : public ::testing::TestWithParam<std::uint64_t> {};

TEST_P(doh_queries_per_connection_test, each_client_opens_its_queries_over_n_connections) {
  const std::uint64_t n = GetParam();
  stream_settings stream;
  stream.queries_per_connection = n;
  // Two clients with 30 queries each.
  const auto r = run_doh({}, {.count = 60, .clients = 2, .outstanding = 10}, {}, stream);
  expect_all_answered(r, 60);
  const std::uint64_t per_client = n == 0 ? 1 : (30 + n - 1) / n;  // 0: one for the run
  EXPECT_EQ(r.counts.connections.opened, 2 * per_client);
  EXPECT_EQ(r.log.connections, 2 * per_client);
  EXPECT_EQ(r.counts.connections.closed_by_client, 2 * per_client);
  EXPECT_EQ(r.counts.connections.first_query_latency.count(), 2 * per_client);
  EXPECT_EQ(r.log.most_open_streams, std::min<std::uint64_t>(n == 0 ? 10 : n, 10));
}

INSTANTIATE_TEST_SUITE_P(doh_client_test, doh_queries_per_connection_test,
                         ::testing::Values(1u, 4u, 7u, 30u, 0u));

TEST(doh_client_test, streams_of_queries_that_timed_out_are_cancelled) {
  // Never answered: four queries in flight time out, their streams are reset (CANCEL) so
  // that four more may go; those time out at the end of the run, which closes the
  // connection instead.
  const auto r = run_doh(every_request([](h2_connection&, const h2_request&) {}),
                         {.count = 8, .outstanding = 4, .timeout_seconds = 0.05});
  EXPECT_EQ(r.counts.queries.queries_sent, 8u);
  EXPECT_EQ(r.counts.queries.lost, 8u);
  EXPECT_EQ(r.counts.queries.responses_received, 0u);
  EXPECT_EQ(r.log.requests, 8u);
  EXPECT_EQ(r.log.resets_received, 4u);
}

TEST(doh_client_test, a_server_that_did_not_select_h2_fails_each_connection_by_name) {
  for (const std::string alpn : {"http/1.1", ""}) {
    SCOPED_TRACE(alpn.empty() ? std::string("a plain stream") : alpn);
    h2_script script;
    script.alpn = alpn;
    const auto r = run_doh(script, {.count = 10, .outstanding = 5});
    EXPECT_EQ(r.counts.queries.queries_sent, 0u);
    EXPECT_EQ(r.counts.connections.failed, 3u);  // three in a row, then the client gives up
    EXPECT_EQ(cause(r.counts.connections.failures, "doh_no_h2"), 3u);
    EXPECT_NE(r.counts.connections.first_failure.find("did not select h2 in ALPN (" +
                                                      (alpn.empty() ? "none" : alpn) + ")"),
              std::string::npos)
        << r.counts.connections.first_failure;
    EXPECT_EQ(r.log.requests, 0u);
  }
}

}  // namespace
}  // namespace dnstransport::detail
