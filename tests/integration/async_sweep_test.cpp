// async_run_sweep (dnstransport/async_sweep.hpp): a sweep run on the caller's executor, its
// callbacks there as each run and point ends, completed through a callback, a future or a
// coroutine; cancelled through the token's cancellation slot; what run_sweep alone runs
// (searches, groups) and a callback's exception delivered to the handler. Every wait is for
// an event (a completion, a callback), never for a length of time.
#include <dnstransport/async_sweep.hpp>

#include <gtest/gtest.h>

#include <exception>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <dnstransport/error.hpp>
#include <dnstransport/server.hpp>

namespace dnstransport {
namespace {

server_options udp_and_tcp() {
  server_options options;
  options.listen[transport_kind::udp] = endpoint{"127.0.0.1", 0};
  options.listen[transport_kind::tcp] = endpoint{"127.0.0.1", 0};
  return options;
}

// udp, tcp x 1, 2 clients x 1, unlimited queries per connection, 2 repeats of 0.1 s.
sweep_plan small_plan(const server& responder) {
  sweep_plan plan;
  plan.ports = responder.ports();
  plan.transports = {{transport_kind::udp, std::nullopt}, {transport_kind::tcp, std::nullopt}};
  plan.clients = {1, 2};
  plan.queries_per_connection = {1, 0};
  plan.repeats = 2;
  plan.duration_seconds = 0.1;
  plan.pause_seconds = 0.01;
  plan.base.traffic.outstanding = 10;
  return plan;
}

TEST(async_sweep_test, runs_every_point_with_its_callbacks_on_the_executor_as_they_happen) {
  server responder(udp_and_tcp());
  boost::asio::io_context io;
  const auto here = std::this_thread::get_id();
  bool completed = false;
  std::exception_ptr error;
  sweep_result result;
  std::vector<std::size_t> points_seen;  // result.points.size() at each on_point_done
  std::size_t progress_calls = 0;
  bool elsewhere = false;  // a callback on another thread
  sweep_callbacks callbacks;
  callbacks.on_progress = [&](const sweep_progress&) {
    ++progress_calls;
    elsewhere = elsewhere || std::this_thread::get_id() != here;
  };
  callbacks.on_point_done = [&](const sweep_result& so_far) {
    points_seen.push_back(so_far.points.size());
    elsewhere = elsewhere || std::this_thread::get_id() != here;
  };
  async_run_sweep(io.get_executor(), small_plan(responder), callbacks,
                  [&](std::exception_ptr e, sweep_result r) {
                    completed = true;
                    elsewhere = elsewhere || std::this_thread::get_id() != here;
                    error = e;
                    result = std::move(r);
                  });
  EXPECT_FALSE(completed);
  EXPECT_EQ(progress_calls, 0u);
  io.run();
  ASSERT_TRUE(completed);
  EXPECT_FALSE(error);
  EXPECT_FALSE(elsewhere);
  EXPECT_FALSE(result.interrupted);
  // udp has no connections: 1 point per client count; tcp 2 per client count.
  ASSERT_EQ(result.points.size(), 6u);
  EXPECT_EQ(points_seen, (std::vector<std::size_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_GE(progress_calls, 12u);  // at least the start of every run
  for (const auto& p : result.points) {
    ASSERT_EQ(p.repeats.size(), 2u);
    for (const auto& run : p.repeats) {
      EXPECT_GT(run.responses_received, 0u);
      EXPECT_EQ(run.lost, 0u);
    }
  }
  EXPECT_FALSE(result.percent_of_udp.empty());  // derived as run_sweep derives them
}

TEST(async_sweep_test, a_future_gives_the_result_or_rethrows_the_plans_setup_error) {
  server responder(udp_and_tcp());
  boost::asio::io_context io;
  sweep_plan plan = small_plan(responder);
  plan.transports = {{transport_kind::udp, std::nullopt}};
  plan.queries_per_connection = {0};
  plan.clients = {1};
  plan.repeats = 1;
  auto ran = async_run_sweep(io.get_executor(), plan, {}, boost::asio::use_future);
  sweep_plan bad = plan;
  bad.clients = {0};
  auto refused = async_run_sweep(io.get_executor(), bad, {}, boost::asio::use_future);
  io.run();
  const sweep_result result = ran.get();
  ASSERT_EQ(result.points.size(), 1u);
  EXPECT_GT(result.points[0].repeats.at(0).responses_received, 0u);
  try {
    refused.get();
    FAIL() << "a sweep with 0 clients ran";
  } catch (const setup_error& e) {
    EXPECT_NE(std::string(e.what()).find("clients"), std::string::npos) << e.what();
  }
}

TEST(async_sweep_test, a_searching_sweep_is_refused_naming_the_setting) {
  server responder(udp_and_tcp());
  boost::asio::io_context io;
  sweep_plan plan = small_plan(responder);
  plan.search = true;
  auto searched = async_run_sweep(io.get_executor(), plan, {}, boost::asio::use_future);
  io.run();
  try {
    searched.get();
    FAIL() << "a searching sweep ran asynchronously";
  } catch (const setup_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("sweep_plan::search: a sweep that searches", 0), 0u)
        << e.what();
  }
}

TEST(async_sweep_test, a_cancel_stops_the_running_load_and_ends_the_sweep) {
  server responder(udp_and_tcp());
  boost::asio::io_context io;
  // Runs far longer than any test: the first ends when it is cancelled, and no other starts.
  sweep_plan plan = small_plan(responder);
  plan.transports = {{transport_kind::udp, std::nullopt}};
  plan.queries_per_connection = {0};
  plan.repeats = 1;
  plan.duration_seconds = 100;
  plan.base.output.progress_interval_seconds = 0.05;
  boost::asio::cancellation_signal cancel;
  std::size_t runs_started = 0;
  bool cancelled = false;
  sweep_callbacks callbacks;
  callbacks.on_progress = [&](const sweep_progress& p) {
    if (!p.run) {
      ++runs_started;  // a run's first report, before its load
    } else if (!cancelled) {
      cancelled = true;  // the load is answering
      cancel.emit(boost::asio::cancellation_type::terminal);
    }
  };
  bool completed = false;
  sweep_result result;
  std::exception_ptr error;
  async_run_sweep(
      io.get_executor(), plan, callbacks,
      boost::asio::bind_cancellation_slot(cancel.slot(), [&](std::exception_ptr e, sweep_result r) {
        completed = true;
        error = e;
        result = std::move(r);
      }));
  io.run();
  ASSERT_TRUE(completed);
  EXPECT_TRUE(cancelled);
  EXPECT_FALSE(error);
  EXPECT_TRUE(result.interrupted);
  EXPECT_EQ(result.planned_points, 2u);
  EXPECT_EQ(runs_started, 1u);
  EXPECT_TRUE(result.points.empty());  // the interrupted run is not a point
}

TEST(async_sweep_test, a_point_callbacks_exception_ends_the_sweep_with_it) {
  server responder(udp_and_tcp());
  boost::asio::io_context io;
  sweep_plan plan = small_plan(responder);
  plan.repeats = 1;
  sweep_callbacks callbacks;
  callbacks.on_point_done = [](const sweep_result&) { throw std::runtime_error("disk full"); };
  std::exception_ptr error;
  sweep_result result;
  async_run_sweep(io.get_executor(), plan, callbacks, [&](std::exception_ptr e, sweep_result r) {
    error = e;
    result = std::move(r);
  });
  io.run();
  ASSERT_TRUE(error);
  try {
    std::rethrow_exception(error);
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "disk full");
  }
  EXPECT_EQ(result.points.size(), 1u);  // the point measured before the callback threw
}

TEST(async_sweep_test, two_sweeps_in_coroutines_share_one_thread) {
  server responder(udp_and_tcp());
  boost::asio::io_context io;
  sweep_plan plan = small_plan(responder);
  plan.transports = {{transport_kind::udp, std::nullopt}};
  plan.queries_per_connection = {0};
  plan.repeats = 1;
  std::vector<std::size_t> points;
  auto one = [&]() -> boost::asio::awaitable<void> {
    const sweep_result r =
        co_await async_run_sweep(io.get_executor(), plan, {}, boost::asio::use_awaitable);
    points.push_back(r.points.size());
  };
  boost::asio::co_spawn(io, one(), boost::asio::detached);
  boost::asio::co_spawn(io, one(), boost::asio::detached);
  io.run();
  EXPECT_EQ(points, (std::vector<std::size_t>{2, 2}));
}

}  // namespace
}  // namespace dnstransport
