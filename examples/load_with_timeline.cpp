// A load on the program's own io_context: progress and each timeline row printed as they
// come, the result when it completes. Nothing here blocks the io_context's thread: the load's
// workers run on threads of their own, and the callbacks run here, between other handlers.
//
//   load_with_timeline            the built-in responder, 2 s of UDP
#include <cstdio>
#include <exception>

#include <boost/asio/io_context.hpp>

#include <dnstransport/async_load.hpp>
#include <dnstransport/server.hpp>

int main() {
  using namespace dnstransport;
  server_options options;
  options.listen[transport_kind::udp] = endpoint{"127.0.0.1", 0};
  server responder(options);

  load_spec spec;
  spec.target.server = "127.0.0.1";
  spec.target.port = responder.port(transport_kind::udp);
  spec.traffic.clients = 2;
  spec.traffic.duration_seconds = 2;
  spec.output.interval_seconds = 0.5;
  spec.output.progress_interval_seconds = 0.5;
  spec.output.on_progress = [](const load_progress& p) {
    std::printf("%5.1f s: %llu sent, %llu answered\n", p.elapsed_seconds,
                static_cast<unsigned long long>(p.queries_sent),
                static_cast<unsigned long long>(p.responses_received));
  };
  unsigned rows = 0;
  spec.output.on_interval = [&rows](const timeline_row& row) {
    ++rows;
    std::printf("row from %.1f s: %.0f answers/s, p50 %.3f ms, p99 %.3f ms\n", row.start_seconds,
                row.qps, row.p50_ms, row.p99_ms);
  };

  boost::asio::io_context io;
  int status = 1;
  async_run_load(io.get_executor(), spec, [&](std::exception_ptr error, const run_result& r) {
    if (error) {
      try {
        std::rethrow_exception(error);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "load_with_timeline: %s\n", e.what());
      }
      return;
    }
    std::printf("%llu answers, %.0f per second, %llu lost\n",
                static_cast<unsigned long long>(r.responses_received), r.qps,
                static_cast<unsigned long long>(r.lost));
    status = r.responses_received > 0 && rows == r.timeline.size() ? 0 : 1;
  });
  io.run();
  return status;
}
