// dnstransport::client::async_query: the queries of separate calls share the client's one
// connection (one TCP connection, one TLS handshake for three rounds of calls), pipelined;
// a connection the server closes is opened again for the next query; a question asked again
// while in flight waits for the first; every query ends once, with how it ended (answered,
// timed out, cancelled, its client destroyed); an idle client leaves its executor without
// work.
#include <dnstransport/client.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
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

// A responder on loopback over `t` (with a certificate for TLS), and settings of a client of it.
struct session_test_target {
  explicit session_test_target(transport_kind t, std::uint64_t close_after = 0)
      : responder([&] {
          server_options options;
          options.listen[t] = endpoint{"127.0.0.1", 0};
          options.close_after_queries = close_after;
          if (traits_of(t).has_tls) {
            options.certificate_directory = hostile::scratch_directory(
                fmt::format("client-session-{}", transport_name(t)).c_str());
          }
          return options;
        }()) {
    settings.target.transport = t;
    settings.target.port = responder.port(t);
    // Room for a handshake on a busy machine (ThreadSanitizer): a query's timeout runs from
    // its call.
    settings.timeout_seconds = 10;
    if (t == transport_kind::doq) settings.tls.backend = tls_backend::gnutls;
  }
  server responder;
  client_settings settings;
};

// What the calls of one round got, by the place of their query.
struct session_test_round {
  std::vector<std::vector<std::uint8_t>> queries;
  std::vector<client_answer> answers;
  std::vector<std::exception_ptr> errors;
  unsigned completed = 0;
};

// `count` calls of async_query at once (distinct names, IDs from `first_id`), the io_context
// run until it has no work left: every call has completed, and nothing else keeps it busy.
// The round lives as long as a call could still complete (session_test_no_second_call).
std::shared_ptr<session_test_round> session_test_ask(boost::asio::io_context& io, client& one,
                                                     unsigned count, std::uint16_t first_id,
                                                     const std::string& name = "") {
  auto kept = std::make_shared<session_test_round>();
  session_test_round& round = *kept;
  round.answers.resize(count);
  round.errors.resize(count);
  for (unsigned i = 0; i < count; ++i) {
    const std::string asked = name.empty() ? fmt::format("s{}.example", first_id + i) : name;
    round.queries.push_back(encode_query(asked, rr_type::a));
    patch_id(round.queries.back().data(), static_cast<std::uint16_t>(first_id + i));
  }
  for (unsigned i = 0; i < count; ++i) {
    one.async_query(round.queries[i], [kept, i](std::exception_ptr e, client_answer a) {
      kept->errors[i] = e;
      kept->answers[i] = std::move(a);
      ++kept->completed;
    });
  }
  io.restart();
  io.run();
  return kept;
}

// Once the client is gone (its threads joined), whatever it posted has run: no call of the
// rounds completed a second time.
void session_test_no_second_call(boost::asio::io_context& io, std::unique_ptr<client>& one,
                                 const std::vector<std::shared_ptr<session_test_round>>& rounds) {
  one.reset();
  io.restart();
  io.poll();
  for (const auto& round : rounds) EXPECT_EQ(round->completed, round->queries.size());
}

// Every call of the round completed once, answered by an answer to its own query and ID.
void session_test_expect_answered(const session_test_round& round) {
  ASSERT_EQ(round.completed, round.queries.size());
  for (std::size_t i = 0; i < round.queries.size(); ++i) {
    ASSERT_FALSE(round.errors[i]) << i;
    const client_answer& a = round.answers[i];
    ASSERT_EQ(a.outcome, query_outcome::answered) << i << ": " << query_outcome_name(a.outcome);
    ASSERT_TRUE(a.answered);
    const std::uint16_t id = read_id(round.queries[i].data());
    EXPECT_EQ(read_id(a.message.data()), id);
    EXPECT_EQ(check_response(a.message, round.queries[i], id).verdict, response_verdict::ok) << i;
    EXPECT_GT(a.latency_ns, 0u);
  }
}

// Three rounds of 20 calls over `t`: every query answered, and the responder accepted one
// connection (one handshake) for all 60.
void session_test_rounds_share_one_connection(transport_kind t) {
  session_test_target target(t);
  boost::asio::io_context io;
  auto one = std::make_unique<client>(io.get_executor(), target.settings);
  std::vector<std::shared_ptr<session_test_round>> rounds;
  for (std::uint16_t round = 0; round < 3; ++round) {
    rounds.push_back(session_test_ask(io, *one, 20, 100 * (round + 1)));
    session_test_expect_answered(*rounds.back());
  }
  session_test_no_second_call(io, one, rounds);
  const server_stats stats = target.responder.stats();
  EXPECT_EQ(stats.queries[t], 60u);
  if (traits_of(t).has_connections) {
    EXPECT_EQ(stats.connections_accepted, 1u);
  }
}

TEST(client_session_test, tcp_calls_share_one_connection) {
  session_test_rounds_share_one_connection(transport_kind::tcp);
}

TEST(client_session_test, dot_calls_share_one_connection_and_handshake) {
  session_test_rounds_share_one_connection(transport_kind::tls);
}

TEST(client_session_test, doh_calls_share_one_connection) {
  session_test_rounds_share_one_connection(transport_kind::doh);
}

TEST(client_session_test, doq_calls_share_one_connection) {
  if (!traits_of(transport_kind::doq).compiled) GTEST_SKIP() << "built without DoQ";
  session_test_rounds_share_one_connection(transport_kind::doq);
}

TEST(client_session_test, udp_calls_are_answered) {
  session_test_rounds_share_one_connection(transport_kind::udp);
}

// More calls at once than the client keeps in flight: the rest wait their turn, all answered.
TEST(client_session_test, calls_beyond_max_in_flight_wait_their_turn) {
  session_test_target target(transport_kind::tcp);
  target.settings.max_in_flight = 4;
  boost::asio::io_context io;
  client one(io.get_executor(), target.settings);
  session_test_expect_answered(*session_test_ask(io, one, 50, 1));
  EXPECT_EQ(target.responder.stats().connections_accepted, 1u);
}

// One question asked by eight calls at once: each answered with its own ID, one at a time.
TEST(client_session_test, one_question_asked_at_once_is_answered_for_each_call) {
  session_test_target target(transport_kind::tcp);
  boost::asio::io_context io;
  client one(io.get_executor(), target.settings);
  session_test_expect_answered(*session_test_ask(io, one, 8, 40, "same.example"));
  EXPECT_EQ(target.responder.stats().queries[transport_kind::tcp], 8u);
}

// A server that answers each query with the ID of the query before it (the first with its
// own): with one query of a question in flight at a time, only the first call is answered;
// the second, whose answer carries an ID that has ended, times out, and the others, waiting
// behind it, are not sent within their timeout (counted from the call). Were all eight in
// flight at once, seven of those answers would pass for the answer of another call.
TEST(client_session_test, a_question_in_flight_is_not_answered_by_another_query_id) {
  boost::asio::io_context io;
  boost::asio::ip::udp::socket shifty(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  std::vector<std::uint8_t> buffer(512);
  boost::asio::ip::udp::endpoint from;
  std::optional<std::uint16_t> previous;
  std::function<void()> serve = [&] {
    shifty.async_receive_from(
        boost::asio::buffer(buffer), from, [&](boost::system::error_code ec, std::size_t n) {
          if (ec) return;
          std::vector<std::uint8_t> answer(buffer.begin(), buffer.begin() + n);
          const std::uint16_t id = read_id(answer.data());
          answer[2] |= 0x80;
          if (previous) patch_id(answer.data(), *previous);
          previous = id;
          shifty.send_to(boost::asio::buffer(answer), from);
          serve();
        });
  };
  serve();
  client_settings settings;
  settings.target.port = shifty.local_endpoint().port();
  settings.timeout_seconds = 0.2;
  client one(io.get_executor(), settings);
  std::vector<query_outcome> outcomes;
  for (std::uint16_t i = 0; i < 8; ++i) {
    auto query = encode_query("same.example", rr_type::a);
    patch_id(query.data(), 60 + i);
    one.async_query(query, [&](std::exception_ptr e, client_answer a) {
      EXPECT_FALSE(e);
      outcomes.push_back(a.outcome);
      if (outcomes.size() == 8) shifty.cancel();
    });
  }
  io.run();
  ASSERT_EQ(outcomes.size(), 8u);
  EXPECT_EQ(outcomes[0], query_outcome::answered);
  EXPECT_EQ(std::count(outcomes.begin(), outcomes.end(), query_outcome::timed_out), 1);
  EXPECT_EQ(std::count(outcomes.begin(), outcomes.end(), query_outcome::answered), 1);
  EXPECT_EQ(std::count(outcomes.begin(), outcomes.end(), query_outcome::not_sent), 6);
}

// A server that closes each connection after 5 answers: rounds of 5 calls each get a
// connection of their own, opened when the next query comes.
TEST(client_session_test, a_connection_the_server_closed_is_opened_again) {
  session_test_target target(transport_kind::tcp, 5);
  boost::asio::io_context io;
  client one(io.get_executor(), target.settings);
  for (std::uint16_t round = 0; round < 3; ++round) {
    session_test_expect_answered(*session_test_ask(io, one, 5, 10 * (round + 1)));
  }
  EXPECT_EQ(target.responder.stats().connections_accepted, 3u);
}

// A silent server: the query ends as timed out after the client's timeout.
TEST(client_session_test, an_unanswered_query_times_out) {
  boost::asio::io_context io;
  boost::asio::ip::udp::socket silent(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  client_settings settings;
  settings.target.port = silent.local_endpoint().port();
  settings.timeout_seconds = 0.2;
  client one(io.get_executor(), settings);
  const session_test_round round = *session_test_ask(io, one, 1, 5);
  ASSERT_EQ(round.completed, 1u);
  EXPECT_FALSE(round.errors[0]);
  EXPECT_EQ(round.answers[0].outcome, query_outcome::timed_out);
  EXPECT_FALSE(round.answers[0].answered);
  EXPECT_TRUE(round.answers[0].message.empty());
}

// Cancelled through its slot once the server has it (timeout 60 s): it ends at once as
// abandoned, once.
TEST(client_session_test, a_cancelled_query_ends_as_abandoned) {
  boost::asio::io_context io;
  boost::asio::ip::udp::socket silent(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  client_settings settings;
  settings.target.port = silent.local_endpoint().port();
  settings.timeout_seconds = 60;
  client one(io.get_executor(), settings);
  boost::asio::cancellation_signal cancel;
  unsigned calls = 0;
  client_answer got;
  const auto query = encode_query("cancel.example", rr_type::a);
  one.async_query(query, boost::asio::bind_cancellation_slot(
                             cancel.slot(), [&](std::exception_ptr e, client_answer a) {
                               EXPECT_FALSE(e);
                               ++calls;
                               got = std::move(a);
                             }));
  std::vector<std::uint8_t> buffer(512);
  boost::asio::ip::udp::endpoint from;
  silent.async_receive_from(boost::asio::buffer(buffer), from,
                            [&](boost::system::error_code ec, std::size_t) {
                              EXPECT_FALSE(ec);
                              cancel.emit(boost::asio::cancellation_type::all);
                            });
  io.run();
  EXPECT_EQ(calls, 1u);
  EXPECT_EQ(got.outcome, query_outcome::abandoned);
  EXPECT_FALSE(got.answered);
  std::unique_ptr<client> gone(new client(std::move(one)));
  session_test_no_second_call(io, gone, {});
  EXPECT_EQ(calls, 1u);
}

// Two calls of one question to a silent server (timeout 60 s): the second, waiting behind the
// first, cancelled, ends at once as abandoned; the first ends as abandoned with its client.
TEST(client_session_test, a_cancelled_query_waiting_behind_its_question_ends_at_once) {
  boost::asio::io_context io;
  boost::asio::ip::udp::socket silent(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  client_settings settings;
  settings.target.port = silent.local_endpoint().port();
  settings.timeout_seconds = 60;
  auto one = std::make_unique<client>(io.get_executor(), settings);
  boost::asio::cancellation_signal cancel;
  std::vector<query_outcome> outcomes;
  const auto query = encode_query("waiting.example", rr_type::a);
  const auto keep = [&outcomes](std::exception_ptr e, client_answer a) {
    EXPECT_FALSE(e);
    outcomes.push_back(a.outcome);
  };
  one->async_query(query, keep);
  one->async_query(query, boost::asio::bind_cancellation_slot(cancel.slot(), keep));
  // The server has the first: the second waits behind it, and is cancelled there.
  std::vector<std::uint8_t> buffer(512);
  boost::asio::ip::udp::endpoint from;
  silent.async_receive_from(boost::asio::buffer(buffer), from,
                            [&](boost::system::error_code ec, std::size_t) {
                              EXPECT_FALSE(ec);
                              cancel.emit(boost::asio::cancellation_type::all);
                            });
  // The io_context runs until the cancelled call completes (the first keeps it busy).
  while (outcomes.empty()) io.run_one();
  EXPECT_EQ(outcomes, std::vector<query_outcome>{query_outcome::abandoned});
  session_test_no_second_call(io, one, {});
  EXPECT_EQ(outcomes, std::vector<query_outcome>(2, query_outcome::abandoned));
}

// A server that closes each connection after one answer, three queries pipelined: the two
// lost with the first connection go again on a second, where one is answered and the other,
// lost a second time, ends as connection_closed.
TEST(client_session_test, a_query_whose_connection_ended_goes_again_once) {
  session_test_target target(transport_kind::tcp, 1);
  boost::asio::io_context io;
  auto one = std::make_unique<client>(io.get_executor(), target.settings);
  const auto round = session_test_ask(io, *one, 3, 1);
  ASSERT_EQ(round->completed, 3u);
  std::vector<query_outcome> outcomes;
  for (const client_answer& a : round->answers) outcomes.push_back(a.outcome);
  EXPECT_EQ(outcomes, (std::vector<query_outcome>{query_outcome::answered, query_outcome::answered,
                                                  query_outcome::connection_closed}));
  session_test_no_second_call(io, one, {round});
  EXPECT_EQ(target.responder.stats().connections_accepted, 2u);
}

// The client destroyed with a query in flight (timeout 60 s): its call completes as abandoned.
TEST(client_session_test, destroying_the_client_ends_its_queries) {
  boost::asio::io_context io;
  boost::asio::ip::udp::socket silent(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  client_settings settings;
  settings.target.port = silent.local_endpoint().port();
  settings.timeout_seconds = 60;
  auto one = std::make_unique<client>(io.get_executor(), settings);
  unsigned calls = 0;
  client_answer got;
  one->async_query(encode_query("gone.example", rr_type::a),
                   [&](std::exception_ptr e, client_answer a) {
                     EXPECT_FALSE(e);
                     ++calls;
                     got = std::move(a);
                   });
  std::vector<std::uint8_t> buffer(512);
  boost::asio::ip::udp::endpoint from;
  silent.async_receive_from(boost::asio::buffer(buffer), from,
                            [&](boost::system::error_code ec, std::size_t) {
                              EXPECT_FALSE(ec);
                              one.reset();
                            });
  io.run();
  EXPECT_EQ(calls, 1u);
  EXPECT_EQ(got.outcome, query_outcome::abandoned);
  io.restart();
  io.poll();
  EXPECT_EQ(calls, 1u);
}

// A handler that owns its client, the client's last owner: the client is destroyed where the
// handler runs, on this thread, once the handler has run (not on one of the client's own
// threads, which would then wait for themselves).
TEST(client_session_test, a_handler_that_owns_its_client_destroys_it_here) {
  session_test_target target(transport_kind::tcp);
  boost::asio::io_context io;
  auto one = std::make_shared<client>(io.get_executor(), target.settings);
  const std::weak_ptr<client> watch = one;
  bool answered = false;
  one->async_query(
      encode_query("own.example", rr_type::a),
      [one, &answered](std::exception_ptr e, client_answer a) { answered = !e && a.answered; });
  one.reset();
  io.run();
  EXPECT_TRUE(answered);
  EXPECT_TRUE(watch.expired());
}

// A message that is not a query, and a setting refused: the call's error, nothing sent; a
// server name that does not resolve fails each query with the load's setup error.
TEST(client_session_test, refused_queries_and_settings_are_errors) {
  session_test_target target(transport_kind::tcp);
  boost::asio::io_context io;
  std::vector<std::exception_ptr> errors;
  const auto keep = [&errors](std::exception_ptr e, client_answer) { errors.push_back(e); };
  {
    client one(io.get_executor(), target.settings);
    one.async_query(std::vector<std::uint8_t>{1, 2, 3}, keep);
    std::vector<std::uint8_t> response = encode_query("r.example", rr_type::a);
    response[2] |= 0x80;
    one.async_query(response, keep);
    io.run();
  }
  client_settings unresolved = target.settings;
  unresolved.target.server = "no-such-host.invalid";
  {
    client one(io.get_executor(), unresolved);
    for (int i = 0; i < 2; ++i) {
      one.async_query(encode_query("x.example", rr_type::a), keep);
      io.restart();
      io.run();
    }
  }
  client_settings zero = target.settings;
  zero.max_in_flight = 0;
  {
    client one(io.get_executor(), zero);
    one.async_query(encode_query("x.example", rr_type::a), keep);
    io.restart();
    io.run();
  }
  const std::vector<std::string> expected{"has 3 octets", "QR bit", "no-such-host.invalid",
                                          "no-such-host.invalid", "max_in_flight"};
  ASSERT_EQ(errors.size(), expected.size());
  for (std::size_t i = 0; i < errors.size(); ++i) {
    ASSERT_TRUE(errors[i]) << i;
    try {
      std::rethrow_exception(errors[i]);
    } catch (const setup_error& e) {
      EXPECT_NE(std::string(e.what()).find(expected[i]), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(target.responder.stats().queries[transport_kind::tcp], 0u);
}

}  // namespace
}  // namespace dnstransport
