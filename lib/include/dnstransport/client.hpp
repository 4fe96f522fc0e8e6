#pragma once
/// \file
/// DNS queries of the program's own over any transport, to one server:
/// - `client::async_query(query, token)` sends one query on the client's own connection,
///   opened at its first query and kept: the queries of every call in flight at once are
///   pipelined on it, as a load's are, and the next call reuses it (a new one is opened only
///   when the server closed it, or to carry more than
///   client_settings::connections.queries_per_connection allows on one). A query whose
///   connection ended before its answer is sent again, once, on the next one (a server may
///   close a kept connection at any time: RFC 7766, section 6.2.3).
/// - `client::async_exchange(queries, token)` sends a set of queries as a load of its own
///   (its own connection, all in flight at once, each sent once) and also gives the
///   run_result of that load: its connections, handshakes and latency.
///
/// Both are the engine's load of one client (run_load's code, not a second client), fed by
/// the program's queries instead of a query set. So a query gets what a load's do: TLS
/// resumption, the PROXY protocol, source addresses, answers checked against their query.
/// Two queries that ask the same question (the name without regard to case, the type, the
/// class) are never in flight at once: the second waits for the first to end, so that an
/// answer carrying another query's id cannot pass the question check.
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
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
  /// async_query: the most queries in flight at once on the client's connection; more
  /// wait their turn (1 to 32,768: each query in flight has an ID of its own, which changes
  /// from one query to the next in its place).
  unsigned max_in_flight = 256;
};

/// How a query ended.
enum class query_outcome : std::uint8_t {
  answered,           ///< an answer came in time and passed the checks
  timed_out,          ///< sent, and no answer came within timeout_seconds
  connection_closed,  ///< its connection ended before the answer came
  /// A message came for it that failed the checks (malformed, another question, not
  /// echoing its ID, truncated over UDP, larger than the query allowed over UDP).
  bad_answer,
  exchange_failed,  ///< DoH: an HTTP status other than 200 or a reset stream; DoQ: a reset stream
  /// Not sent within timeout_seconds: no connection could be set up for it (connection
  /// failures are in the exchange's run), or it waited behind its question in flight.
  not_sent,
  /// Stopped before it ended: cancelled, or its client destroyed.
  abandoned,
};

/// The outcome's name as the JSON and the tables write such counts ("answered",
/// "timed_out", "connection_closed", "bad_answer", "exchange_failed", "not_sent",
/// "abandoned").
std::string_view query_outcome_name(query_outcome outcome) noexcept;

/// One query's answer, or why it has none.
struct client_answer {
  /// Whether an answer was counted for it: it arrived in time and passed the checks a
  /// load's answers pass (its ID, its question, a response); `outcome` is then `answered`.
  bool answered = false;
  /// How it ended; the exchange's `run` counts the same under the load's names (lost,
  /// lost_on_close, malformed, mismatched, ...).
  query_outcome outcome = query_outcome::abandoned;
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
/// one thread, every query in flight at once (at most 32,768; a question asked twice waits
/// for its first answer), each sent once, no warm-up, no timeline.
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

class client_session;
class query_ticket;
/// What a query of async_query calls when it ends: once, on a thread of the client's, never
/// from within async_query.
using query_completion = std::function<void(std::exception_ptr, client_answer)>;
/// Makes the session of a client (nothing is sent, no thread started before its first query).
std::shared_ptr<client_session> make_session(client_settings settings);
/// Sends `query` on the session: its load starts at the first query (and again after one
/// that failed to start); a query refused (not a DNS query) ends in `done` with the
/// setup_error, posted to `executor`.
std::shared_ptr<query_ticket> submit_query(const std::shared_ptr<client_session>& session,
                                           const boost::asio::any_io_executor& executor,
                                           std::vector<std::uint8_t> query, query_completion done);
/// Cancels a query of submit_query (any thread): it ends as abandoned, at once when it waits
/// to be sent, else without waiting for its answer.
void cancel_query(query_ticket& ticket) noexcept;
/// Stops the session: the queries that have not ended end as abandoned; returns once its
/// threads are gone.
void close_session(client_session& session) noexcept;
}  // namespace detail

/// A DNS client over one transport to one server, on the caller's executor.
///
/// `async_query` completes its token with `void(std::exception_ptr error, client_answer
/// answer)`; `async_exchange` with `void(std::exception_ptr error, client_exchange result)`.
/// `error` holds the setup_error (a query that is not a DNS query, a setting refused, the
/// server's name unresolved) that kept the query or the exchange from being sent, else it is
/// null and each query has its client_answer. Cancelling through the token's cancellation
/// slot stops it: the queries that have not ended end as abandoned. Any number of calls may
/// be in flight at once, from any thread.
///
/// The queries of async_query go on the client's own connection, kept between calls by a
/// load that runs on two threads of the client's from its first query to its destruction
/// (the engine's worker, and the one that watches it); destroying the client ends its
/// queries still in flight as abandoned and waits for those threads (a few milliseconds).
class client {
 public:
  /// A client of `executor` (an io_context run by one thread, or a strand) with `settings`.
  client(boost::asio::any_io_executor executor, client_settings settings)
      : executor_(std::move(executor)),
        settings_(std::move(settings)),
        session_(detail::make_session(settings_)) {}
  /// Ends its queries still in flight as abandoned and waits for its threads.
  ~client() {
    if (session_) detail::close_session(*session_);
  }
  client(const client&) = delete;
  client& operator=(const client&) = delete;
  /// Takes `other`'s connection and queries; `other` refuses queries after it.
  client(client&& other) noexcept = default;

  /// Its settings.
  const client_settings& settings() const noexcept { return settings_; }

  /// Sends `query` (wire format, a DNS query) on the client's connection and completes
  /// `token` with its answer (the message with `query`'s own ID), or how it ended without one.
  template <typename CompletionToken>
  auto async_query(std::span<const std::uint8_t> query, CompletionToken&& token) {
    return detail::initiate_operation<client_answer>(
        std::forward<CompletionToken>(token), executor_,
        [session = session_, sent = std::vector<std::uint8_t>(query.begin(), query.end())](
            const boost::asio::any_io_executor& on, detail::query_completion done) mutable {
          return detail::submit_query(session, on, std::move(sent), std::move(done));
        },
        [](detail::query_ticket& ticket) { detail::cancel_query(ticket); });
  }

  /// Sends `queries` (wire format, each a DNS query) as a load of their own, on a connection
  /// of their own, and completes `token` with their answers and that load's run.
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

 private:
  boost::asio::any_io_executor executor_;
  client_settings settings_;
  std::shared_ptr<detail::client_session> session_;
};

/// async_exchange on an io_context of its own: blocks until the answers are in, and throws
/// the error that kept it from sending anything.
client_exchange run_exchange(const client_settings& settings,
                             std::vector<std::vector<std::uint8_t>> queries);

}  // namespace dnstransport
