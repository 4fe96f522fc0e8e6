// An exchange of a program's own queries (dnstransport/client.hpp): a load of one client that
// sends each query once, its answers kept as on_answer gives them.
#include <dnstransport/client.hpp>

#include <algorithm>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_set>

#include <fmt/format.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <dnstransport/error.hpp>
#include <dnstransport/message.hpp>

namespace dnstransport {

namespace {

constexpr unsigned max_in_flight = 65536;  // traffic_settings::outstanding's limit

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

// Whether two queries of `queries` ask the same question (the name without regard to case,
// the type and the class). Queries are checked by not_a_query first.
bool repeats_a_question(const query_set& queries) {
  std::unordered_set<std::string> seen;
  for (std::size_t i = 0; i < queries.size(); ++i) {
    const auto query = queries[i];
    const std::size_t name_end = skip_name(query, dns_header_size).value_or(query.size() - 4);
    std::string key(query.begin() + dns_header_size, query.begin() + name_end + 4);
    std::transform(key.begin(), key.begin() + (name_end - dns_header_size), key.begin(),
                   [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; });
    if (!seen.insert(std::move(key)).second) return true;
  }
  return false;
}

}  // namespace

load_spec exchange_spec(const client_settings& settings, std::shared_ptr<const query_set> queries) {
  load_spec spec;
  spec.target = settings.target;
  spec.connections = settings.connections;
  spec.tls = settings.tls;
  const std::size_t count = queries ? queries->size() : 0;
  spec.traffic.clients = 1;
  // A question asked twice goes one query at a time: with several in flight, the engine
  // would vary its letter case and could send one of the two twice and the other never.
  spec.traffic.outstanding =
      queries && repeats_a_question(*queries)
          ? 1
          : static_cast<unsigned>(std::clamp<std::size_t>(count, 1, max_in_flight));
  spec.traffic.count = count;
  spec.traffic.timeout_seconds = settings.timeout_seconds;
  spec.traffic.warmup_seconds = 0;
  spec.traffic.queries = std::move(queries);
  spec.generator.threads = 1;
  spec.output.interval_seconds = 0;
  return spec;
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
      std::vector<std::uint8_t>& query = queries[i];
      if (query.size() < dns_header_size || query.size() > 0xffff) {
        throw setup_error(
            fmt::format("query {} of the exchange has {} octets: a DNS query has "
                        "12 to 65,535",
                        i + 1, query.size()));
      }
      if (const char* why = not_a_query(query)) {
        throw setup_error(
            fmt::format("query {} of the exchange is not a DNS query: {}", i + 1, why));
      }
      ids.push_back(read_id(query.data()));
      patch_id(query.data(), 0);
      set->add(query);
    }
  } catch (...) {
    boost::asio::post(executor, [error = std::current_exception(), finish = std::move(done)] {
      finish(error, client_exchange{});
    });
    return nullptr;
  }

  auto kept = std::make_shared<exchange_answers>();
  kept->answers.resize(queries.size());
  load_spec spec = exchange_spec(settings, std::move(set));
  spec.output.on_answer = [kept, ids = std::move(ids)](const answer_event& event) {
    const std::lock_guard lock(kept->mutex);
    client_answer& answer = kept->answers[event.query];
    if (answer.answered) return;  // each query is sent once: never, but never counted twice
    answer.answered = true;
    answer.message.assign(event.message.begin(), event.message.end());
    if (answer.message.size() >= 2) patch_id(answer.message.data(), ids[event.query]);
    answer.rcode = event.rcode;
    answer.latency_ns = event.latency_ns;
  };
  return start_load(executor, std::move(spec),
                    [kept, finish = std::move(done)](std::exception_ptr error, run_result run) {
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
