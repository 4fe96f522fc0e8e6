// async_run_search (dnstransport/async_search.hpp): a search on the caller's executor, its
// callbacks there, completed through a callback or a coroutine, cancelled through the
// token's cancellation slot, a bad spec delivered to the handler. Every wait is for an event
// (a step, a completion), never for a length of time.
#include <dnstransport/async_search.hpp>

#include <gtest/gtest.h>

#include <exception>
#include <string>
#include <thread>
#include <utility>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <dnstransport/async_load.hpp>
#include <dnstransport/error.hpp>
#include <dnstransport/server.hpp>

// GCC 12 at -O1 takes the release of an Asio coroutine frame (its recycling allocator's) for a
// mismatch with the aligned_alloc that allocated it.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace dnstransport {
namespace {

server_options udp_responder() {
  server_options options;
  options.listen[transport_kind::udp] = endpoint{"127.0.0.1", 0};
  return options;
}

// A search that ends at its ceiling after two passing steps (500 and 1,000 q/s).
search_spec short_search(const server& responder) {
  search_spec spec;
  spec.load.target.port = responder.port(transport_kind::udp);
  spec.load.traffic.arrivals = arrival_mode::constant;
  spec.load.traffic.warmup_seconds = 0;
  spec.start_rate = 500;
  spec.max_rate = 1000;
  spec.step_seconds = 0.2;
  spec.settle_seconds = 0;
  return spec;
}

TEST(async_search_test, steps_and_the_result_come_on_the_executor_after_the_call_returned) {
  server responder(udp_responder());
  boost::asio::io_context io;
  search_spec spec = short_search(responder);
  unsigned started = 0;
  unsigned ended = 0;
  bool elsewhere = false;
  const auto here = std::this_thread::get_id();
  spec.on_step_start = [&](const search_step& s) {
    elsewhere = elsewhere || std::this_thread::get_id() != here;
    EXPECT_EQ(s.index, ended);
    ++started;
  };
  spec.on_step = [&](const search_step&) {
    elsewhere = elsewhere || std::this_thread::get_id() != here;
    ++ended;
  };
  bool called = false;
  std::exception_ptr error;
  search_result result;
  async_run_search(io.get_executor(), spec, [&](std::exception_ptr e, search_result r) {
    called = true;
    error = e;
    result = std::move(r);
  });
  EXPECT_FALSE(called);
  EXPECT_EQ(started, 0u);
  io.run();
  ASSERT_TRUE(called);
  ASSERT_FALSE(error);
  EXPECT_FALSE(elsewhere);
  EXPECT_FALSE(result.interrupted);
  ASSERT_FALSE(result.steps.empty());
  EXPECT_EQ(started, result.steps.size());
  EXPECT_EQ(ended, result.steps.size());
  EXPECT_EQ(result.steps.front().rate, 500);
  EXPECT_GT(result.steps.front().run.responses_received, 0u);
}

// Cancelled while its first step (which would last 100 s) runs, the search stops that step
// and completes interrupted with it, in a coroutine that runs a load beside it on the same
// io_context.
TEST(async_search_test, a_cancelled_search_keeps_its_steps_beside_a_load_on_one_io_context) {
  server responder(udp_responder());
  boost::asio::io_context io;
  boost::asio::cancellation_signal cancel;
  search_spec spec = short_search(responder);
  spec.step_seconds = 100;
  spec.load.output.progress_interval_seconds = 0.05;
  bool cancelled = false;
  spec.on_progress = [&](const load_progress& p) {
    if (cancelled || p.responses_received == 0) return;
    cancelled = true;
    cancel.emit(boost::asio::cancellation_type::terminal);
  };
  search_result searched;
  std::exception_ptr search_error;
  async_run_search(io.get_executor(), spec,
                   boost::asio::bind_cancellation_slot(cancel.slot(),
                                                       [&](std::exception_ptr e, search_result r) {
                                                         search_error = e;
                                                         searched = std::move(r);
                                                       }));
  load_spec beside;
  beside.target.port = responder.port(transport_kind::udp);
  beside.traffic.count = 300;
  run_result loaded;
  boost::asio::co_spawn(
      io,
      [&]() -> boost::asio::awaitable<void> {
        loaded = co_await async_run_load(co_await boost::asio::this_coro::executor, beside,
                                         boost::asio::use_awaitable);
      },
      boost::asio::detached);
  io.run();
  ASSERT_FALSE(search_error);
  EXPECT_TRUE(searched.interrupted);
  EXPECT_EQ(searched.end_reason, "interrupted");
  ASSERT_EQ(searched.steps.size(), 1u);
  EXPECT_TRUE(searched.steps.front().run.interrupted);
  EXPECT_GT(searched.steps.front().run.responses_received, 0u);
  EXPECT_EQ(loaded.responses_received, 300u);
}

TEST(async_search_test, a_bad_spec_is_delivered_to_the_handler_not_thrown) {
  server responder(udp_responder());
  boost::asio::io_context io;
  search_spec spec = short_search(responder);
  spec.load.traffic.arrivals = arrival_mode::closed;
  std::exception_ptr error;
  bool called = false;
  EXPECT_NO_THROW(
      async_run_search(io.get_executor(), spec, [&](std::exception_ptr e, search_result) {
        called = true;
        error = e;
      }));
  io.run();
  ASSERT_TRUE(called);
  ASSERT_TRUE(error);
  try {
    std::rethrow_exception(error);
  } catch (const setup_error& e) {
    EXPECT_NE(std::string(e.what()).find("load_spec::traffic.arrivals"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace dnstransport
