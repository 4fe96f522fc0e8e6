// Two loads at once on one thread, each in a C++20 coroutine: UDP and TCP against the
// built-in responder, awaited with boost::asio::use_awaitable. A third coroutine cancels a
// long load through a cancellation signal once it has seen answers.
#include <cstdio>
#include <exception>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <dnstransport/async_load.hpp>
#include <dnstransport/server.hpp>

namespace asio = boost::asio;
using namespace dnstransport;

asio::awaitable<void> measure(load_spec spec, const char* name, int& failures) {
  try {
    const run_result r =
        co_await async_run_load(co_await asio::this_coro::executor, spec, asio::use_awaitable);
    std::printf("%s: %llu answers, %.0f per second%s\n", name,
                static_cast<unsigned long long>(r.responses_received), r.qps,
                r.interrupted ? " (stopped)" : "");
    if (r.responses_received == 0) ++failures;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    ++failures;
  }
}

int main() {
  server_options options;
  options.listen[transport_kind::udp] = endpoint{"127.0.0.1", 0};
  options.listen[transport_kind::tcp] = endpoint{"127.0.0.1", 0};
  server responder(options);

  load_spec udp;
  udp.target.port = responder.port(transport_kind::udp);
  udp.traffic.count = 20000;
  load_spec tcp = udp;
  tcp.target.transport = transport_kind::tcp;
  tcp.target.port = responder.port(transport_kind::tcp);

  // A load meant to run an hour, stopped from its own progress callback.
  asio::cancellation_signal stop;
  load_spec hour = udp;
  hour.traffic.count = 0;
  hour.traffic.duration_seconds = 3600;
  hour.output.progress_interval_seconds = 0.1;
  hour.output.on_progress = [&stop](const load_progress& p) {
    if (p.responses_received > 1000) stop.emit(asio::cancellation_type::terminal);
  };

  asio::io_context io;
  int failures = 0;
  asio::co_spawn(io, measure(udp, "udp", failures), asio::detached);
  asio::co_spawn(io, measure(tcp, "tcp", failures), asio::detached);
  asio::co_spawn(io, measure(hour, "an hour, cancelled", failures),
                 asio::bind_cancellation_slot(stop.slot(), asio::detached));
  io.run();
  return failures == 0 ? 0 : 1;
}
