// The program's queries fed to a load (query_feed.hpp).
#include "engine/query_feed.hpp"

#include <algorithm>
#include <utility>

#include <dnstransport/message.hpp>

#include "engine/run_plan.hpp"
#include "util/clock.hpp"

namespace dnstransport::detail {

namespace {

// The question of a checked query, as two queries of one question have it alike: its name in
// lower case, its type and its class.
std::string question_of(std::span<const std::uint8_t> query) {
  const std::size_t name_end = skip_name(query, dns_header_size).value_or(query.size() - 4);
  std::string key(query.begin() + dns_header_size, query.begin() + name_end + 4);
  std::transform(key.begin(), key.begin() + static_cast<std::ptrdiff_t>(name_end - dns_header_size),
                 key.begin(),
                 [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; });
  return key;
}

// Calls a query's callback, moved out first: what it holds is released here, once.
void call(query_feed::finish& done, std::exception_ptr error, client_answer answer) {
  query_feed::finish once = std::move(done);
  done = nullptr;
  if (once) once(std::move(error), std::move(answer));
}

client_answer unanswered(query_outcome how) {
  client_answer answer;
  answer.outcome = how;
  return answer;
}

}  // namespace

query_feed::query_feed(std::uint32_t cells, bool send_again)
    : send_again_(send_again), cells_(cells) {
  free_cells_.reserve(cells);
  for (std::uint32_t i = cells; i > 0; --i) free_cells_.push_back(i - 1);
}

std::uint64_t query_feed::submit(std::vector<std::uint8_t> query, std::uint16_t id, finish done) {
  fed_query q;
  q.question = question_of(query);
  q.octets = std::move(query);
  q.id = id;
  q.done = std::move(done);
  std::uint64_t ticket = 0;
  {
    const std::lock_guard lock(mutex_);
    ticket = q.ticket = next_ticket_++;
    if (!dead_) {
      inbox_.push_back(std::move(q));
      wake_locked();
      return ticket;
    }
  }
  call(q.done, nullptr, unanswered(query_outcome::abandoned));  // the load had ended: never sent
  return ticket;
}

void query_feed::cancel(std::uint64_t ticket) {
  const std::lock_guard lock(mutex_);
  if (dead_) return;
  cancelled_.push_back(ticket);
  wake_locked();
}

void query_feed::close() {
  const std::lock_guard lock(mutex_);
  closing_ = true;
  wake_locked();
}

void query_feed::wake_locked() {
  // Under the lock, so that detach (and the worker's end) waits for a post under way.
  if (!wake_ || wake_posted_) return;
  wake_posted_ = true;
  wake_();
}

void query_feed::attach(std::function<void()> wake) {
  const std::lock_guard lock(mutex_);
  wake_ = std::move(wake);
  wake_posted_ = false;
}

void query_feed::detach() {
  const std::lock_guard lock(mutex_);
  wake_ = nullptr;
}

void query_feed::take_inbox() {
  std::vector<fed_query> in;
  std::vector<std::uint64_t> cancelled;
  {
    const std::lock_guard lock(mutex_);
    in.swap(inbox_);
    cancelled.swap(cancelled_);
    closed_ = closing_;
    wake_posted_ = false;
  }
  const std::uint64_t now = monotonic_ns();
  for (fed_query& q : in) {
    q.queued_ns = now;
    max_size_ = std::max(max_size_, q.octets.size());
    admit(std::move(q));
  }
  for (const std::uint64_t ticket : cancelled) {
    // Waiting: it leaves its line. In flight: it ends now; its slot ends it again later,
    // which then does nothing.
    if (const auto it = std::find_if(ready_.begin(), ready_.end(),
                                     [ticket](const fed_query& q) { return q.ticket == ticket; });
        it != ready_.end()) {
      fed_query q = std::move(*it);
      ready_.erase(it);
      finish_query(q, nullptr, unanswered(query_outcome::abandoned));
      continue;
    }
    bool found = false;
    for (auto& [question, line] : active_) {
      const auto it = std::find_if(line.begin(), line.end(),
                                   [ticket](const fed_query& q) { return q.ticket == ticket; });
      if (it == line.end()) continue;
      fed_query q = std::move(*it);
      line.erase(it);
      --held_;
      call(q.done, nullptr, unanswered(query_outcome::abandoned));
      found = true;
      break;
    }
    if (found) continue;
    for (fed_cell& c : cells_) {
      if (!c.in_use || c.over || c.query.ticket != ticket) continue;
      c.over = true;
      call(c.query.done, nullptr, unanswered(query_outcome::abandoned));
      break;
    }
  }
}

void query_feed::admit(fed_query q) {
  auto [it, first] = active_.try_emplace(q.question);
  if (first) {
    ready_.push_back(std::move(q));
  } else {
    it->second.push_back(std::move(q));
    ++held_;
  }
}

void query_feed::next_of(const std::string& question) {
  const auto it = active_.find(question);
  if (it == active_.end()) return;
  if (it->second.empty()) {
    active_.erase(it);
    return;
  }
  ready_.push_back(std::move(it->second.front()));
  it->second.pop_front();
  --held_;
}

void query_feed::finish_query(fed_query& q, std::exception_ptr error, client_answer answer) {
  call(q.done, std::move(error), std::move(answer));
  next_of(q.question);
}

std::uint32_t query_feed::take() {
  const std::uint32_t index = free_cells_.back();
  free_cells_.pop_back();
  again_run_ = 0;
  fed_cell& c = cells_[index];
  c.query = std::move(ready_.front());
  ready_.pop_front();
  c.answer = client_answer{};
  c.udp_limit = dnstransport::udp_answer_limit(c.query.octets);
  c.in_use = true;
  c.over = false;
  return index;
}

void query_feed::put_back(std::uint32_t index) {
  fed_cell& c = cells_[index];
  c.in_use = false;
  ready_.push_front(std::move(c.query));
  free_cells_.push_back(index);
  if (c.over) {  // cancelled meanwhile: it ended, the next of its question goes
    fed_query q = std::move(ready_.front());
    ready_.pop_front();
    next_of(q.question);
  }
}

bool query_feed::send_again(std::uint32_t index) {
  fed_cell& c = cells_[index];
  if (!send_again_ || c.over || c.query.sent_again) return false;
  c.query.sent_again = true;
  c.query.queued_ns = monotonic_ns();  // its timeout runs again from here, unsent
  c.in_use = false;
  free_cells_.push_back(index);
  // A connection's queries are handed back oldest first: they go again in that order,
  // before the others.
  again_run_ = std::min(again_run_, ready_.size());
  ready_.insert(ready_.begin() + static_cast<std::ptrdiff_t>(again_run_), std::move(c.query));
  ++again_run_;
  return true;
}

void query_feed::answered(std::uint32_t index, std::span<const std::uint8_t> message,
                          std::uint8_t rcode, std::uint64_t latency_ns) {
  fed_cell& c = cells_[index];
  if (c.over) return;
  try {
    c.answer.message.assign(message.begin(), message.end());
  } catch (...) {  // out of memory: the answer is counted, its copy is lost
    c.answer.message.clear();
  }
  if (c.answer.message.size() >= 2) patch_id(c.answer.message.data(), c.query.id);
  c.answer.rcode = rcode;
  c.answer.latency_ns = latency_ns;
  c.answer.answered = true;
}

void query_feed::ended(std::uint32_t index, query_outcome how) {
  fed_cell& c = cells_[index];
  c.in_use = false;
  free_cells_.push_back(index);
  if (c.over) {
    next_of(c.query.question);
    return;
  }
  client_answer answer = std::move(c.answer);
  answer.outcome = answer.answered ? query_outcome::answered : how;
  finish_query(c.query, nullptr, std::move(answer));
}

std::uint32_t query_feed::expire_waiting(std::uint64_t now, std::uint64_t timeout_ns) {
  std::uint32_t expired = 0;
  const auto late = [now, timeout_ns](const fed_query& q) {
    return q.queued_ns + timeout_ns <= now;
  };
  if (held_ > 0) {
    for (auto& [question, line] : active_) {
      while (!line.empty() && late(line.front())) {
        fed_query q = std::move(line.front());
        line.pop_front();
        --held_;
        ++expired;
        call(q.done, nullptr, unanswered(query_outcome::not_sent));
      }
    }
  }
  std::vector<fed_query> late_ones;
  for (auto it = ready_.begin(); it != ready_.end();) {
    if (late(*it)) {
      late_ones.push_back(std::move(*it));
      it = ready_.erase(it);
    } else {
      ++it;
    }
  }
  // Each one's question lets its next query go (to the back of the line).
  for (fed_query& q : late_ones) finish_query(q, nullptr, unanswered(query_outcome::not_sent));
  expired += static_cast<std::uint32_t>(late_ones.size());
  return expired;
}

void query_feed::end_all(std::exception_ptr error) {
  std::vector<fed_query> in;
  {
    const std::lock_guard lock(mutex_);
    dead_ = true;
    in.swap(inbox_);
  }
  const auto end = [&error](fed_query& q) {
    call(q.done, error, error ? client_answer{} : unanswered(query_outcome::abandoned));
  };
  for (fed_query& q : in) end(q);
  for (fed_query& q : ready_) end(q);
  ready_.clear();
  for (auto& [question, line] : active_) {
    for (fed_query& q : line) end(q);
  }
  active_.clear();
  held_ = 0;
  for (fed_cell& c : cells_) {
    if (c.in_use && !c.over) end(c.query);
    c.in_use = false;
  }
}

std::span<const std::uint8_t> run_plan::fed_query(std::uint32_t index) const noexcept {
  return feed->query(index);
}

std::size_t run_plan::fed_max_size() const noexcept {
  return feed->max_size();
}

std::uint16_t run_plan::fed_udp_answer_limit(std::uint32_t index) const noexcept {
  return feed->udp_answer_limit(index);
}

}  // namespace dnstransport::detail
