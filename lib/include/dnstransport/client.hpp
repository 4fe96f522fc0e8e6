#pragma once
/// \file
/// DNS queries of the program's own over any transport: `client::async_exchange(queries,
/// token)` sends them to one server and completes with each query's answer and its timing.
///
/// An exchange is a load of the engine (run_load's code, not a second client): one client,
/// one connection for a transport that has connections (its queries pipelined on it, all in
/// flight at once, as a load's are; more connections only when
/// client_settings::connections.queries_per_connection allows fewer queries on one), every
/// query sent once, in order. So an exchange gets
/// what a load does (TLS resumption, the PROXY protocol, source addresses, EDNS Client
/// Subnet, answers checked against their query) and reports it in `run`. Each exchange opens
/// its own connection: to reuse one, put the queries in one exchange.
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include <dnstransport/async_load.hpp>
#include <dnstransport/load.hpp>

namespace dnstransport {

/// Where a client sends its queries and how: the parts of a load_spec an exchange takes.
struct client_settings {
  target_settings target;           ///< the server, its port and the transport
  connection_settings connections;  ///< source addresses, PROXY protocol, Fast Open, 0-RTT
  tls_client_options tls;           ///< TLS of DoT, DoH and DoQ
  double timeout_seconds = 2;       ///< a query unanswered this long has no answer
};

/// One query's answer, or why it has none.
struct client_answer {
  /// Whether an answer was counted for it: it arrived in time and passed the checks a
  /// load's answers pass (its ID, its question, a response). When false, the exchange's
  /// `run` says why (lost, failures by cause, truncated over UDP and not retried, ...).
  bool answered = false;
  /// The answer as received (DoH: the HTTP body) with the query's own ID in place of the
  /// one it was sent with; empty without an answer.
  std::vector<std::uint8_t> message;
  std::uint8_t rcode = 0;        ///< the answer's RCODE (4 bits)
  std::uint64_t latency_ns = 0;  ///< from its sending to its receipt, as a load times it
};

/// What an exchange got.
struct client_exchange {
  /// One per query, in the order of the queries.
  std::vector<client_answer> answers;
  /// The load that carried them: its connections and handshakes, latency, and the counts of
  /// what became of the queries without an answer.
  run_result run;
};

/// The load_spec an exchange of the queries of `queries` runs with `settings`: one client,
/// one thread, every query in flight at once (at most 65,536; one at a time when two ask the
/// same question), each sent once, no warm-up, no timeline.
load_spec exchange_spec(const client_settings& settings, std::shared_ptr<const query_set> queries);

namespace detail {
/// What an exchange started by start_exchange calls when it ends, through its executor.
using exchange_completion = std::function<void(std::exception_ptr, client_exchange)>;
/// Starts an exchange of `queries` (each a DNS query in wire format, with the ID to give back)
/// watched on `executor`; `done` is posted to `executor` once, never called from within.
std::shared_ptr<load_operation> start_exchange(const boost::asio::any_io_executor& executor,
                                               const client_settings& settings,
                                               std::vector<std::vector<std::uint8_t>> queries,
                                               exchange_completion done);
}  // namespace detail

/// A DNS client over one transport to one server, on the caller's executor.
///
/// `async_exchange` completes its token with
/// `void(std::exception_ptr error, client_exchange result)`: `error` holds the setup_error
/// (a query that is not a DNS query, a setting refused, the server's name unresolved) that
/// kept it from sending anything, else it is null and every query has its client_answer.
/// Cancelling through the token's cancellation slot stops the exchange: the queries still in
/// flight get no answer. Several exchanges may run at once on one client.
class client {
 public:
  /// A client of `executor` (an io_context run by one thread, or a strand) with `settings`.
  client(boost::asio::any_io_executor executor, client_settings settings)
      : executor_(std::move(executor)), settings_(std::move(settings)) {}

  /// Its settings.
  const client_settings& settings() const noexcept { return settings_; }

  /// Sends `queries` (wire format, each a DNS query) on one connection and completes
  /// `token` with their answers.
  template <typename CompletionToken>
  auto async_exchange(std::vector<std::vector<std::uint8_t>> queries, CompletionToken&& token) {
    return detail::initiate_operation<client_exchange>(
        std::forward<CompletionToken>(token), executor_,
        [settings = settings_, sent = std::move(queries)](
            const boost::asio::any_io_executor& on, detail::exchange_completion done) mutable {
          return detail::start_exchange(on, settings, std::move(sent), std::move(done));
        },
        [](detail::load_operation& running) { detail::stop_load(running); });
  }

  /// Sends one query: async_exchange of it alone (its answer is `answers[0]`).
  template <typename CompletionToken>
  auto async_query(std::span<const std::uint8_t> query, CompletionToken&& token) {
    return async_exchange({std::vector<std::uint8_t>(query.begin(), query.end())},
                          std::forward<CompletionToken>(token));
  }

 private:
  boost::asio::any_io_executor executor_;
  client_settings settings_;
};

/// async_exchange on an io_context of its own: blocks until the answers are in, and throws
/// the error that kept it from sending anything.
client_exchange run_exchange(const client_settings& settings,
                             std::vector<std::vector<std::uint8_t>> queries);

}  // namespace dnstransport
