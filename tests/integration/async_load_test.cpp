// async_run_load (dnstransport/async_load.hpp): a load watched on the caller's executor and
// completed through a callback, a future or a coroutine; two loads at once on one
// io_context; cancelled through the token's cancellation slot; a setup error or a progress
// callback's exception delivered to the handler, never thrown from the call. Every wait is
// for an event (a completion, a progress report), never for a length of time.
#include <dnstransport/async_load.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
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
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <dnstransport/error.hpp>
#include <dnstransport/server.hpp>

namespace dnstransport {
namespace {

server_options udp_responder() {
  server_options options;
  options.listen[transport_kind::udp] = endpoint{"127.0.0.1", 0};
  return options;
}

load_spec counted_load(const server& responder, std::uint64_t count) {
  load_spec spec;
  spec.target.port = responder.port(transport_kind::udp);
  spec.traffic.count = count;
  spec.traffic.outstanding = 10;
  return spec;
}

// A load that lasts far longer than any test: it ends when it is stopped.
load_spec long_load(const server& responder) {
  load_spec spec = counted_load(responder, 0);
  spec.traffic.duration_seconds = 100;
  spec.output.progress_interval_seconds = 0.05;
  return spec;
}

TEST(async_load_test, a_callback_runs_on_the_executor_after_the_call_returned) {
  server responder(udp_responder());
  boost::asio::io_context io;
  bool called = false;
  std::thread::id where;
  std::exception_ptr error;
  run_result result;
  async_run_load(io.get_executor(), counted_load(responder, 200),
                 [&](std::exception_ptr e, run_result r) {
                   called = true;
                   where = std::this_thread::get_id();
                   error = e;
                   result = std::move(r);
                 });
  EXPECT_FALSE(called);
  io.run();
  ASSERT_TRUE(called);
  EXPECT_EQ(where, std::this_thread::get_id());
  EXPECT_FALSE(error);
  EXPECT_EQ(result.queries_sent, 200u);
  EXPECT_EQ(result.responses_received, 200u);
  EXPECT_FALSE(result.interrupted);
}

TEST(async_load_test, a_future_gives_the_result_or_rethrows_the_setup_error) {
  server responder(udp_responder());
  boost::asio::io_context io;
  auto work = boost::asio::make_work_guard(io);
  std::thread runner([&io] { io.run(); });
  std::future<run_result> ran =
      async_run_load(io.get_executor(), counted_load(responder, 100), boost::asio::use_future);
  load_spec bad = counted_load(responder, 100);
  bad.traffic.clients = 0;
  std::future<run_result> refused;
  EXPECT_NO_THROW(refused = async_run_load(io.get_executor(), bad, boost::asio::use_future));
  EXPECT_EQ(ran.get().responses_received, 100u);
  try {
    refused.get();
    ADD_FAILURE() << "a load of 0 clients ran";
  } catch (const setup_error& e) {
    EXPECT_NE(std::string(e.what()).find("load_spec::traffic.clients"), std::string::npos)
        << e.what();
  }
  work.reset();
  runner.join();
}

TEST(async_load_test, progress_is_reported_on_the_executor_and_cancelling_stops_the_load) {
  server responder(udp_responder());
  boost::asio::io_context io;
  boost::asio::cancellation_signal cancel;
  load_spec spec = long_load(responder);
  unsigned reports = 0;
  bool elsewhere = false;
  const std::thread::id io_thread = std::this_thread::get_id();
  spec.output.on_progress = [&](const load_progress& p) {
    ++reports;
    if (std::this_thread::get_id() != io_thread) elsewhere = true;
    // Once answers flow, the caller gives up on the load.
    if (p.responses_received > 0 && reports >= 2) cancel.emit(boost::asio::cancellation_type::all);
  };
  std::exception_ptr error;
  run_result result;
  bool called = false;
  async_run_load(
      io.get_executor(), spec,
      boost::asio::bind_cancellation_slot(cancel.slot(), [&](std::exception_ptr e, run_result r) {
        called = true;
        error = e;
        result = std::move(r);
      }));
  io.run();
  ASSERT_TRUE(called);
  EXPECT_FALSE(error);
  EXPECT_GE(reports, 2u);
  EXPECT_FALSE(elsewhere);
  EXPECT_TRUE(result.interrupted);
  EXPECT_GT(result.responses_received, 0u);
  EXPECT_LT(result.elapsed_seconds, 100);
}

TEST(async_load_test, a_progress_callback_that_throws_ends_the_load_with_its_error) {
  server responder(udp_responder());
  boost::asio::io_context io;
  load_spec spec = long_load(responder);
  spec.output.on_progress = [](const load_progress& p) {
    if (p.responses_received > 0) throw std::runtime_error("the caller's own failure");
  };
  std::exception_ptr error;
  async_run_load(io.get_executor(), spec,
                 [&](std::exception_ptr e, const run_result&) { error = e; });
  io.run();
  ASSERT_TRUE(error);
  try {
    std::rethrow_exception(error);
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "the caller's own failure");
  }
}

// Each load's progress sees the other one running: they overlap on the one thread that runs
// the io_context, each in its own coroutine.
TEST(async_load_test, two_coroutines_run_two_loads_at_once_on_one_io_context) {
  server responder(udp_responder());
  boost::asio::io_context io;
  struct side {
    bool progressed = false;
    bool ended = false;
    bool saw_the_other_running = false;
    run_result result;
  };
  side a;
  side b;
  const auto load_of = [&](side& mine, side& other) {
    load_spec spec = counted_load(responder, 0);
    spec.traffic.duration_seconds = 100;
    spec.output.progress_interval_seconds = 0.05;
    spec.output.on_progress = [&mine, &other](const load_progress& p) {
      if (p.responses_received == 0) return;
      mine.progressed = true;
      if (other.progressed && !other.ended) mine.saw_the_other_running = true;
    };
    return spec;
  };
  std::atomic<bool> stop{false};
  const auto run = [&](side& mine, side& other) -> boost::asio::awaitable<void> {
    load_spec spec = load_of(mine, other);
    spec.stop = &stop;
    const auto report = spec.output.on_progress;
    // Both stop once each has seen the other running (or the other has ended).
    spec.output.on_progress = [&, report](const load_progress& p) {
      report(p);
      if ((a.saw_the_other_running || b.saw_the_other_running) && a.progressed && b.progressed)
        stop = true;
    };
    mine.result = co_await async_run_load(io.get_executor(), spec, boost::asio::use_awaitable);
    mine.ended = true;
  };
  boost::asio::co_spawn(io, run(a, b), boost::asio::detached);
  boost::asio::co_spawn(io, run(b, a), boost::asio::detached);
  io.run();
  EXPECT_TRUE(a.ended);
  EXPECT_TRUE(b.ended);
  EXPECT_TRUE(a.saw_the_other_running || b.saw_the_other_running);
  EXPECT_GT(a.result.responses_received, 0u);
  EXPECT_GT(b.result.responses_received, 0u);
  EXPECT_TRUE(a.result.interrupted);
  EXPECT_TRUE(b.result.interrupted);
}

// The timeline's rows come as they close: the load below would run 100 s, and is cancelled
// from the third row's callback (rows kept until the end would never cancel it). Every row
// comes once, in order, on the executor, and they are the result's timeline, the last
// (shorter) row included.
TEST(async_load_test, timeline_rows_come_as_they_close_and_are_the_results) {
  server responder(udp_responder());
  boost::asio::io_context io;
  load_spec spec = long_load(responder);
  spec.output.interval_seconds = 0.05;
  boost::asio::cancellation_signal cancel;
  std::vector<timeline_row> rows;
  bool elsewhere = false;
  const auto here = std::this_thread::get_id();
  spec.output.on_interval = [&](const timeline_row& row) {
    elsewhere = elsewhere || std::this_thread::get_id() != here;
    rows.push_back(row);
    if (rows.size() == 3) cancel.emit(boost::asio::cancellation_type::terminal);
  };
  run_result result;
  bool completed = false;
  async_run_load(
      io.get_executor(), spec,
      boost::asio::bind_cancellation_slot(cancel.slot(), [&](std::exception_ptr e, run_result r) {
        completed = true;
        EXPECT_FALSE(e);
        result = std::move(r);
      }));
  io.run();
  ASSERT_TRUE(completed);
  EXPECT_TRUE(result.interrupted);
  EXPECT_FALSE(elsewhere);
  ASSERT_GE(rows.size(), 3u);
  ASSERT_EQ(rows.size(), result.timeline.size());
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const timeline_row& a = rows[k];
    const timeline_row& b = result.timeline[k];
    EXPECT_EQ(a.start_seconds, b.start_seconds) << k;
    EXPECT_EQ(a.duration_seconds, b.duration_seconds) << k;
    EXPECT_EQ(a.sent, b.sent) << k;
    EXPECT_EQ(a.answered, b.answered) << k;
    EXPECT_EQ(a.lost, b.lost) << k;
    EXPECT_EQ(a.failed, b.failed) << k;
    EXPECT_EQ(a.qps, b.qps) << k;
    EXPECT_EQ(a.p50_ms, b.p50_ms) << k;
    EXPECT_EQ(a.p99_ms, b.p99_ms) << k;
  }
  std::uint64_t answered = 0;
  for (const auto& row : rows) answered += row.answered;
  EXPECT_GT(answered, 0u);
}

// The live figures (what --metrics-listen serves) are the delivered rows summed, every
// outcome counted, until the load ends; then the result's own figures, last.
TEST(async_load_test, live_figures_are_the_rows_so_far_then_the_results) {
  server_options options;
  options.listen[transport_kind::tcp] = endpoint{"127.0.0.1", 0};
  server responder(options);
  boost::asio::io_context io;
  load_spec spec = long_load(responder);
  spec.target.port = responder.port(transport_kind::tcp);
  spec.target.transport = transport_kind::tcp;
  spec.connections.queries_per_connection = 5;
  spec.output.interval_seconds = 0.05;
  boost::asio::cancellation_signal cancel;
  std::vector<timeline_row> rows;
  std::vector<live_figures> figures;
  std::vector<std::size_t> rows_then;  // rows delivered when each figures came
  spec.output.on_interval = [&](const timeline_row& row) { rows.push_back(row); };
  spec.output.on_figures = [&](const live_figures& f) {
    figures.push_back(f);
    rows_then.push_back(rows.size());
    if (figures.size() == 3) cancel.emit(boost::asio::cancellation_type::terminal);
  };
  run_result result;
  async_run_load(
      io.get_executor(), spec,
      boost::asio::bind_cancellation_slot(cancel.slot(), [&](std::exception_ptr e, run_result r) {
        EXPECT_FALSE(e);
        result = std::move(r);
      }));
  io.run();
  ASSERT_GE(figures.size(), 4u);
  for (std::size_t k = 0; k + 1 < figures.size(); ++k) {
    const live_figures& f = figures[k];
    EXPECT_FALSE(f.finished) << k;
    std::uint64_t sent = 0, answered = 0, opened = 0;
    for (std::size_t i = 0; i < rows_then[k]; ++i) {
      sent += rows[i].sent;
      answered += rows[i].answered;
      opened += rows[i].connections_opened;
    }
    EXPECT_EQ(f.queries.queries_sent, sent) << k;
    EXPECT_EQ(f.queries.responses_received, answered) << k;
    EXPECT_EQ(f.connections_opened, opened) << k;
    EXPECT_EQ(f.latency.count(), answered) << k;
    EXPECT_DOUBLE_EQ(f.seconds, static_cast<double>(rows_then[k]) * 0.05) << k;
    if (k > 0) {
      EXPECT_GE(f.generator_cpu_seconds, figures[k - 1].generator_cpu_seconds) << k;
    }
  }
  const live_figures& last = figures.back();
  const live_figures& before = figures[figures.size() - 2];
  EXPECT_TRUE(last.finished);
  EXPECT_EQ(last.queries.queries_sent, result.queries_sent);
  EXPECT_EQ(last.queries.responses_received, result.responses_received);
  EXPECT_EQ(last.queries.abandoned, result.abandoned);
  EXPECT_EQ(last.connections_opened, result.connections.opened);
  EXPECT_EQ(last.generator_cpu_seconds, result.client_cpu_seconds);
  EXPECT_EQ(last.server_cpu_seconds, -1);  // not monitored
  EXPECT_GT(before.queries.responses_received, 0u);
  EXPECT_GT(before.connections_opened, 0u);
  EXPECT_LE(before.queries.queries_sent, last.queries.queries_sent);
  EXPECT_LE(before.generator_cpu_seconds, last.generator_cpu_seconds);
}

}  // namespace
}  // namespace dnstransport
