// Each answer as it comes (output_settings::on_answer): a count per RCODE and the slowest
// answer with its question, kept by the program while the load runs. The callback runs on
// the load's worker threads, several at once with more than one thread: it takes a lock and
// does little.
//
//   answers_as_they_come          the built-in responder, 1 s of DNS over TCP, 2 threads
#include <array>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <mutex>
#include <string>

#include <dnstransport/load.hpp>
#include <dnstransport/message.hpp>
#include <dnstransport/server.hpp>

int main() {
  using namespace dnstransport;
  server_options options;
  options.listen[transport_kind::tcp] = endpoint{"127.0.0.1", 0};
  server responder(options);

  load_spec spec;
  spec.target.port = responder.port(transport_kind::tcp);
  spec.target.transport = transport_kind::tcp;
  spec.traffic.clients = 4;
  spec.traffic.duration_seconds = 1;
  spec.generator.threads = 2;
  const auto queries = std::make_shared<const query_set>(default_queries());
  spec.traffic.queries = queries;

  std::mutex mutex;
  std::array<std::uint64_t, 16> by_rcode{};
  std::uint64_t slowest_ns = 0;
  std::size_t slowest_query = 0;
  spec.output.on_answer = [&](const answer_event& answer) {
    const std::lock_guard lock(mutex);
    ++by_rcode[answer.rcode];
    if (answer.latency_ns > slowest_ns) {
      slowest_ns = answer.latency_ns;
      slowest_query = answer.query;
    }
  };

  try {
    const run_result r = run_load(spec);
    std::uint64_t seen = 0;
    for (unsigned rcode = 0; rcode < by_rcode.size(); ++rcode) {
      if (by_rcode[rcode] == 0) continue;
      seen += by_rcode[rcode];
      std::printf("%-9s %llu\n", rcode_name(rcode).c_str(),
                  static_cast<unsigned long long>(by_rcode[rcode]));
    }
    const auto question = (*queries)[slowest_query];
    std::printf("slowest answer: %.3f ms, to query %zu of the set (%zu octets)\n",
                static_cast<double>(slowest_ns) / 1e6, slowest_query, question.size());
    std::printf("%llu answers seen, %llu counted by the result\n",
                static_cast<unsigned long long>(seen),
                static_cast<unsigned long long>(r.responses_received));
    return seen == r.responses_received && seen > 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "answers_as_they_come: %s\n", e.what());
    return 1;
  }
}
