// dnstransport::client: a program's own queries over every transport, each answered with its
// own ID on one connection; a query without an answer says so; bad queries are setup errors;
// an exchange is cancelled through its token; two exchanges run at once on one io_context.
#include <dnstransport/client.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>

#include <dnstransport/error.hpp>
#include <dnstransport/message.hpp>
#include <dnstransport/server.hpp>

#include "scratch_dir.hpp"

namespace dnstransport {
namespace {

// `count` queries for distinct names, the i-th with ID 1000 + i.
std::vector<std::vector<std::uint8_t>> client_test_queries(unsigned count) {
  std::vector<std::vector<std::uint8_t>> queries;
  for (unsigned i = 0; i < count; ++i) {
    queries.push_back(encode_query(fmt::format("q{}.example", i), rr_type::a));
    patch_id(queries.back().data(), static_cast<std::uint16_t>(1000 + i));
  }
  return queries;
}

server_options client_test_tcp_responder() {
  server_options options;
  options.listen[transport_kind::tcp] = endpoint{"127.0.0.1", 0};
  return options;
}

// A client of `responder`'s TCP listener.
client_settings client_test_tcp_settings(const server& responder) {
  client_settings settings;
  settings.target.transport = transport_kind::tcp;
  settings.target.port = responder.port(transport_kind::tcp);
  return settings;
}

// Every answer is a response to its own query, with the query's ID.
void expect_answers_to(const client_exchange& got,
                       const std::vector<std::vector<std::uint8_t>>& queries) {
  ASSERT_EQ(got.answers.size(), queries.size());
  for (std::size_t i = 0; i < queries.size(); ++i) {
    const client_answer& a = got.answers[i];
    ASSERT_TRUE(a.answered) << "query " << i << ": " << got.run.connections.first_failure;
    EXPECT_EQ(a.outcome, query_outcome::answered);
    const std::uint16_t id = read_id(queries[i].data());
    EXPECT_EQ(read_id(a.message.data()), id) << "query " << i;
    EXPECT_EQ(check_response(a.message, queries[i], id).verdict, response_verdict::ok)
        << "query " << i;
    EXPECT_EQ(a.rcode, a.message[3] & 0x0f);
    EXPECT_GT(a.latency_ns, 0u);
  }
}

// 50 queries over transport `t`: each answered, on one connection where it has connections.
void expect_exchange_over(transport_kind t) {
  server_options options;
  options.listen[t] = endpoint{"127.0.0.1", 0};
  if (traits_of(t).has_tls) {
    options.certificate_directory =
        hostile::scratch_directory(fmt::format("client-{}", transport_name(t)).c_str());
  }
  server responder(options);
  client_settings settings;
  settings.target.transport = t;
  settings.target.port = responder.port(t);
  if (t == transport_kind::doq) settings.tls.backend = tls_backend::gnutls;
  const auto queries = client_test_queries(50);
  const client_exchange got = run_exchange(settings, queries);
  expect_answers_to(got, queries);
  EXPECT_EQ(got.run.queries_sent, 50u);
  EXPECT_EQ(got.run.responses_received, 50u);
  if (traits_of(t).has_connections) {
    EXPECT_EQ(got.run.connections.opened, 1u);
  }
}

TEST(client_test, udp_exchange_answers_every_query_with_its_id) {
  expect_exchange_over(transport_kind::udp);
}

TEST(client_test, tcp_exchange_answers_every_query_on_one_connection) {
  expect_exchange_over(transport_kind::tcp);
}

TEST(client_test, dot_exchange_answers_every_query_on_one_connection) {
  expect_exchange_over(transport_kind::tls);
}

TEST(client_test, doh_exchange_answers_every_query_on_one_connection) {
  expect_exchange_over(transport_kind::doh);
}

TEST(client_test, doq_exchange_answers_every_query_on_one_connection) {
  if (!traits_of(transport_kind::doq).compiled) GTEST_SKIP() << "built without DoQ";
  expect_exchange_over(transport_kind::doq);
}

// The same question three times, with three IDs: three answers, each with its own ID.
TEST(client_test, one_question_asked_three_times_gets_three_answers) {
  server responder(client_test_tcp_responder());
  const client_settings settings = client_test_tcp_settings(responder);
  std::vector<std::vector<std::uint8_t>> queries(3, encode_query("www.example", rr_type::a));
  for (std::uint16_t i = 0; i < 3; ++i) patch_id(queries[i].data(), 7 + i);
  const client_exchange got = run_exchange(settings, queries);
  ASSERT_EQ(got.answers.size(), 3u);
  for (std::uint16_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(got.answers[i].answered) << i;
    EXPECT_EQ(read_id(got.answers[i].message.data()), 7 + i);
  }
}

// A question asked twice beside another, the three in one exchange: each query is sent once
// and answered by an answer to its own question (the root's NS twice, then an A).
TEST(client_test, a_repeated_question_beside_others_is_sent_once_each) {
  server responder(client_test_tcp_responder());
  const client_settings settings = client_test_tcp_settings(responder);
  std::vector<std::vector<std::uint8_t>> queries{encode_query(".", rr_type::ns),
                                                 encode_query(".", rr_type::ns),
                                                 encode_query("x.example", rr_type::a)};
  for (std::uint16_t i = 0; i < 3; ++i) patch_id(queries[i].data(), 70 + i);
  const client_exchange got = run_exchange(settings, queries);
  expect_answers_to(got, queries);
  EXPECT_EQ(got.run.queries_sent, 3u);
  EXPECT_EQ(got.run.responses_received, 3u);
}

// One query of a client, answered.
TEST(client_test, async_query_gives_one_answer) {
  server_options options;
  options.listen[transport_kind::udp] = endpoint{"127.0.0.1", 0};
  server responder(options);
  client_settings settings;
  settings.target.port = responder.port(transport_kind::udp);
  boost::asio::io_context io;
  client one(io.get_executor(), settings);
  auto query = encode_query("one.example", rr_type::aaaa);
  patch_id(query.data(), 4242);
  std::exception_ptr error;
  client_answer got;
  one.async_query(query, [&](std::exception_ptr e, client_answer r) {
    error = e;
    got = std::move(r);
  });
  io.run();
  ASSERT_FALSE(error);
  ASSERT_TRUE(got.answered);
  EXPECT_EQ(got.outcome, query_outcome::answered);
  EXPECT_EQ(read_id(got.message.data()), 4242);
}

// Two exchanges at once on one io_context run by this thread, each with its own answers.
TEST(client_test, two_exchanges_run_at_once_on_one_io_context) {
  server responder(client_test_tcp_responder());
  const client_settings settings = client_test_tcp_settings(responder);
  boost::asio::io_context io;
  client one(io.get_executor(), settings);
  const auto first = client_test_queries(20);
  auto second = client_test_queries(30);
  for (auto& q : second) patch_id(q.data(), static_cast<std::uint16_t>(read_id(q.data()) + 500));
  client_exchange got_first;
  client_exchange got_second;
  unsigned done = 0;
  one.async_exchange(first, [&](std::exception_ptr e, client_exchange r) {
    EXPECT_FALSE(e);
    got_first = std::move(r);
    ++done;
  });
  one.async_exchange(second, [&](std::exception_ptr e, client_exchange r) {
    EXPECT_FALSE(e);
    got_second = std::move(r);
    ++done;
  });
  io.run();
  EXPECT_EQ(done, 2u);
  expect_answers_to(got_first, first);
  expect_answers_to(got_second, second);
}

// A server that never answers: the query has no answer after the timeout, and the run counts
// it lost.
TEST(client_test, a_query_without_answer_says_so) {
  boost::asio::io_context io;
  boost::asio::ip::udp::socket silent(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  client_settings settings;
  settings.target.port = silent.local_endpoint().port();
  settings.timeout_seconds = 0.2;
  const client_exchange got = run_exchange(settings, client_test_queries(1));
  ASSERT_EQ(got.answers.size(), 1u);
  EXPECT_FALSE(got.answers[0].answered);
  EXPECT_EQ(got.answers[0].outcome, query_outcome::timed_out);
  EXPECT_TRUE(got.answers[0].message.empty());
  EXPECT_EQ(got.run.lost, 1u);
}

// Cancelled through its token's slot (the server never answers, the timeout is 60 s): the
// exchange ends with no answer and the run interrupted.
TEST(client_test, a_cancelled_exchange_ends_without_answers) {
  boost::asio::io_context io;
  boost::asio::ip::udp::socket silent(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  client_settings settings;
  settings.target.port = silent.local_endpoint().port();
  settings.timeout_seconds = 60;
  client one(io.get_executor(), settings);
  boost::asio::cancellation_signal cancel;
  bool called = false;
  client_exchange got;
  one.async_exchange(client_test_queries(2),
                     boost::asio::bind_cancellation_slot(
                         cancel.slot(), [&](std::exception_ptr e, client_exchange r) {
                           EXPECT_FALSE(e);
                           called = true;
                           got = std::move(r);
                         }));
  // The server's socket has the first query: the exchange is under way.
  std::vector<std::uint8_t> buffer(512);
  boost::asio::ip::udp::endpoint from;
  silent.async_receive_from(boost::asio::buffer(buffer), from,
                            [&](boost::system::error_code ec, std::size_t) {
                              EXPECT_FALSE(ec);
                              cancel.emit(boost::asio::cancellation_type::all);
                            });
  io.run();
  ASSERT_TRUE(called);
  EXPECT_TRUE(got.run.interrupted);
  ASSERT_EQ(got.answers.size(), 2u);
  for (const client_answer& a : got.answers) {
    EXPECT_FALSE(a.answered);
    EXPECT_EQ(a.outcome, query_outcome::abandoned);
  }
}

// No query, or a message too short to be one: a setup error naming it, nothing sent.
TEST(client_test, bad_queries_are_setup_errors) {
  client_settings settings;
  try {
    run_exchange(settings, {});
    ADD_FAILURE() << "an exchange of no query ran";
  } catch (const setup_error& e) {
    EXPECT_NE(std::string(e.what()).find("at least one query"), std::string::npos) << e.what();
  }
  try {
    run_exchange(settings, {encode_query("ok.example", rr_type::a), {1, 2, 3}});
    ADD_FAILURE() << "an exchange of a 3-octet query ran";
  } catch (const setup_error& e) {
    EXPECT_NE(std::string(e.what()).find("query 2 of the exchange has 3 octets"), std::string::npos)
        << e.what();
  }
  std::vector<std::uint8_t> header_only(12, 0);
  try {
    run_exchange(settings, {header_only});
    ADD_FAILURE() << "an exchange of a message without a question ran";
  } catch (const setup_error& e) {
    EXPECT_NE(std::string(e.what()).find("query 1 of the exchange"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dnstransport
