// DNS-over-HTTPS servers that fail the client above DNS: HTTP statuses other than 200, the
// wrong content type, empty bodies, RST_STREAM on some streams, GOAWAY in the middle of a
// run (its unprocessed streams sent again), a second answer on a stream that ended, a limit of one
// stream, a server that never sends SETTINGS, one that speaks only HTTP/1.1 (in ALPN, or on the
// wire after selecting h2), a body longer or shorter than its content-length, no valid :status.
// Each run ends within its duration and timeout, every query ends in one bucket, and what happened
// is named. Each TLS library is the client against the other.
#include <dnstransport/load.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "h2_peer.hpp"
#include "hostile_checks.hpp"
#include "hostile_server.hpp"
#include "misbehaviour.hpp"
#include "transport/doh/doh_message.hpp"

namespace dnstransport::hostile {
namespace {

std::uint64_t cause(const std::map<std::string, std::uint64_t>& counts, const std::string& name) {
  const auto it = counts.find(name);
  return it == counts.end() ? 0 : it->second;
}

class hostile_doh_test : public ::testing::TestWithParam<tls_backend> {
 protected:
  hostile_options server_options(std::vector<std::string> alpn = {"h2"}) const {
    hostile_options options;
    options.transport = transport_kind::doh;
    options.tls.backend = other_backend(GetParam());
    options.tls.alpn = std::move(alpn);
    return options;
  }

  // Two clients, five streams in flight each; a count of 200 queries unless given.
  load_spec client_spec(const hostile_server& server, load_spec spec = {}) const {
    spec.target.transport = transport_kind::doh;
    spec.target.port = server.port();
    spec.tls.backend = GetParam();
    if (spec.traffic.count == 0 &&
        spec.traffic.duration_seconds == load_spec{}.traffic.duration_seconds)
      spec.traffic.count = 200;
    if (spec.traffic.timeout_seconds == load_spec{}.traffic.timeout_seconds) {
      spec.traffic.timeout_seconds = generous_timeout_seconds;
    }
    spec.traffic.clients = 2;
    spec.traffic.outstanding = 5;
    return spec;
  }
};

TEST_P(hostile_doh_test, a_well_behaved_server_answers_every_query_by_post_and_get) {
  for (const doh_method method : {doh_method::post, doh_method::get}) {
    SCOPED_TRACE(std::string(doh_method_name(method)));
    hostile_server server(server_options(), serve_doh(doh_answer_all()));
    load_spec spec;
    spec.target.doh_request = method;
    const run_result r = run_checked(client_spec(server, spec)).result;
    EXPECT_EQ(r.queries_sent, 200u);
    expect_all_in(r.responses_received, r);
    EXPECT_EQ(r.connections.opened, 2u) << summary(r);
  }
}

TEST_P(hostile_doh_test, statuses_other_than_200_are_counted_by_code_never_as_answers) {
  for (const unsigned status : {404u, 500u, 503u}) {
    SCOPED_TRACE(status);
    hostile_server server(server_options(), serve_doh([status](h2_session& s, const h2_request& r) {
                            s.respond(r.stream_id, status, "text/plain", bytes{'n', 'o'});
                          }));
    const run_result r = run_checked(client_spec(server)).result;
    EXPECT_EQ(r.queries_sent, 200u);
    EXPECT_EQ(r.responses_received, 0u) << summary(r);
    EXPECT_EQ(r.http_failed, 200u) << summary(r);
    EXPECT_EQ(cause(r.http_failures, "status_" + std::to_string(status)), 200u) << summary(r);
  }
}

TEST_P(hostile_doh_test, wrong_content_type_and_empty_body_are_named) {
  hostile_server wrong_type(server_options(), serve_doh([](h2_session& s, const h2_request& r) {
                              s.respond(r.stream_id, 200, "text/html", answer_to(r.query));
                            }));
  const run_result typed = run_checked(client_spec(wrong_type)).result;
  EXPECT_EQ(cause(typed.http_failures, "content_type"), 200u) << summary(typed);
  EXPECT_EQ(typed.responses_received, 0u);

  hostile_server empty(server_options(), serve_doh([](h2_session& s, const h2_request& r) {
                         s.respond(r.stream_id, 200, detail::doh_media_type, {});
                       }));
  const run_result emptied = run_checked(client_spec(empty)).result;
  EXPECT_EQ(cause(emptied.http_failures, "empty_body"), 200u) << summary(emptied);
  EXPECT_EQ(emptied.responses_received, 0u);

  // A body that is not a DNS message is malformed, as over any transport.
  hostile_server junk(server_options(), serve_doh([](h2_session& s, const h2_request& r) {
                        s.respond(r.stream_id, 200, detail::doh_media_type, bytes{1, 2, 3});
                      }));
  const run_result junked = run_checked(client_spec(junk)).result;
  EXPECT_EQ(junked.malformed, 200u) << summary(junked);
}

TEST_P(hostile_doh_test, rst_stream_on_every_third_request_fails_those_queries_only) {
  hostile_server server(server_options(), serve_doh([](h2_session& s, const h2_request& r) {
                          if (r.number % 3 == 2) {
                            s.reset(r.stream_id);
                          } else {
                            s.answer(r);
                          }
                        }));
  const run_result r = run_checked(client_spec(server)).result;
  EXPECT_EQ(r.queries_sent, 200u);
  const std::uint64_t reset = cause(r.http_failures, "stream_reset");
  EXPECT_GE(reset, 60u) << summary(r);
  EXPECT_LE(reset, 68u) << summary(r);
  EXPECT_EQ(r.responses_received + reset, 200u) << summary(r);
  EXPECT_EQ(r.connections.reset_by_server, 0u) << summary(r);
}

TEST_P(hostile_doh_test, goaway_mid_run_sends_the_unprocessed_streams_again_and_loses_none) {
  // On each connection: the first 7 requests answered, then GOAWAY naming the 7th as the
  // last one processed; requests after it are never answered (RFC 9113 section 8.7: safe to
  // retry), and the connection closes once the client is done with it.
  hostile_server server(server_options(), [](stream_peer& peer) {
    h2_session s(peer);
    std::int32_t last = 0;
    while (auto r = s.next_request(milliseconds(2000))) {
      if (r->number < 7) {
        s.answer(*r);
        last = r->stream_id;
      }
      if (r->number == 6) s.goaway(last);
      if (!s.flush()) break;
    }
    peer.close();
  });
  load_spec spec;
  spec.traffic.count = 300;
  const run_result r = run_checked(client_spec(server, spec)).result;
  // Every query answered once; at most 7 a connection, so each client (150 queries) opens at
  // least 22, and every one but its last ended with GOAWAY.
  EXPECT_EQ(r.queries_sent, 300u) << summary(r);
  EXPECT_EQ(r.responses_received, 300u) << summary(r);
  EXPECT_EQ(r.lost_on_close, 0u) << summary(r);
  EXPECT_EQ(r.lost, 0u) << summary(r);
  EXPECT_EQ(r.http_failed, 0u) << summary(r);
  EXPECT_GE(r.connections.opened, 44u) << summary(r);
  EXPECT_GE(r.connections.goaway + 2, r.connections.opened) << summary(r);
  EXPECT_LE(r.unprocessed_retried, r.queries_sent) << summary(r);
}

TEST_P(hostile_doh_test, a_second_answer_on_a_stream_that_ended_is_counted_as_a_duplicate) {
  hostile_server server(server_options(), serve_doh([](h2_session& s, const h2_request& r) {
                          s.answer(r);
                          s.send_raw(h2_server::raw_answer_frames(r));
                        }));
  const run_result r = run_checked(client_spec(server)).result;
  EXPECT_EQ(r.queries_sent, 200u);
  expect_all_in(r.responses_received, r);
  // A second answer read after its slot's next query went is unexpected (no past id left
  // to tell it by), as over UDP: at most one a client's turn of queries.
  EXPECT_EQ(r.duplicates + r.unexpected, 200u) << summary(r);
  EXPECT_GT(r.duplicates, 0u) << summary(r);
  EXPECT_EQ(r.late, 0u) << summary(r);
  EXPECT_EQ(r.connections.closed_protocol_error + r.connections.reset_by_server, 0u) << summary(r);
}

TEST_P(hostile_doh_test, a_limit_of_one_stream_is_kept_once_the_server_said_so) {
  std::shared_ptr<std::atomic<std::size_t>> most = std::make_shared<std::atomic<std::size_t>>(0);
  h2_options one;
  one.max_concurrent_streams = 1;
  hostile_server server(server_options(), [most, one](stream_peer& peer) {
    h2_session s(peer, one);
    std::uint64_t answered = 0;
    while (auto r = s.next_request(milliseconds(2000))) {
      s.answer(*r);
      // After the first answer the client has had our SETTINGS for a round trip.
      if (++answered > 5) *most = std::max<std::size_t>(*most, s.most_open_streams());
      if (!s.flush()) break;
    }
    peer.discard_until_gone();
  });
  const run_result r = run_checked(client_spec(server)).result;
  EXPECT_EQ(r.queries_sent, 200u);
  // Before SETTINGS a client may open up to --outstanding streams; the server refuses
  // the extra ones (REFUSED_STREAM: not processed), and they go again. After, one at a time.
  EXPECT_LE(r.unprocessed_retried, 8u) << summary(r);
  EXPECT_EQ(r.responses_received, 200u) << summary(r);
  EXPECT_EQ(r.lost_on_close, 0u) << summary(r);
  EXPECT_EQ(r.http_failed, 0u) << summary(r);
}

TEST_P(hostile_doh_test, a_server_that_never_sends_settings_loses_the_queries_to_timeouts) {
  hostile_server server(server_options(), [](stream_peer& peer) { peer.discard_until_gone(); });
  load_spec spec;
  spec.traffic.duration_seconds = 0.3;
  spec.traffic.timeout_seconds = 0.5;
  const run_result r = run_checked(client_spec(server, spec)).result;
  EXPECT_GT(r.queries_sent, 0u);
  EXPECT_EQ(r.lost, r.queries_sent) << summary(r);
  EXPECT_EQ(r.responses_received, 0u);
}

TEST_P(hostile_doh_test, a_server_without_h2_in_alpn_fails_each_connection_by_name) {
  hostile_server server(server_options({"http/1.1"}),
                        [](stream_peer& peer) { peer.discard_until_gone(); });
  const run_result r = run_checked(client_spec(server)).result;
  EXPECT_EQ(r.queries_sent, 0u) << summary(r);
  EXPECT_EQ(r.connections.failed, 6u) << summary(r);  // three in a row per client
  EXPECT_EQ(cause(r.connections.failures, "doh_no_h2"), 6u) << summary(r);
  EXPECT_NE(r.connections.first_failure.find("did not select h2"), std::string::npos)
      << r.connections.first_failure;
}

TEST_P(hostile_doh_test, http_1_1_on_the_wire_after_h2_is_an_http2_error) {
  hostile_server server(server_options(), [](stream_peer& peer) {
    peer.read_some(4096, milliseconds(2000));
    const std::string reply = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
    peer.write({reinterpret_cast<const std::uint8_t*>(reply.data()), reply.size()});
    peer.discard_until_gone();
  });
  load_spec spec;
  spec.traffic.duration_seconds = 0.3;
  spec.traffic.timeout_seconds = 0.5;
  const run_result r = run_checked(client_spec(server, spec)).result;
  EXPECT_EQ(r.responses_received, 0u) << summary(r);
  EXPECT_GT(cause(r.connections.failures, "http2_error"), 0u) << summary(r);
  // The client closed each of those connections over the server's error: not a reset.
  EXPECT_EQ(r.connections.closed_protocol_error, cause(r.connections.failures, "http2_error"))
      << summary(r);
  EXPECT_EQ(r.connections.reset_by_server, 0u) << summary(r);
  EXPECT_GT(r.lost_on_close, 0u) << summary(r);
}

// A content-length 5 octets short of the body, and 5 octets over it.
TEST_P(hostile_doh_test, a_body_whose_length_is_not_its_content_length_is_a_broken_response) {
  for (const int lie : {-5, 5}) {
    SCOPED_TRACE(lie);
    hostile_server server(server_options(), serve_doh([lie](h2_session& s, const h2_request& r) {
                            bytes answer = answer_to(r.query);
                            const std::size_t claimed = answer.size() + lie;
                            s.respond(r.stream_id, 200, detail::doh_media_type, std::move(answer),
                                      claimed);
                          }));
    const run_result r = run_checked(client_spec(server)).result;
    EXPECT_EQ(r.queries_sent, 200u);
    EXPECT_EQ(r.responses_received, 0u) << summary(r);
    EXPECT_EQ(cause(r.http_failures, "content_length"), 200u) << summary(r);
  }
}

// Responses without a valid :status (none, or not three digits), otherwise a good answer.
TEST_P(hostile_doh_test, a_response_without_a_valid_status_is_no_answer) {
  for (const std::string status : {"", "20", "2000", "2x0"}) {
    SCOPED_TRACE(status.empty() ? std::string("no :status") : ":status " + status);
    hostile_server server(server_options(), serve_doh([status](h2_session& s, const h2_request& r) {
                            std::vector<std::pair<std::string, std::string>> headers{
                                {"content-type", std::string(detail::doh_media_type)}};
                            if (!status.empty())
                              headers.insert(headers.begin(), {":status", status});
                            s.respond_with(r.stream_id, headers, answer_to(r.query));
                          }));
    const run_result r = run_checked(client_spec(server)).result;
    EXPECT_EQ(r.queries_sent, 200u);
    EXPECT_EQ(r.responses_received, 0u) << summary(r);
    EXPECT_EQ(cause(r.http_failures, "no_status"), 200u) << summary(r);
  }
}

INSTANTIATE_TEST_SUITE_P(hostile, hostile_doh_test, ::testing::ValuesIn(available_tls_backends()),
                         backend_name);

}  // namespace
}  // namespace dnstransport::hostile
