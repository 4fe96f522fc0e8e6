// One worker: its thread's io_context and clients, the run's clock (arrivals, ticks, the
// measured window), the timeline rows and the open connections it integrates.
#include "engine/engine.hpp"

#include <sys/prctl.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <iterator>

#include <boost/asio/post.hpp>

#include "engine/query_feed.hpp"
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

worker::worker(const run_plan& plan, std::vector<unsigned> client_indices,
               std::vector<std::uint64_t> quotas)
    : plan_(plan), tick_timer_(io_), scratch_(scratch_count * scratch_size) {
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
  if (plan_.feed != nullptr) {
    // The program's queries: what came before the start is taken now, the rest as it comes.
    plan_.feed->attach([this] { boost::asio::post(io_, [this] { on_fed(); }); });
    plan_.feed->take_inbox();
  }
  readiness_.on_timer([this] { on_wake(); });
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
    if (!arrivals_.empty()) deadlines_.set(timer_deadlines::arrivals, arrivals_.front().first);
    plan_wake();
  }
  schedule_tick();
  io_.run();
  if (plan_.feed != nullptr) plan_.feed->detach();
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

void worker::on_wake() {
  const std::uint64_t now = monotonic_ns();
  deadlines_.woke(now);
  count_wakeup();
  if (deadlines_.due(timer_deadlines::arrivals) <= now) on_arrival(now);
  if (deadlines_.due(timer_deadlines::delays) <= now) on_delay_over();
  plan_wake();
}

void worker::plan_wake() {
  const timer_deadlines::action a = deadlines_.plan(monotonic_ns());
  if (a.what == timer_deadlines::step::arm) {
    readiness_.arm_timer(a.at);
  } else if (a.what == timer_deadlines::step::run_now) {
    // Due already (the worker is behind): after the handlers that are ready, without a call.
    boost::asio::post(io_, [this] { on_wake(); });
  }
}

void worker::on_arrival(std::uint64_t now) {
  // The tick stops the worker; no arrival is due any more.
  if (stop_requested_.load(std::memory_order_relaxed)) {
    deadlines_.set(timer_deadlines::arrivals, timer_deadlines::none);
    return;
  }
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
  deadlines_.set(timer_deadlines::arrivals,
                 arrivals_.empty() ? timer_deadlines::none : arrivals_.front().first);
}

void worker::on_fed() {
  count_wakeup();
  plan_.feed->take_inbox();
  const std::uint64_t now = monotonic_ns();
  roll_timeline(now);
  for (auto& c : clients_) c->tick(now);  // sends what came, where the client can
}

void worker::delay_read(client_base& c, std::uint64_t delay_ns) {
  delayed_.push_back(&c);
  const std::uint64_t due = monotonic_ns() + delay_ns;
  if (deadlines_.due(timer_deadlines::delays) <= due) return;
  deadlines_.set(timer_deadlines::delays, due);
  plan_wake();
}

void worker::on_delay_over() {
  deadlines_.set(timer_deadlines::delays, timer_deadlines::none);
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
  r.handshakes_resumed = c.handshakes_resumed;
  r.queries = q;
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
    r.handshakes_resumed = now_counts.handshakes_resumed - row_start_.handshakes_resumed;
    for (const auto& d : query_count_descriptions) {
      r.queries.*d.member = now_counts.queries.*d.member - row_start_.queries.*d.member;
    }
    r.connections_open = open_connections;
    r.latency_min = row_latency.min();
    r.latency_max = row_latency.max();
    r.latency_sum = row_latency.sum();
    row_latency.for_each_bucket([&r](std::uint64_t lowest, std::uint64_t, std::uint64_t n) {
      r.latency.emplace_back(lowest, n);
    });
    const std::lock_guard lock(rows_mutex_);
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
    rows_closed_.store(row_index_, std::memory_order_release);
    timeline_next_ns_ += plan_.interval_ns;
  }
}

std::vector<worker::row> worker::rows_between(std::uint64_t from, std::uint64_t to) const {
  std::vector<row> out;
  const std::lock_guard lock(rows_mutex_);
  // Rows are appended in index order: the wanted ones are at the end.
  auto first = rows_.end();
  while (first != rows_.begin() && std::prev(first)->index >= from) --first;
  for (auto it = first; it != rows_.end() && it->index < to; ++it) out.push_back(*it);
  return out;
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
