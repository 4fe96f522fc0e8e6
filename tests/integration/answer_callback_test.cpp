// output_settings::on_answer: each answer the result counts, given as it comes, on the worker
// threads, over every transport; an exception from it ends the load with that exception.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <dnstransport/error.hpp>
#include <dnstransport/load.hpp>
#include <dnstransport/message.hpp>
#include <dnstransport/query_source.hpp>
#include <dnstransport/server.hpp>

#include "scratch_dir.hpp"

namespace dnstransport {
namespace {

using hostile::scratch_directory;

// What the callback saw, from any thread.
struct seen_answers {
  std::mutex mutex;
  std::uint64_t calls = 0;
  double latency_sum = 0;
  std::array<std::uint64_t, 16> rcodes{};
  std::set<unsigned> clients;
  std::vector<std::string> problems;

  void add(const answer_event& e, const query_set& queries) {
    const std::lock_guard lock(mutex);
    ++calls;
    latency_sum += static_cast<double>(e.latency_ns);
    ++rcodes[e.rcode];
    clients.insert(e.client);
    if (e.query >= queries.size()) {
      problems.push_back("query " + std::to_string(e.query) + " is not in the set");
    } else if (e.message.size() < 12 || (e.message[2] & 0x80) == 0 ||
               (e.message[3] & 0x0f) != e.rcode) {
      problems.push_back("the message is not an answer with the event's rcode");
    } else if (check_response(e.message, queries[e.query], read_id(e.message.data())).verdict !=
               response_verdict::ok) {
      problems.push_back("the answer is not to the event's query");
    }
    if (e.sent_ns == 0 || e.latency_ns == 0) problems.push_back("no send time or latency");
  }
};

// Every answer of a load of `threads` threads and 4 clients over `t` is given once, with the
// figures the result counts.
void expect_every_answer_given(transport_kind t, unsigned threads) {
  server_options options;
  options.listen[t] = endpoint{"127.0.0.1", 0};
  if (traits_of(t).has_tls) {
    options.certificate_directory =
        scratch_directory(("answer-callback-" + std::string(transport_name(t))).c_str());
  }
  server responder(options);
  load_spec spec;
  spec.target.transport = t;
  spec.target.port = responder.port(t);
  if (t == transport_kind::doq) spec.tls.backend = tls_backend::gnutls;
  spec.traffic.clients = 4;
  spec.traffic.outstanding = 20;
  spec.traffic.count = 4000;
  spec.traffic.warmup_seconds = 0;
  spec.generator.threads = threads;
  const auto queries = std::make_shared<const query_set>(default_queries());
  seen_answers seen;
  spec.traffic.queries = queries;
  spec.output.on_answer = [&seen, &queries](const answer_event& e) { seen.add(e, *queries); };
  const run_result r = run_load(spec);

  EXPECT_EQ(r.responses_received, 4000u) << r.connections.first_failure;
  EXPECT_EQ(seen.calls, r.responses_received);
  EXPECT_EQ(seen.rcodes, r.rcodes);
  EXPECT_DOUBLE_EQ(seen.latency_sum, r.latency.sum());
  EXPECT_EQ(seen.clients, (std::set<unsigned>{0, 1, 2, 3}));
  EXPECT_TRUE(seen.problems.empty()) << seen.problems.front();
}

TEST(answer_callback_test, udp_answers_are_given_from_two_threads) {
  expect_every_answer_given(transport_kind::udp, 2);
}

TEST(answer_callback_test, tcp_answers_are_given) {
  expect_every_answer_given(transport_kind::tcp, 1);
}

TEST(answer_callback_test, dot_answers_are_given) {
  expect_every_answer_given(transport_kind::tls, 2);
}

TEST(answer_callback_test, doh_answers_are_given) {
  expect_every_answer_given(transport_kind::doh, 1);
}

TEST(answer_callback_test, doq_answers_are_given) {
  if (!traits_of(transport_kind::doq).compiled) GTEST_SKIP() << "built without DoQ";
  expect_every_answer_given(transport_kind::doq, 1);
}

// The callback throws at its 10th answer: no call follows, and the load, which would last
// 100 s, ends with that exception.
TEST(answer_callback_test, an_exception_ends_the_load_with_it) {
  server_options options;
  options.listen[transport_kind::udp] = endpoint{"127.0.0.1", 0};
  server responder(options);
  load_spec spec;
  spec.target.port = responder.port(transport_kind::udp);
  spec.traffic.duration_seconds = 100;
  spec.traffic.warmup_seconds = 0;
  std::atomic<unsigned> calls{0};
  spec.output.on_answer = [&calls](const answer_event&) {
    if (++calls == 10) throw std::runtime_error("enough answers");
  };
  try {
    run_load(spec);
    ADD_FAILURE() << "the load ended without the callback's exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "enough answers");
  }
  EXPECT_EQ(calls.load(), 10u);
}

}  // namespace
}  // namespace dnstransport
