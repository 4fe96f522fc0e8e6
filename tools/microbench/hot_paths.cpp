// What one query costs in user space, path by path: picking and patching a pre-encoded
// query, checking a response, recording a latency, and cutting answers out of a TCP stream.
// The kernel's share (syscalls) is measured by `dnstransport run` itself (client CPU).

#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include <dnstransport/histogram.hpp>
#include <dnstransport/message.hpp>
#include <dnstransport/query_source.hpp>

#include "engine/slot_table.hpp"
#include "message/framing.hpp"
#include "responder/responder.hpp"

namespace {

using namespace dnstransport;

// A query set and the answers the built-in responder gives to each query.
struct corpus {
  query_set queries = default_queries();
  std::vector<std::vector<std::uint8_t>> answers;
  corpus() {
    for (std::size_t i = 0; i < queries.size(); ++i) {
      std::vector<std::uint8_t> out(queries[i].size() + detail::answer_overhead);
      out.resize(detail::build_answer(queries[i], answer_mode::answer, out));
      answers.push_back(std::move(out));
    }
  }
};

const corpus& shared_corpus() {
  static const corpus c;
  return c;
}

void take_slot_and_patch_id(benchmark::State& state) {
  const auto& c = shared_corpus();
  detail::slot_table slots(500, 1);
  std::uint8_t id_bytes[2];
  std::size_t next = 0;
  for (auto _ : state) {
    auto& s = slots.acquire(next, static_cast<std::uint32_t>(next % c.queries.size()), true);
    patch_id(id_bytes, s.id);
    benchmark::DoNotOptimize(id_bytes);
    benchmark::DoNotOptimize(slots.find(s.id));
    slots.release(s, detail::slot_table::past::answered);
    ++next;
  }
}
BENCHMARK(take_slot_and_patch_id);

void check_response_answer(benchmark::State& state) {
  const auto& c = shared_corpus();
  std::size_t i = 0;
  for (auto _ : state) {
    const auto summary = check_response(c.answers[i], c.queries[i], 0);
    benchmark::DoNotOptimize(summary);
    if (++i == c.answers.size()) i = 0;
  }
}
BENCHMARK(check_response_answer);

void histogram_record(benchmark::State& state) {
  latency_histogram h;
  std::uint64_t v = 12345;
  for (auto _ : state) {
    h.record(v);
    v = v * 6364136223846793005ull + 1442695040888963407ull;
    v = (v >> 40) + 1000;  // spread over ~16 ms
  }
  benchmark::DoNotOptimize(h.count());
}
BENCHMARK(histogram_record);

void frame_reader_parse(benchmark::State& state) {
  const auto& c = shared_corpus();
  std::vector<std::uint8_t> stream;
  for (const auto& a : c.answers) {
    stream.push_back(static_cast<std::uint8_t>(a.size() >> 8));
    stream.push_back(static_cast<std::uint8_t>(a.size()));
    stream.insert(stream.end(), a.begin(), a.end());
  }
  detail::frame_reader reader;
  const std::size_t chunk = static_cast<std::size_t>(state.range(0));
  std::size_t messages = 0;
  for (auto _ : state) {
    for (std::size_t at = 0; at < stream.size(); at += chunk) {
      const std::size_t n = std::min(chunk, stream.size() - at);
      auto space = reader.prepare();
      std::memcpy(space.data(), stream.data() + at, n);
      reader.commit(n);
      std::span<const std::uint8_t> message;
      while (reader.next(message) == detail::frame_reader::result::message) ++messages;
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(messages));
}
BENCHMARK(frame_reader_parse)->Arg(1500)->Arg(65536);

void responder_build_answer(benchmark::State& state) {
  const auto& c = shared_corpus();
  std::vector<std::uint8_t> out(65536);
  std::size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(detail::build_answer(c.queries[i], answer_mode::answer, out));
    if (++i == c.queries.size()) i = 0;
  }
}
BENCHMARK(responder_build_answer);

}  // namespace

BENCHMARK_MAIN();
