#include "engine/engine.hpp"

#include <sys/prctl.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <functional>

#include "util/clock.hpp"

namespace dnstransport::detail {

namespace {

// The calling thread's resource use so far.
rusage thread_usage() noexcept {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return usage;
}

double cpu_seconds(const rusage& usage) noexcept {
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

// Voluntary context switches: the thread's sleeps.
std::uint64_t sleeps(const rusage& usage) noexcept {
  return static_cast<std::uint64_t>(usage.ru_nvcsw);
}

}  // namespace

arrival_schedule::arrival_schedule(const run_plan& plan, unsigned index)
    : period_ns_(plan.rate_per_client > 0 ? 1e9 / plan.rate_per_client : 0),
      // The phases spread the clients evenly over one period, so a constant load is smooth
      // rather than one burst from every client at the same instant.
      base_ns_(static_cast<double>(plan.start_ns) +
               period_ns_ * static_cast<double>(index) / static_cast<double>(plan.clients)),
      poisson_(plan.arrivals == run_plan::schedule::poisson),
      next_ns_(static_cast<std::uint64_t>(base_ns_)),
      random_(0x9e3779b97f4a7c15ULL * (std::uint64_t{index} + 1)),
      gap_(period_ns_ > 0 ? 1.0 / period_ns_ : 1.0),
      waiting_(std::max(plan.outstanding, 1u)) {
  if (plan.arrivals == run_plan::schedule::replay) {
    replay_ = &plan;
    replay_at_ = plan.replay_first[index];
    replay_end_ = plan.replay_first[index + 1];
    next_ns_ =
        replay_at_ < replay_end_ ? plan.start_ns + plan.replay_offset_ns[replay_at_] : UINT64_MAX;
    return;
  }
  if (poisson_) next_ns_ = plan.start_ns + static_cast<std::uint64_t>(gap_(random_));
}

std::uint32_t arrival_schedule::next_query() const noexcept {
  return replay_ != nullptr && replay_at_ < replay_end_ ? replay_->replay_query[replay_at_] : 0;
}

void arrival_schedule::advance() noexcept {
  if (replay_ != nullptr) {
    ++replay_at_;
    next_ns_ = replay_at_ < replay_end_ ? replay_->start_ns + replay_->replay_offset_ns[replay_at_]
                                        : UINT64_MAX;
  } else if (poisson_) {
    next_ns_ += static_cast<std::uint64_t>(gap_(random_));
  } else {
    ++k_;
    next_ns_ = static_cast<std::uint64_t>(base_ns_ + period_ns_ * static_cast<double>(k_));
  }
}

void arrival_schedule::push_back(arrival a) noexcept {
  waiting_[(waiting_head_ + waiting_count_) % waiting_.size()] = a;
  ++waiting_count_;
}

void arrival_schedule::push_front(arrival a) noexcept {
  waiting_head_ =
      waiting_head_ == 0 ? static_cast<std::uint32_t>(waiting_.size() - 1) : waiting_head_ - 1;
  waiting_[waiting_head_] = a;
  ++waiting_count_;
}

arrival_schedule::arrival arrival_schedule::take(std::uint32_t i) noexcept {
  const arrival a = waiting_at(i);
  // The ones before it move up one place, keeping their order.
  for (; i > 0; --i) {
    waiting_[(waiting_head_ + i) % waiting_.size()] =
        waiting_[(waiting_head_ + i - 1) % waiting_.size()];
  }
  pop_front();
  return a;
}

arrival_schedule::arrival arrival_schedule::pop_front() noexcept {
  const arrival a = waiting_[waiting_head_];
  waiting_head_ = waiting_head_ + 1 == waiting_.size() ? 0 : waiting_head_ + 1;
  --waiting_count_;
  return a;
}

client_base::client_base(worker& owner, unsigned index, std::uint64_t quota)
    : owner_(owner),
      index_(index),
      slots_(owner.plan().outstanding, static_cast<std::uint16_t>(index * 7919u)),
      // Clients start at different places in the query set so they do not all send the
      // same name at the same moment.
      next_query_(static_cast<std::uint32_t>((static_cast<std::uint64_t>(index) * 7919u) %
                                             owner.plan().queries->size())),
      quota_(quota),
      pace_phase_(static_cast<double>(index) / owner.plan().clients),
      question_of_(owner.plan().question_of.data()),
      query_count_(static_cast<std::uint32_t>(owner.plan().question_of.size())),
      questions_(owner.plan().outstanding, owner.plan().distinct_questions),
      question_room_(std::min(owner.plan().outstanding, owner.plan().distinct_questions)) {}

void client_base::open_schedule() {
  if (plan().open_loop() && feeder_ == nullptr) {
    schedule_ = std::make_unique<arrival_schedule>(plan(), index_);
  }
}

std::uint64_t client_base::next_arrival_ns() const noexcept {
  return schedule_ && arrivals_open_ ? schedule_->next() : UINT64_MAX;
}

void client_base::admit_arrivals(std::uint64_t now) noexcept {
  if (!schedule_) return;
  while (arrivals_open_ && schedule_->next() <= now) {
    const std::uint64_t t = schedule_->next();
    if (t >= plan().send_end_ns || quota_ == 0) {
      arrivals_open_ = false;
      break;
    }
    const bool counted = t >= plan().measure_start_ns;
    if (counted && quota_ != UINT64_MAX) --quota_;
    // A replayed query may wait for its question to be answered; the others of the cycle
    // never wait for one.
    const std::uint32_t limit = schedule_->replays() ? plan().outstanding : question_room_;
    if (slots_.in_flight() + schedule_->waiting() < limit) {
      schedule_->push_back({t, schedule_->next_query()});
    } else if (counted) {
      owner_.roll_timeline(now);
      ++counts().not_sent_outstanding;
    }
    schedule_->advance();
  }
  if (quota_ == 0) arrivals_open_ = false;
}

void client_base::expire_waiting(std::uint64_t now) noexcept {
  if (!schedule_) return;
  while (!schedule_->waiting_empty() && schedule_->oldest_waiting() + plan().timeout_ns <= now) {
    if (schedule_->pop_front().at >= plan().measure_start_ns) ++counts().not_sent_timeout;
  }
}

bool client_base::may_send(std::uint64_t now) const noexcept {
  if (feeder_ != nullptr) {
    return !retries_.empty() || feeder_->may_send(now) || !feeder_->slots_.empty();
  }
  if (schedule_) {
    // A client whose next scheduled query falls after the end still may send (and keeps its
    // connection) until the end: it does not leave early, emptying the last row's connections.
    // A replay whose client has no query left (next is UINT64_MAX) is done.
    const std::uint64_t next = schedule_->next();
    return !schedule_->waiting_empty() || (arrivals_open_ && quota_ > 0 && next != UINT64_MAX &&
                                           (next < plan().send_end_ns || now < plan().send_end_ns));
  }
  return quota_ > 0 && now < plan().send_end_ns;
}

std::uint32_t client_base::send_allowance(std::uint64_t now) noexcept {
  if (!may_send(now)) return 0;
  const std::uint32_t room = std::min(slots_.free_count(), question_room_ - slots_.in_flight());
  if (feeder_ != nullptr) {
    // In order; a retry whose question is still in flight waits for it.
    if (retries_.empty() || questions_.contains(question_of_[retries_.front().query_index]))
      return 0;
    return std::min<std::uint32_t>(room, 1);
  }
  if (schedule_) {
    admit_arrivals(now);
    return schedule_->replays() ? replay_allowance(room) : std::min(room, schedule_->waiting());
  }
  std::uint64_t allowance = std::min<std::uint64_t>(room, quota_);
  if (plan().rate_per_client > 0) {
    // Query k of this client is due at (k + phase) / rate: the phases spread the clients
    // evenly over one interval, so a paced load is smooth instead of one burst from every
    // client at the same instant.
    const double elapsed = static_cast<double>(now - plan().start_ns) / 1e9;
    const double due = elapsed * plan().rate_per_client - pace_phase_;
    const std::uint64_t permitted = due < 0 ? 0 : static_cast<std::uint64_t>(due) + 1;
    allowance = std::min(allowance, permitted > sent_ ? permitted - sent_ : 0);
  }
  return static_cast<std::uint32_t>(allowance);
}

std::uint32_t client_base::replay_allowance(std::uint32_t room) const noexcept {
  // The waiting queries whose question is not in flight, each question once: a client that
  // asks again waits for its first answer, and its other queries do not wait behind it. The
  // waiting list is at most --outstanding long, so the scan stays short.
  std::uint32_t n = 0;
  for (std::uint32_t i = 0; i < schedule_->waiting() && n < room; ++i) {
    const std::uint32_t question = question_of_[schedule_->waiting_at(i).query];
    if (questions_.contains(question)) continue;
    bool repeated = false;
    for (std::uint32_t k = 0; k < i && !repeated; ++k) {
      repeated = question_of_[schedule_->waiting_at(k).query] == question;
    }
    if (!repeated) ++n;
  }
  return n;
}

slot_table::slot& client_base::take_slot(std::uint64_t now) noexcept {
  if (feeder_ != nullptr) {
    const retry r = retries_.front();
    retries_.pop_front();
    slot_table::slot& s = slots_.acquire(now, r.query_index, r.counted);
    s.sent_ns = r.sent_ns;
    questions_.insert(question_of_[r.query_index]);
    return s;
  }
  std::uint32_t query = next_query_;
  std::uint64_t scheduled = 0;
  if (schedule_ && schedule_->replays()) {
    // The oldest waiting query of the capture whose question is not in flight
    // (send_allowance counted it, so the search ends).
    std::uint32_t i = 0;
    while (questions_.contains(question_of_[schedule_->waiting_at(i).query])) ++i;
    const arrival_schedule::arrival a = schedule_->take(i);
    query = a.query;
    scheduled = a.at;
    questions_.insert(question_of_[query]);
  } else {
    // The next query of the cycle whose question is not in flight (send_allowance left room
    // for one, so the search ends).
    while (!questions_.insert(question_of_[query])) {
      if (++query == query_count_) query = 0;
    }
    next_query_ = query + 1 == query_count_ ? 0 : query + 1;
    if (schedule_) scheduled = schedule_->pop_front().at;
  }
  owner_.roll_timeline(now);
  if (schedule_) {
    // Open loop: the query's time is its schedule's (the quota was taken when it came).
    const bool counted = scheduled >= plan().measure_start_ns;
    slot_table::slot& s = slots_.acquire(now, query, counted);
    s.sent_ns = scheduled;
    ++sent_;
    if (counted) ++counts().queries_sent;
    return s;
  }
  const bool counted = measuring(now);
  slot_table::slot& s = slots_.acquire(now, query, counted);
  ++sent_;
  // The count is of measured queries: the warm-up's do not use it up.
  if (quota_ != UINT64_MAX && counted) --quota_;
  if (counted) ++counts().queries_sent;
  return s;
}

void client_base::return_slot(slot_table::slot& s) noexcept {
  if (feeder_ != nullptr) {
    retries_.push_front({s.query_index, s.sent_ns, s.counted});
  } else if (schedule_) {
    schedule_->push_front({s.sent_ns, s.query_index});
    --sent_;
    if (s.counted) --counts().queries_sent;
    next_query_ = s.query_index;
  } else {
    --sent_;
    if (quota_ != UINT64_MAX && s.counted) ++quota_;
    if (s.counted) --counts().queries_sent;
    next_query_ = s.query_index;
  }
  release(s, slot_table::past::nothing);
}

void client_base::release(slot_table::slot& s, slot_table::past outcome) noexcept {
  if (schedule_ && s.counted && outcome != slot_table::past::nothing) {
    counts().send_lag.record(s.taken_ns - s.sent_ns);
  }
  questions_.erase(question_of_[s.query_index]);
  slots_.release(s, outcome);
}

void client_base::connection_up() noexcept {
  if (connection_live_) return;
  connection_live_ = true;
  owner_.count_open_connection(1);
}

void client_base::connection_down() noexcept {
  if (!connection_live_) return;
  connection_live_ = false;
  owner_.count_open_connection(-1);
}

slot_table::slot* client_base::in_flight(std::uint16_t id, std::uint64_t now) noexcept {
  query_counters& r = counts();
  slot_table::slot* s = slots_.find(id);
  if (s == nullptr) {
    if (measuring(now)) {
      switch (slots_.history(id)) {
        case slot_table::past::answered:
          ++r.duplicates;
          break;
        case slot_table::past::expired:
          ++r.late;
          break;
        case slot_table::past::nothing:
          ++r.unexpected;
          break;
      }
    }
    return nullptr;
  }
  if (now - s->sent_ns >= plan().timeout_ns) {
    // Its timeout passed before this answer was read (the tick that would have expired it
    // had not run yet): lost, and the answer late, exactly as if the tick had come first.
    if (s->counted) ++r.lost;
    if (measuring(now)) ++r.late;
    release(*s, slot_table::past::expired);
    return nullptr;
  }
  return s;
}

client_base::completion client_base::on_message(std::span<const std::uint8_t> message,
                                                std::uint64_t now, bool datagram,
                                                std::uint64_t received_ns) noexcept {
  if (message.size() < 2) {
    if (measuring(now)) ++counts().unexpected;
    return {};
  }
  const std::uint16_t id = read_id(message.data());
  slot_table::slot* s = in_flight(id, now);
  return s == nullptr ? completion{} : complete(*s, message, now, id, datagram, received_ns);
}

client_base::completion client_base::on_answer(std::uint16_t id,
                                               std::span<const std::uint8_t> message,
                                               std::uint64_t now, std::uint16_t wire_id,
                                               std::uint64_t received_ns) noexcept {
  slot_table::slot* s = in_flight(id, now);
  return s == nullptr ? completion{} : complete(*s, message, now, wire_id, false, received_ns);
}

void client_base::fail_exchange(std::uint16_t id, std::uint64_t now, std::string_view cause,
                                exchange_layer layer) noexcept {
  slot_table::slot* s = in_flight(id, now);
  if (s == nullptr) return;
  if (s->counted) {
    const bool quic = layer == exchange_layer::quic;
    ++(quic ? counts().quic_failed : counts().http_failed);
    try {
      ++(quic ? counts().quic_failures : counts().http_failures)[std::string(cause)];
    } catch (...) {  // out of memory: the total still counts it
    }
  }
  release(*s, slot_table::past::answered);
}

void client_base::lose_on_close(std::uint16_t id) noexcept {
  slot_table::slot* s = slots_.find(id);
  if (s == nullptr) return;
  if (s->counted) ++counts().lost_on_close;
  release(*s, slot_table::past::expired);
}

client_base::completion client_base::complete(slot_table::slot& slot,
                                              std::span<const std::uint8_t> message,
                                              std::uint64_t now, std::uint16_t expected_id,
                                              bool datagram, std::uint64_t received_ns) noexcept {
  owner_.roll_timeline(now);
  // A kernel stamp outside (sent, now] (a clock stepped in between) is not believed.
  const std::uint64_t answered_ns =
      received_ns > slot.sent_ns && received_ns <= now ? received_ns : now;
  query_counters& r = counts();
  slot_table::slot* s = &slot;
  completion done{true, false, s->sequence, s->first_on_connection};
  done.latency_ns = answered_ns - s->sent_ns;
  if (datagram && message.size() > plan().udp_answer_limits[s->query_index]) {
    // A protocol violation, whatever the message holds: no stub would take it.
    if (s->counted) ++r.oversized;
  } else {
    const response_summary summary = check_response(message, (*plan().queries)[s->query_index],
                                                    expected_id, plan().read_edns_options);
    const bool ok = summary.verdict == response_verdict::ok;
    if (ok && summary.keepalive) done.keepalive_timeout = summary.keepalive_timeout;
    if (ok && summary.truncated && retry_truncated(*s)) {
      if (s->counted) ++r.tc_retried;
    } else if (s->counted) {
      switch (summary.verdict) {
        case response_verdict::ok:
          if (summary.truncated) {
            ++r.truncated;  // no answer was delivered
            break;
          }
          ++r.responses_received;
          done.answered = true;
          ++r.rcodes[summary.rcode & 0x0f];
          if (summary.authenticated) ++r.authenticated_answers;
          if (feeder_ != nullptr) ++r.tc_retry_answered;
          r.latency.record(answered_ns - s->sent_ns);
          owner_.row_latency.record(answered_ns - s->sent_ns);
          owner_.last_answer_ns = std::max(owner_.last_answer_ns, now);
          if (summary.keepalive) count_keepalive(summary.keepalive_timeout);
          if (summary.padded) count_padded(message.size());
          break;
        case response_verdict::too_short:
        case response_verdict::malformed:
          ++r.malformed;
          break;
        case response_verdict::not_response:
        case response_verdict::wrong_id:
        case response_verdict::wrong_opcode:
        case response_verdict::wrong_question:
          ++r.mismatched;
          break;
      }
    }
  }
  release(*s, slot_table::past::answered);
  return done;
}

void client_base::count_keepalive(std::uint16_t timeout) noexcept {
  query_counters& r = counts();
  ++r.keepalive_answers;
  r.keepalive_min = std::min<std::uint32_t>(r.keepalive_min, timeout);
  r.keepalive_max = std::max<std::uint32_t>(r.keepalive_max, timeout);
}

void client_base::count_padded(std::size_t size) noexcept {
  query_counters& r = counts();
  ++r.padded_answers;
  try {
    ++r.padded_sizes[static_cast<std::uint32_t>(size)];
  } catch (...) {  // out of memory: the total still counts it
  }
}

void client_base::expire_waiting_retries(std::uint64_t now) noexcept {
  while (!retries_.empty() && retries_.front().sent_ns + plan().timeout_ns <= now) {
    if (retries_.front().counted) ++counts().lost;
    retries_.pop_front();
  }
}

void client_base::expire(std::uint64_t now) noexcept {
  const std::uint64_t timeout = plan().timeout_ns;
  expire_waiting_retries(now);
  while (slot_table::slot* s = slots_.oldest()) {
    if (s->sent_ns + timeout > now) break;
    if (s->counted) ++counts().lost;
    release(*s, slot_table::past::expired);
  }
}

void client_base::fail_in_flight(bool abandoned) noexcept {
  while (slot_table::slot* s = slots_.oldest()) {
    if (s->counted) {
      if (abandoned) {
        ++counts().abandoned;
      } else {
        ++counts().lost_on_close;
      }
    }
    release(*s, slot_table::past::expired);
  }
}

worker::worker(const run_plan& plan, std::vector<unsigned> client_indices,
               std::vector<std::uint64_t> quotas)
    : plan_(plan),
      tick_timer_(io_),
      arrival_timer_(io_),
      delay_timer_(io_),
      scratch_(scratch_count * scratch_size) {
  clients_.reserve(client_indices.size());
  if (plan.coalesce_ns > 0) {
    // Each client waits at most once at a time: no allocation while the run goes.
    delayed_.reserve(client_indices.size());
    reading_.reserve(client_indices.size());
  }
  for (std::size_t i = 0; i < client_indices.size(); ++i) {
    clients_.push_back(plan.transport->make_client(*this, client_indices[i], quotas[i]));
  }
}

worker::~worker() = default;

std::span<std::uint8_t> worker::scratch(std::size_t i) noexcept {
  return {scratch_.data() + i * scratch_size, scratch_size};
}

void worker::run() {
  const double cpu_start = cpu_seconds(thread_usage());
  const std::uint64_t wall_start = monotonic_ns();
  if (plan_.interval_ns > 0) timeline_next_ns_ = plan_.measure_start_ns + plan_.interval_ns;
  // Without a warm-up the clients' socket set-up counts too.
  if (wall_start >= plan_.measure_start_ns) open_window();
  for (auto& c : clients_) c->open_schedule();
  for (auto& c : clients_) c->start();
  readiness_.start();
  if (plan_.open_loop()) {
    // Linux lets a timer fire up to 50 us late by default (timer slack), which would show
    // in every open-loop latency; 1 us keeps sends on their schedule.
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    for (std::uint32_t i = 0; i < clients_.size(); ++i) {
      const std::uint64_t next = clients_[i]->next_arrival_ns();
      if (next != UINT64_MAX) arrivals_.emplace_back(next, i);
    }
    std::make_heap(arrivals_.begin(), arrivals_.end(), std::greater<>());
    schedule_arrival();
  }
  schedule_tick();
  io_.run();
  // A run that ended in its warm-up measured nothing.
  if (!window_open_) open_window();
  const rusage at_end = thread_usage();  // one reading for the sleeps and the CPU time
  shard_.generator.sleeps = sleeps(at_end);
  shard_.generator.subtract(generator_at_window_);
  integrate_connections(monotonic_ns());
  finish_timeline();
  thread_cpu_seconds = cpu_seconds(at_end) - cpu_start;
  wall_seconds = static_cast<double>(monotonic_ns() - wall_start) / 1e9;
  pub_sent_.store(shard_.queries.queries_sent, std::memory_order_relaxed);
  pub_received_.store(shard_.queries.responses_received, std::memory_order_relaxed);
  pub_lost_.store(shard_.queries.lost + shard_.queries.lost_on_close, std::memory_order_relaxed);
}

void worker::open_window() noexcept {
  generator_at_window_ = shard_.generator;
  generator_at_window_.sleeps = sleeps(thread_usage());
  window_open_ = true;
}

void worker::open_window_if_due() noexcept {
  if (monotonic_ns() >= plan_.measure_start_ns) open_window();
}

void worker::count_open_connection(int delta) noexcept {
  const std::uint64_t now = monotonic_ns();
  // Rows that ended before this change show the connections open at their end, even when the
  // worker comes to them late (a busy CPU): a connection the run's end closes is not taken
  // from its last full row.
  roll_timeline(now);
  integrate_connections(now);
  open_connections += static_cast<std::uint64_t>(static_cast<std::int64_t>(delta));
  if (plan_.connections_gauge == nullptr) return;
  const std::int64_t open = plan_.connections_gauge->open.fetch_add(delta) + delta;
  if (delta > 0) note_connections_max(now, static_cast<std::uint64_t>(open));
}

void worker::integrate_connections(std::uint64_t now) noexcept {
  const std::uint64_t from = std::max(connections_since_ns_, plan_.measure_start_ns);
  const std::uint64_t to = std::min(now, plan_.send_end_ns);
  if (to > from) shard_.connections.open_ns += open_connections * (to - from);
  connections_since_ns_ = now;
}

void worker::note_connections_max(std::uint64_t now, std::uint64_t open) noexcept {
  if (now < plan_.measure_start_ns || now >= plan_.send_end_ns) return;
  std::atomic<std::uint64_t>& max = plan_.connections_gauge->max;
  std::uint64_t seen = max.load(std::memory_order_relaxed);
  while (open > seen && !max.compare_exchange_weak(seen, open, std::memory_order_relaxed)) {
  }
}

void worker::schedule_arrival() {
  if (arrivals_.empty()) return;
  arrival_timer_.expires_at(
      std::chrono::steady_clock::time_point(std::chrono::nanoseconds(arrivals_.front().first)));
  arrival_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    count_wakeup();
    on_arrival();
  });
}

void worker::on_arrival() {
  if (stop_requested_.load(std::memory_order_relaxed)) return;  // the tick stops the worker
  const std::uint64_t now = monotonic_ns();
  roll_timeline(now);
  while (!arrivals_.empty() && arrivals_.front().first <= now) {
    std::pop_heap(arrivals_.begin(), arrivals_.end(), std::greater<>());
    const std::uint32_t i = arrivals_.back().second;
    arrivals_.pop_back();
    client_base& c = *clients_[i];
    c.admit_arrivals(now);  // moves its next arrival past now
    c.tick(now);            // sends what came, where the client can
    const std::uint64_t next = c.next_arrival_ns();
    if (next != UINT64_MAX) {
      arrivals_.emplace_back(next, i);
      std::push_heap(arrivals_.begin(), arrivals_.end(), std::greater<>());
    }
  }
  schedule_arrival();
}

void worker::delay_read(client_base& c, std::uint64_t delay_ns) {
  delayed_.push_back(&c);
  const auto due = std::chrono::steady_clock::now() + std::chrono::nanoseconds(delay_ns);
  if (delay_armed_ && delay_due_ <= due) return;
  delay_armed_ = true;
  delay_due_ = due;
  // Moving an armed timer forward cancels its wait: that handler sees operation_aborted.
  delay_timer_.expires_at(due);
  delay_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    delay_armed_ = false;
    count_wakeup();
    on_delay_over();
  });
}

void worker::on_delay_over() {
  // Clients that ask again while being served wait for the next expiry.
  reading_.swap(delayed_);
  for (client_base* c : reading_) c->read_delayed();
  reading_.clear();
}

worker::row worker::cumulative() const noexcept {
  const query_counters& q = shard_.queries;
  const connection_counters& c = shard_.connections;
  row r;
  r.sent = q.queries_sent;
  r.answered = q.responses_received;
  r.lost = q.lost + q.lost_on_close;
  r.failed = q.malformed + q.mismatched + q.truncated + q.oversized + q.http_failed +
             q.quic_failed + q.abandoned;
  r.not_sent = q.not_sent_outstanding + q.not_sent_timeout;
  r.connections_opened = c.opened;
  r.handshakes = c.handshakes_full + c.handshakes_resumed;
  return r;
}

void worker::append_row(const row& now_counts) noexcept {
  try {
    row r;
    r.index = row_index_;
    r.sent = now_counts.sent - row_start_.sent;
    r.answered = now_counts.answered - row_start_.answered;
    r.lost = now_counts.lost - row_start_.lost;
    r.failed = now_counts.failed - row_start_.failed;
    r.not_sent = now_counts.not_sent - row_start_.not_sent;
    r.connections_opened = now_counts.connections_opened - row_start_.connections_opened;
    r.handshakes = now_counts.handshakes - row_start_.handshakes;
    r.connections_open = open_connections;
    r.latency_min = row_latency.min();
    r.latency_max = row_latency.max();
    r.latency_sum = row_latency.sum();
    row_latency.for_each_bucket([&r](std::uint64_t lowest, std::uint64_t, std::uint64_t n) {
      r.latency.emplace_back(lowest, n);
    });
    rows_.push_back(std::move(r));
  } catch (...) {  // out of memory: the timeline misses a row, the totals do not
  }
  row_latency.clear();
  row_start_ = now_counts;
}

void worker::close_rows(std::uint64_t now) noexcept {
  while (now >= timeline_next_ns_) {
    append_row(cumulative());
    ++row_index_;
    timeline_next_ns_ += plan_.interval_ns;
  }
}

void worker::finish_timeline() noexcept {
  if (plan_.interval_ns == 0 || monotonic_ns() < plan_.measure_start_ns) return;
  roll_timeline(monotonic_ns());
  append_row(cumulative());
  timeline_next_ns_ = UINT64_MAX;
}

void worker::schedule_tick() {
  // Timeouts and closed-loop rate pacing are checked in bulk on a tick; a finer tick only
  // when pacing closed-loop (open-loop sends have their own timer).
  const auto period = plan_.rate_per_client > 0 && !plan_.open_loop()
                          ? std::chrono::milliseconds(2)
                          : std::chrono::milliseconds(10);
  tick_timer_.expires_after(period);
  tick_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    count_wakeup();
    on_tick();
  });
}

void worker::on_tick() {
  if (stop_requested_.load(std::memory_order_relaxed)) {
    for (auto& c : clients_) c->abandon();
    io_.stop();
    return;
  }
  const std::uint64_t now = monotonic_ns();
  roll_timeline(now);
  if (!window_max_noted_ && now >= plan_.measure_start_ns && plan_.connections_gauge != nullptr) {
    // Connections opened in the warm-up and still open count at the window's start.
    window_max_noted_ = true;
    const std::int64_t open = plan_.connections_gauge->open.load(std::memory_order_relaxed);
    if (open > 0) note_connections_max(now, static_cast<std::uint64_t>(open));
  }
  bool all_finished = true;
  for (auto& c : clients_) {
    c->expire_waiting(now);
    c->tick(now);
    all_finished = all_finished && c->finished(now);
  }
  pub_sent_.store(shard_.queries.queries_sent, std::memory_order_relaxed);
  pub_received_.store(shard_.queries.responses_received, std::memory_order_relaxed);
  pub_lost_.store(shard_.queries.lost + shard_.queries.lost_on_close, std::memory_order_relaxed);
  if (all_finished) {
    io_.stop();
    return;
  }
  schedule_tick();
}

}  // namespace dnstransport::detail
