// The client's own connection (dnstransport::client::async_query): a load of one client fed
// the program's queries as they come (query_feed), started at the first query and kept until
// the client is destroyed, on two threads of the session's: the engine's worker, and an
// io_context that watches the load (so the caller's executor has work only while a query of
// its own is pending).
#include <dnstransport/client.hpp>

#include <atomic>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include <fmt/format.h>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <dnstransport/error.hpp>
#include <dnstransport/message.hpp>

#include "engine/query_feed.hpp"
#include "load/client_queries.hpp"
#include "load/load_operation.hpp"

namespace dnstransport::detail {

// A query of submit_query, for its cancellation; kept alive by the query's callback in the
// feed until it ends (the cancellation slot holds it weakly).
class query_ticket {
 public:
  explicit query_ticket(std::weak_ptr<query_feed> feed) : feed_(std::move(feed)) {}
  void numbered(std::uint64_t number) noexcept { number_.store(number, std::memory_order_release); }
  void cancel() const {
    const std::uint64_t number = number_.load(std::memory_order_acquire);
    if (const auto feed = feed_.lock(); feed && number != 0) feed->cancel(number);
  }

 private:
  std::weak_ptr<query_feed> feed_;
  std::atomic<std::uint64_t> number_{0};
};

class client_session {
 public:
  explicit client_session(client_settings settings) : settings_(std::move(settings)) {}
  ~client_session() { close(); }
  client_session(const client_session&) = delete;
  client_session& operator=(const client_session&) = delete;

  // On the caller's thread: the query goes to the running load's feed (a load is started
  // when none runs). Throws setup_error for a query or a setting refused.
  std::shared_ptr<query_ticket> submit(std::vector<std::uint8_t> query, query_completion done);
  void close() noexcept;

 private:
  // A new feed and its load, started on io_ (under mutex_).
  void start_load_locked();
  // The load of `feed` ended (on io_'s thread).
  void load_ended(const std::shared_ptr<query_feed>& feed, std::exception_ptr error);

  const client_settings settings_;
  std::mutex mutex_;
  bool closed_ = false;
  std::shared_ptr<query_feed> feed_;      // of the load that runs; null: none
  std::shared_ptr<load_operation> load_;  // once started on io_
  boost::asio::io_context io_{1};
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  std::thread thread_;
};

std::shared_ptr<query_ticket> client_session::submit(std::vector<std::uint8_t> query,
                                                     query_completion done) {
  if (settings_.max_in_flight == 0 || settings_.max_in_flight > 32768) {
    throw setup_error(fmt::format("client_settings::max_in_flight is {}: give 1 to 32,768",
                                  settings_.max_in_flight));
  }
  const std::uint16_t id = take_query_id(query, "the query");
  const std::lock_guard lock(mutex_);
  if (closed_) throw setup_error("the client is being destroyed");
  if (!feed_) start_load_locked();
  auto ticket = std::make_shared<query_ticket>(feed_);
  ticket->numbered(feed_->submit(
      std::move(query), id,
      [ticket, finish = std::move(done)](std::exception_ptr error, client_answer answer) {
        finish(std::move(error), std::move(answer));
      }));
  return ticket;
}

void client_session::start_load_locked() {
  if (!thread_.joinable()) {
    work_.emplace(io_.get_executor());
    thread_ = std::thread([this] { io_.run(); });
  }
  auto feed = std::make_shared<query_feed>(settings_.max_in_flight, true);
  feed_ = feed;
  // The query set only names what the load sends; the feed's queries are the ones sent.
  auto named = std::make_shared<query_set>();
  named->add(encode_query(".", rr_type::ns));
  named->set_origin("the program's queries");
  boost::asio::post(
      io_, [this, feed,
            spec = fed_spec(settings_, std::move(named), settings_.max_in_flight)]() mutable {
        auto load = start_fed_load(
            io_.get_executor(), std::move(spec), feed,
            [this, feed](std::exception_ptr error, run_result) { load_ended(feed, error); });
        const std::lock_guard lock(mutex_);
        if (feed_ == feed) load_ = load;
        if (closed_ && load) stop_load(*load);
      });
}

void client_session::load_ended(const std::shared_ptr<query_feed>& feed, std::exception_ptr error) {
  {
    const std::lock_guard lock(mutex_);
    if (feed_ == feed) {
      feed_.reset();
      load_.reset();
    }
  }
  // A load that could not start (the server's name unresolved, a setting refused) ends its
  // queries with its error; the next query starts another.
  feed->end_all(error);
}

void client_session::close() noexcept {
  std::shared_ptr<load_operation> load;
  std::shared_ptr<query_feed> feed;
  {
    const std::lock_guard lock(mutex_);
    if (closed_) return;
    closed_ = true;
    load = load_;
    feed = feed_;
  }
  if (load) stop_load(*load);
  if (feed) feed->close();
  work_.reset();
  if (thread_.joinable()) thread_.join();
}

std::shared_ptr<client_session> make_session(client_settings settings) {
  return std::make_shared<client_session>(std::move(settings));
}

std::shared_ptr<query_ticket> submit_query(const std::shared_ptr<client_session>& session,
                                           const boost::asio::any_io_executor& executor,
                                           std::vector<std::uint8_t> query, query_completion done) {
  try {
    if (!session) throw setup_error("the client was moved from");
    return session->submit(std::move(query), done);
  } catch (...) {
    boost::asio::post(executor, [error = std::current_exception(), finish = std::move(done)] {
      finish(error, client_answer{});
    });
    return nullptr;
  }
}

void cancel_query(query_ticket& ticket) noexcept {
  try {
    ticket.cancel();
  } catch (...) {  // out of memory: the query ends as it would have
  }
}

void close_session(client_session& session) noexcept {
  session.close();
}

}  // namespace dnstransport::detail
