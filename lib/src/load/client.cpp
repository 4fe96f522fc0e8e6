// An exchange of a program's own queries (dnstransport/client.hpp): a load of one client fed
// the queries (query_feed), each sent once, its answers kept as the feed ends them. The
// client's own connection for async_query is client_session.cpp's.
#include <dnstransport/client.hpp>

#include <algorithm>
#include <array>
#include <mutex>
#include <optional>
#include <span>
#include <string>

#include <fmt/format.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <dnstransport/error.hpp>
#include <dnstransport/message.hpp>

#include "engine/query_feed.hpp"
#include "load/client_queries.hpp"
#include "load/load_operation.hpp"

namespace dnstransport {

namespace {

// A client's slots give each query in flight an ID of its own and change it each time they
// are taken (slot_table): at 65,536 in flight no bit of the ID is left to change.
constexpr unsigned max_in_flight = 32768;

// The answers as the worker's thread writes them; read once the load has ended.
struct exchange_answers {
  std::mutex mutex;
  std::vector<client_answer> answers;
};

// Why `query` (at least a header) is not a query an answer can be checked against, or null:
// the QR bit set, or not exactly one question, whole.
const char* not_a_query(std::span<const std::uint8_t> query) {
  if ((query[2] & 0x80) != 0) return "its QR bit says it is a response";
  if (query[4] != 0 || query[5] != 1) return "it does not have exactly one question";
  const std::optional<std::size_t> name_end = skip_name(query, dns_header_size);
  if (!name_end || *name_end + 4 > query.size()) return "its question runs past its end";
  return nullptr;
}

}  // namespace

std::string_view query_outcome_name(query_outcome outcome) noexcept {
  static constexpr std::array<std::string_view, 7> names{
      "answered",        "timed_out", "connection_closed", "bad_answer",
      "exchange_failed", "not_sent",  "abandoned"};
  const auto i = static_cast<std::size_t>(outcome);
  return i < names.size() ? names[i] : "unknown";
}

namespace detail {

std::uint16_t take_query_id(std::vector<std::uint8_t>& query, const std::string& what) {
  if (query.size() < dns_header_size || query.size() > 0xffff) {
    throw setup_error(
        fmt::format("{} has {} octets: a DNS query has 12 to 65,535", what, query.size()));
  }
  if (const char* why = not_a_query(query)) {
    throw setup_error(fmt::format("{} is not a DNS query: {}", what, why));
  }
  const std::uint16_t id = read_id(query.data());
  patch_id(query.data(), 0);
  return id;
}

load_spec fed_spec(const client_settings& settings, std::shared_ptr<const query_set> queries,
                   std::uint32_t cells) {
  load_spec spec;
  spec.target = settings.target;
  spec.connections = settings.connections;
  spec.tls = settings.tls;
  spec.traffic.clients = 1;
  spec.traffic.outstanding = cells;
  spec.traffic.count = queries ? std::max<std::size_t>(queries->size(), 1) : 1;
  spec.traffic.timeout_seconds = settings.timeout_seconds;
  spec.traffic.warmup_seconds = 0;
  spec.traffic.queries = std::move(queries);
  spec.generator.threads = 1;
  spec.output.interval_seconds = 0;
  return spec;
}

}  // namespace detail

load_spec exchange_spec(const client_settings& settings, std::shared_ptr<const query_set> queries) {
  const std::size_t count = queries ? queries->size() : 0;
  return detail::fed_spec(
      settings, std::move(queries),
      static_cast<std::uint32_t>(std::clamp<std::size_t>(count, 1, max_in_flight)));
}

namespace detail {

std::shared_ptr<load_operation> start_exchange(const boost::asio::any_io_executor& executor,
                                               const client_settings& settings,
                                               std::vector<std::vector<std::uint8_t>> queries,
                                               exchange_completion done) {
  auto set = std::make_shared<query_set>();
  std::vector<std::uint16_t> ids;
  ids.reserve(queries.size());
  try {
    if (queries.empty()) throw setup_error("an exchange needs at least one query");
    for (std::size_t i = 0; i < queries.size(); ++i) {
      ids.push_back(take_query_id(queries[i], fmt::format("query {} of the exchange", i + 1)));
      set->add(queries[i]);
    }
  } catch (...) {
    boost::asio::post(executor, [error = std::current_exception(), finish = std::move(done)] {
      finish(error, client_exchange{});
    });
    return nullptr;
  }

  load_spec spec = exchange_spec(settings, std::move(set));
  auto feed = std::make_shared<query_feed>(spec.traffic.outstanding, false);  // each sent once
  auto kept = std::make_shared<exchange_answers>();
  kept->answers.resize(queries.size());
  for (std::size_t i = 0; i < queries.size(); ++i) {
    feed->submit(std::move(queries[i]), ids[i],
                 [kept, i](std::exception_ptr, client_answer answer) {
                   const std::lock_guard lock(kept->mutex);
                   kept->answers[i] = std::move(answer);
                 });
  }
  feed->close();
  return start_fed_load(
      executor, std::move(spec), feed,
      [kept, feed, finish = std::move(done)](std::exception_ptr error, run_result run) {
        feed->end_all(nullptr);  // those never sent (a stop, a set-up that failed)
        client_exchange result;
        {
          const std::lock_guard lock(kept->mutex);
          result.answers = std::move(kept->answers);
        }
        result.run = std::move(run);
        finish(error, std::move(result));
      });
}

}  // namespace detail

client_exchange run_exchange(const client_settings& settings,
                             std::vector<std::vector<std::uint8_t>> queries) {
  boost::asio::io_context io;
  client one(io.get_executor(), settings);
  std::exception_ptr failed;
  client_exchange got;
  one.async_exchange(std::move(queries), [&](std::exception_ptr error, client_exchange result) {
    failed = error;
    got = std::move(result);
  });
  io.run();
  if (failed) std::rethrow_exception(failed);
  return got;
}

}  // namespace dnstransport
