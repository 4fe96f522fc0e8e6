#pragma once
// Internal: a load fed by the program's own queries (dnstransport::client) instead of a query
// set. The program submits queries from any thread; the load's one client takes them as it
// has room, each into a cell that stands for a query of the set while it is in flight
// (run_plan::query), and tells the feed how each ended (client_base::release). The feed
// completes each query's own callback, once.
//
// Two queries of one question (the name without regard to case, the type, the class) are
// never in flight at once: the second waits for the first to end, so that an answer
// carrying another query's id cannot pass the question check (the load's one_each mode,
// question by question).

#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include <dnstransport/client.hpp>

namespace dnstransport::detail {

class query_feed {
 public:
  // A query's end: on the worker's thread, or on the thread that ends the load for the
  // queries still waiting then.
  using finish = std::function<void(std::exception_ptr, client_answer)>;

  // At most `cells` queries in flight at once (the load's outstanding). `send_again`: a query
  // whose connection ended before its answer goes again, once (send_again below).
  query_feed(std::uint32_t cells, bool send_again);
  query_feed(const query_feed&) = delete;
  query_feed& operator=(const query_feed&) = delete;

  // Any thread. `query` is a checked DNS query whose ID is `id`; it is sent with the ID the
  // client gives it and its answer comes back with `id`. Returns its ticket (for cancel).
  std::uint64_t submit(std::vector<std::uint8_t> query, std::uint16_t id, finish done);
  // The query of `ticket` ends as abandoned (when it has not ended yet).
  void cancel(std::uint64_t ticket);
  // No more queries: the load ends once the submitted ones have ended.
  void close();
  std::uint32_t cells() const noexcept { return static_cast<std::uint32_t>(cells_.size()); }

  // The worker. attach: `wake` posts a call of take_inbox (and the client's tick) to the
  // worker; it is called for each batch of submissions, cancellations and the close.
  void attach(std::function<void()> wake);
  void detach();
  // The submissions, cancellations and close since the last call; cancelled queries end.
  void take_inbox();
  // Worker's view: more queries may come, or some wait.
  bool may_send() const noexcept { return !closed_ || !ready_.empty() || held_ > 0; }
  // Queries that may go now (their question is not in flight).
  std::uint32_t ready() const noexcept { return static_cast<std::uint32_t>(ready_.size()); }
  // The first ready query into a free cell; its index (the slot's query_index).
  std::uint32_t take();
  // A taken query the kernel did not accept: first in line again, its cell free.
  void put_back(std::uint32_t cell);
  // A query whose connection ended before its answer: first in line again, its cell free
  // and its timeout running again from now, when the feed sends again and it was not sent
  // again before (true); else it is left to end (false).
  bool send_again(std::uint32_t cell);
  std::span<const std::uint8_t> query(std::uint32_t cell) const noexcept {
    return cells_[cell].query.octets;
  }
  std::uint16_t udp_answer_limit(std::uint32_t cell) const noexcept {
    return cells_[cell].udp_limit;
  }
  // The largest query submitted so far.
  std::size_t max_size() const noexcept { return max_size_; }
  // The query in `cell` was answered (counted in responses_received): kept for its end.
  void answered(std::uint32_t cell, std::span<const std::uint8_t> message, std::uint8_t rcode,
                std::uint64_t latency_ns);
  // The query in `cell` ended: its callback, and the next query of its question may go.
  void ended(std::uint32_t cell, query_outcome how);
  // Queries waiting longer than `timeout_ns` end as not sent; returns how many.
  std::uint32_t expire_waiting(std::uint64_t now, std::uint64_t timeout_ns);

  // After the load (its worker has ended, or never started): every query that has not ended
  // ends, with `error` when it is set, else as abandoned. The feed takes no more.
  void end_all(std::exception_ptr error);

 private:
  struct fed_query {
    std::vector<std::uint8_t> octets;
    std::string question;  // lower-case name, type and class
    std::uint16_t id = 0;
    std::uint64_t ticket = 0;
    std::uint64_t queued_ns = 0;
    bool sent_again = false;
    finish done;
  };
  struct fed_cell {
    fed_query query;
    client_answer answer;
    std::uint16_t udp_limit = 0;
    bool in_use = false;
    bool over = false;  // its callback ran (cancelled in flight)
  };

  // The query is done: its callback, once; the next of its question made ready.
  void finish_query(fed_query& q, std::exception_ptr error, client_answer answer);
  void admit(fed_query q);
  // Posts the worker's take, once until it runs (mutex_ held).
  void wake_locked();
  void next_of(const std::string& question);

  // Shared with the submitting threads.
  std::mutex mutex_;
  std::vector<fed_query> inbox_;
  std::vector<std::uint64_t> cancelled_;
  std::function<void()> wake_;
  bool wake_posted_ = false;
  bool closing_ = false;
  bool dead_ = false;  // end_all ran
  std::uint64_t next_ticket_ = 1;

  // The worker's.
  const bool send_again_;
  bool closed_ = false;
  std::deque<fed_query> ready_;
  std::size_t again_run_ = 0;  // queries sent again since the last take, first in ready_
  // Per question ready or in flight, the queries of it waiting behind that one.
  std::unordered_map<std::string, std::deque<fed_query>> active_;
  std::size_t held_ = 0;
  std::vector<fed_cell> cells_;
  std::vector<std::uint32_t> free_cells_;
  std::size_t max_size_ = 0;
};

}  // namespace dnstransport::detail
