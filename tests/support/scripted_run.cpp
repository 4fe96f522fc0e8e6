#include "scripted_run.hpp"

#include <numeric>
#include <vector>

#include <boost/asio/ip/address.hpp>

#include <dnstransport/message.hpp>
#include <dnstransport/query_source.hpp>

#include "util/clock.hpp"

namespace dnstransport::scripted {

detail::counters run_on_one_worker(const detail::client_transport& transport,
                                   const run_shape& shape) {
  const query_set queries = default_queries();
  detail::run_plan plan;
  plan.transport = &transport;
  plan.queries = &queries;
  plan.clients = shape.clients;
  plan.outstanding = shape.outstanding;
  plan.server_address = boost::asio::ip::make_address("127.0.0.1");
  plan.server_port = 53;
  // The built-in set asks a different question in every query.
  plan.question_of.resize(queries.size());
  std::iota(plan.question_of.begin(), plan.question_of.end(), 0u);
  plan.distinct_questions = static_cast<std::uint32_t>(queries.size());
  // What a UDP client accepts as an answer's size (the other transports do not read it).
  for (std::size_t i = 0; i < queries.size(); ++i) {
    plan.udp_answer_limits.push_back(udp_answer_limit(queries[i]));
  }
  plan.timeout_ns = detail::seconds_to_ns(shape.timeout_seconds);
  plan.rate_per_client = shape.rate_per_client;
  if (shape.rate_per_client > 0) plan.arrivals = detail::run_plan::schedule::constant;
  std::vector<unsigned> indices;
  std::vector<std::uint64_t> quotas;
  for (unsigned c = 0; c < shape.clients; ++c) {
    indices.push_back(c);
    quotas.push_back(shape.count / shape.clients + (c < shape.count % shape.clients ? 1 : 0));
  }
  detail::worker w(plan, indices, quotas);
  plan.start_ns = detail::monotonic_ns();
  plan.measure_start_ns = plan.start_ns;
  plan.send_end_ns = UINT64_MAX;  // count mode
  w.run();
  return w.shard();
}

}  // namespace dnstransport::scripted
