#pragma once
// Internal: what a run gives the engine's workers: the transport that makes its clients
// (client_transport) and the plan every worker shares read-only (run_plan: the queries, the
// server, the schedule, the timeout). The load (load/run_setup.cpp) builds both.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include <boost/asio/ip/address.hpp>

#include <dnstransport/query_source.hpp>

#include "engine/answer_callback.hpp"
#include "engine/client_subnets.hpp"
#include "engine/in_flight_questions.hpp"

namespace dnstransport::detail {

class client_base;
class query_feed;
class worker;

// A transport as the engine sees it: it makes the clients of a run, on the worker threads.
// One is built per run from the transport's own settings (registry/transports.cpp) and shared
// read-only by the workers.
class client_transport {
 public:
  virtual ~client_transport() = default;
  virtual std::unique_ptr<client_base> make_client(worker& owner, unsigned index,
                                                   std::uint64_t quota) const = 0;
  // --verify: certificate chains verified in full and handshakes that reused a verdict, over
  // the whole run (tls_client_context::certificate_checks); zeros without TLS.
  virtual std::pair<std::uint64_t, std::uint64_t> certificate_checks() const { return {}; }
};

// Everything the workers share, read-only once the run starts.
struct run_plan {
  const client_transport* transport = nullptr;
  const query_set* queries = nullptr;
  // Set: the one client sends the program's queries as they are submitted (query_feed.hpp),
  // each in a cell of the feed that stands for a query of the set while it is in flight.
  query_feed* feed = nullptr;
  // The query a slot's query_index names, and the largest one (for buffers).
  std::span<const std::uint8_t> query(std::uint32_t index) const noexcept {
    return feed == nullptr ? (*queries)[index] : fed_query(index);
  }
  std::size_t max_query_size() const noexcept {
    return feed == nullptr ? queries->max_size() : fed_max_size();
  }
  // Over UDP: the largest answer the query allows.
  std::uint16_t udp_answer_limit(std::uint32_t index) const noexcept {
    return feed == nullptr ? udp_answer_limits[index] : fed_udp_answer_limit(index);
  }
  unsigned clients = 1;
  unsigned outstanding = 1;   // queries in flight per client
  bool gather_writes = true;  // all ready queries in one system call (false: one per query)
  boost::asio::ip::address server_address;
  std::uint16_t server_port = 0;
  std::vector<boost::asio::ip::address> sources;  // source addresses to spread clients over
  // Client i binds sources[i] for every connection (one address per client); false: stream
  // clients take them in turn, connection by connection.
  bool sources_per_client = false;
  // PROXY protocol: per client, the header it puts before each datagram or at the start of
  // each connection (before TLS); with more than `clients` (connection_settings::
  // distinct_sources), client i takes the i-th, (i + clients)-th, ... in turn. Empty: none.
  std::vector<std::vector<std::uint8_t>> proxy_headers;
  // The header of a client's `use`-th datagram or connection (0 up).
  const std::vector<std::uint8_t>* proxy_header(unsigned client,
                                                std::uint64_t use = 0) const noexcept {
    if (proxy_headers.empty()) return nullptr;
    if (proxy_headers.size() <= clients) return &proxy_headers[client];
    return &proxy_headers[(client + use * clients) % proxy_headers.size()];
  }
  // The headers go inside TLS, as the session's first octets (else before the handshake).
  bool proxy_inside_tls = false;
  // Per query of the set: its question's number (queries asking the same question, names
  // compared case-insensitively, share one), and for UDP the largest answer it allows.
  std::vector<std::uint32_t> question_of;
  std::uint32_t distinct_questions = 0;
  // How a client tells apart its queries in flight (in_flight_questions.hpp): one of each
  // question, by letter case (a set of fewer questions than `outstanding` over a transport
  // whose answers carry the id alone), or not at all (each answer on its query's own stream).
  in_flight_questions::mode questions_apart = in_flight_questions::mode::one_each;
  // Letter case: per question, its letter-case patterns (2^letters, at most 65536); per query,
  // the pattern it was written in (letter_case_pattern).
  std::vector<std::uint32_t> question_patterns;
  std::vector<std::uint16_t> query_case;
  // The most queries a client may have in flight: `outstanding`, or fewer when its questions
  // (and their letter-case patterns) are fewer.
  std::uint32_t in_flight_limit() const noexcept {
    std::uint64_t room = distinct_questions;
    if (questions_apart == in_flight_questions::mode::unlimited) room = outstanding;
    if (questions_apart == in_flight_questions::mode::letter_case) {
      room = 0;
      for (const std::uint32_t n : question_patterns) room += n;
    }
    return static_cast<std::uint32_t>(std::min<std::uint64_t>(room, outstanding));
  }
  std::vector<std::uint16_t> udp_answer_limits;
  // The queries carry EDNS options whose answers are counted (keepalive, padding, client
  // subnet): read the answers' OPT records.
  bool read_edns_options = false;
  // EDNS Client Subnet: the subnets the queries carry and where (off: none).
  client_subnets client_subnet;

  std::uint64_t start_ns = 0;
  std::uint64_t measure_start_ns = 0;  // end of the warm-up
  std::uint64_t send_end_ns = 0;       // no new query after this (UINT64_MAX: count mode)
  std::uint64_t timeout_ns = 0;
  double rate_per_client = 0;  // queries per second; 0: no limit
  // With a rate: open loop (queries sent at their scheduled times, latency from them) with
  // evenly spaced or exponentially distributed gaps; closed loop otherwise. Replay: open
  // loop on a capture's clock, without a rate.
  enum class schedule { closed, constant, poisson, replay };
  schedule arrivals = schedule::closed;
  bool open_loop() const noexcept {
    return arrivals == schedule::replay || (rate_per_client > 0 && arrivals != schedule::closed);
  }
  // Replay: client c sends the queries replay_query[i] for i in [replay_first[c],
  // replay_first[c + 1]), in that order, each at start_ns + replay_offset_ns[i].
  std::vector<std::uint32_t> replay_first;
  std::vector<std::uint32_t> replay_query;
  std::vector<std::uint64_t> replay_offset_ns;
  std::uint64_t interval_ns = 0;  // timeline row length; 0: no timeline
  // Coalesced receiving (engine/read_coalescing.hpp): a client with at least coalesce_batch
  // queries in flight whose wake-up brought answers reads again after a delay of at most
  // this (and at most 1/20 of its recent latency) instead of waiting for readiness at once
  // (worker::delay_read). 0: off.
  std::uint64_t coalesce_ns = 0;
  // Fewer in flight could not make a fuller read.
  static constexpr unsigned coalesce_batch = 8;

  // Open connections over every worker (each worker adds its own), and the most open at
  // once in the measured window. Null: not kept (the workers' own gauges still are).
  struct connection_gauge {
    std::atomic<std::int64_t> open{0};
    std::atomic<std::uint64_t> max{0};
  };
  connection_gauge* connections_gauge = nullptr;
  // output_settings::on_answer; null: not set.
  answer_callback* on_answer = nullptr;

 private:
  std::span<const std::uint8_t> fed_query(std::uint32_t index) const noexcept;
  std::size_t fed_max_size() const noexcept;
  std::uint16_t fed_udp_answer_limit(std::uint32_t index) const noexcept;
};

}  // namespace dnstransport::detail
