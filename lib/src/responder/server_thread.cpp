#include "responder/server_thread.hpp"

#include <algorithm>
#include <ctime>

#include "util/clock.hpp"
#include "util/cpu_pinning.hpp"

namespace dnstransport::detail {

namespace {

per_transport<answer_edns> answer_edns_of(const server_options& options) {
  per_transport<answer_edns> edns;
  for (const auto& traits : all_transports()) {
    edns[traits.kind] = answer_edns_for(options, traits.kind);
  }
  return edns;
}

std::size_t largest_answer_room(const per_transport<answer_edns>& edns) {
  std::size_t room = 0;
  for (const auto& e : edns) room = std::max(room, answer_room(e));
  return room;
}

std::uint64_t thread_cpu_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

std::uint64_t microseconds_to_ns(double us) noexcept {
  return static_cast<std::uint64_t>(us * 1000 + 0.5);
}

}  // namespace

void spend_thread_cpu(std::uint64_t ns) noexcept {
  if (ns == 0) return;
  // Each reading is a system call whose CPU counts too: the overshoot is at most one call.
  const std::uint64_t start = thread_cpu_ns();
  while (thread_cpu_ns() - start < ns) {
  }
}

server_thread::server_thread(const server_options& options, rate_limiter* limiter,
                             client_rate_limits* per_client)
    : options_(options),
      limiter_(limiter),
      per_client_(per_client),
      edns_(answer_edns_of(options)),
      answer_cost_ns_(microseconds_to_ns(options.cost_answer_us)),
      handshake_cost_ns_(microseconds_to_ns(options.cost_handshake_us)),
      sweep_timer_(io_),
      answer_scratch_(65535 + largest_answer_room(edns_)) {}

client_record& server_thread::client(const boost::asio::ip::address& address) {
  const auto [where, added] = clients_.try_emplace(address);
  if (added && per_client_ != nullptr) where->second.limit = &per_client_->of(address);
  return where->second;
}

server_thread::~server_thread() {
  stop();
  connections_.clear();  // before the listeners whose acceptors made their streams
}

void server_thread::add_listener(std::unique_ptr<thread_listener> listener) {
  listeners_.push_back(std::move(listener));
}

void server_thread::start(std::optional<int> cpu) {
  for (auto& listener : listeners_) listener->start();
  if (options_.idle_timeout_seconds > 0) schedule_sweep();
  thread_ = std::thread([this, cpu] {
    if (cpu) pin_current_thread(*cpu);
    io_.run();
  });
}

void server_thread::stop() {
  if (!thread_.joinable()) return;
  io_.stop();
  thread_.join();
  connections_.clear();
  stopped_.store(true, std::memory_order_release);
}

void server_thread::forget(accepted_connection* connection) {
  connections_.erase(connection);
}

void server_thread::adopt(std::shared_ptr<accepted_connection> connection) {
  accepted_connection* key = connection.get();
  connections_.emplace(key, connection);
  connection->start();
}

void server_thread::schedule_sweep() {
  sweep_timer_.expires_after(std::chrono::milliseconds(50));
  sweep_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    const std::uint64_t now = monotonic_ns();
    std::vector<std::shared_ptr<accepted_connection>> open;
    open.reserve(connections_.size());
    for (auto& [key, connection] : connections_) open.push_back(connection);
    for (auto& connection : open) connection->check_idle(now);
    schedule_sweep();
  });
}

}  // namespace dnstransport::detail
