// UDP answers that are not answers: larger than the query allowed (512 octets without EDNS,
// the advertised payload size with it), and truncated ones, counted as such or retried over
// TCP as a stub resolver would.
#include <dnstransport/error.hpp>
#include <dnstransport/load.hpp>

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>

#include "hostile_checks.hpp"
#include "hostile_server.hpp"
#include "misbehaviour.hpp"

namespace dnstransport::hostile {
namespace {

// 200 queries from 2 clients, the default set (with EDNS at `payload` when given), each
// given all the time it needs.
load_spec udp_spec(std::uint16_t port, std::uint16_t payload = 0) {
  load_spec spec;
  spec.target.port = port;
  spec.traffic.clients = 2;
  spec.traffic.outstanding = 10;
  spec.traffic.count = 200;
  spec.traffic.timeout_seconds = generous_timeout_seconds;
  if (payload != 0) {
    query_options options;
    options.edns.enabled = true;
    options.edns.udp_payload_size = payload;
    spec.traffic.queries = std::make_shared<const query_set>(default_queries(options));
  }
  return spec;
}

struct size_case {
  std::uint16_t edns_payload;  // 0: no EDNS, so 512
  std::size_t answer_size;
  bool allowed;
};

class udp_answer_size_test : public ::testing::TestWithParam<size_case> {};

TEST_P(udp_answer_size_test, an_answer_over_the_querys_limit_is_oversized_not_answered) {
  const size_case c = GetParam();
  hostile_server server({}, oversized_answers(c.answer_size));
  const run_result r = run_checked(udp_spec(server.port(), c.edns_payload)).result;
  EXPECT_EQ(r.queries_sent, 200u);
  if (c.allowed) {
    expect_all_in(r.responses_received, r);
    EXPECT_EQ(r.oversized, 0u);
  } else {
    expect_all_in(r.oversized, r);
    EXPECT_EQ(r.responses_received, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(hostile, udp_answer_size_test,
                         ::testing::Values(size_case{0, 512, true}, size_case{0, 513, false},
                                           size_case{0, 4000, false}, size_case{1232, 1232, true},
                                           size_case{1232, 1233, false},
                                           size_case{4096, 4096, true},
                                           // Below 512 the advertised size means 512.
                                           size_case{100, 512, true}),
                         [](const ::testing::TestParamInfo<size_case>& param) {
                           return fmt::format("edns{}_answer{}", param.param.edns_payload,
                                              param.param.answer_size);
                         });

// A UDP responder and a TCP responder on the same port, as a real server is. The TCP
// listener takes a free port first (TCP ports linger in TIME_WAIT, UDP ones do not), then
// the UDP responder binds the same number; when another socket holds that UDP port, the
// pair is chosen again.
struct udp_and_tcp {
  std::unique_ptr<hostile_server> tcp_server;
  std::unique_ptr<hostile_server> udp_server;
  hostile_server& udp;
  hostile_server& tcp;

  udp_and_tcp(const message_script& over_udp, const message_script& over_tcp)
      : udp(*bind_pair(over_udp, over_tcp)), tcp(*tcp_server) {}

 private:
  hostile_server* bind_pair(const message_script& over_udp, const message_script& over_tcp) {
    for (int attempt = 0;; ++attempt) {
      hostile_options tcp_options;
      tcp_options.transport = transport_kind::tcp;
      tcp_server = std::make_unique<hostile_server>(tcp_options, over_tcp);
      hostile_options udp_options;
      udp_options.port = tcp_server->port();
      try {
        udp_server = std::make_unique<hostile_server>(udp_options, over_udp);
        return udp_server.get();
      } catch (const std::runtime_error&) {
        if (attempt == 20) throw;
      }
    }
  }
};

TEST(hostile_udp, truncated_answers_retried_over_tcp_count_the_tcp_answer) {
  udp_and_tcp server(truncated_answers(), answer_all());
  load_spec spec = udp_spec(server.udp.port());
  spec.traffic.tc_retry_tcp = true;
  const run_result r = run_checked(spec).result;
  EXPECT_EQ(r.queries_sent, 200u);
  EXPECT_EQ(r.tc_retried, 200u);
  EXPECT_EQ(r.tc_retry_answered, 200u);
  expect_all_in(r.responses_received, r);
  EXPECT_EQ(r.truncated, 0u);
  EXPECT_EQ(r.latency.count(), 200u);
  EXPECT_EQ(server.tcp.queries(), 200u);
  EXPECT_GE(r.connections.opened, 1u);
}

TEST(hostile_udp, only_the_truncated_half_is_retried) {
  udp_and_tcp server(truncated_every_other(), answer_all());
  load_spec spec = udp_spec(server.udp.port());
  spec.traffic.tc_retry_tcp = true;
  const run_result r = run_checked(spec).result;
  EXPECT_EQ(r.queries_sent, 200u);
  expect_all_in(r.responses_received, r);
  EXPECT_EQ(r.tc_retried, 100u);
  EXPECT_EQ(r.tc_retry_answered, 100u);
  EXPECT_EQ(server.tcp.queries(), 100u);
}

TEST(hostile_udp, a_retry_the_tcp_server_answers_wrongly_is_counted_by_that_answer) {
  udp_and_tcp server(truncated_answers(), wrong_question());
  load_spec spec = udp_spec(server.udp.port());
  spec.traffic.tc_retry_tcp = true;
  const run_result r = run_checked(spec).result;
  EXPECT_EQ(r.tc_retried, 200u);
  EXPECT_EQ(r.tc_retry_answered, 0u);
  expect_all_in(r.mismatched, r);
}

TEST(hostile_udp, retries_with_no_tcp_listener_are_lost_and_the_run_ends) {
  // The UDP responder on the number of a TCP port nobody listens on (chosen again when
  // another UDP socket holds that number).
  std::unique_ptr<unlistened_tcp_port> tcp;
  std::unique_ptr<hostile_server> udp;
  for (int attempt = 0; !udp; ++attempt) {
    tcp = std::make_unique<unlistened_tcp_port>();
    hostile_options options;
    options.port = tcp->port();
    try {
      udp = std::make_unique<hostile_server>(options, truncated_answers());
    } catch (const std::runtime_error&) {
      if (attempt == 20) throw;
    }
  }
  load_spec spec = udp_spec(udp->port());
  spec.traffic.tc_retry_tcp = true;
  spec.traffic.timeout_seconds = 0.3;
  const run_result r = run_checked(spec).result;
  EXPECT_EQ(r.queries_sent, 200u);
  EXPECT_EQ(r.tc_retried, 200u);
  EXPECT_EQ(r.responses_received, 0u);
  EXPECT_EQ(r.lost + r.lost_on_close, 200u);
  EXPECT_GT(r.connections.failed, 0u);
  EXPECT_GT(r.connections.failures.count("ECONNREFUSED"), 0u);
}

TEST(hostile_udp, tc_retry_is_refused_for_stream_transports) {
  load_spec spec;
  spec.target.transport = transport_kind::tcp;
  spec.traffic.tc_retry_tcp = true;
  EXPECT_THROW(validate(spec), setup_error);
}

}  // namespace
}  // namespace dnstransport::hostile
