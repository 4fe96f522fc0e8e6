// A sweep on the program's own io_context (UDP and TCP, 1 and 4 clients, 1 and unlimited
// queries per connection), its progress as it runs, then its findings and a report directory
// (tables, plots when gnuplot is installed, index.html), as `dnstransport sweep` and
// `dnstransport report` make them.
//
//   sweep_and_report [DIRECTORY]      the report's directory (default: sweep-report)
#include <cstdio>
#include <exception>

#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <dnstransport/async_sweep.hpp>
#include <dnstransport/report.hpp>
#include <dnstransport/server.hpp>

int main(int argc, char** argv) {
  using namespace dnstransport;
  server_options options;
  options.listen[transport_kind::udp] = endpoint{"127.0.0.1", 0};
  options.listen[transport_kind::tcp] = endpoint{"127.0.0.1", 0};
  server responder(options);

  sweep_plan plan;
  plan.ports = responder.ports();
  plan.transports = {{transport_kind::udp, std::nullopt}, {transport_kind::tcp, std::nullopt}};
  plan.clients = {1, 4};
  plan.queries_per_connection = {1, 0};
  plan.repeats = 2;
  plan.duration_seconds = 0.3;
  plan.pause_seconds = 0.1;
  sweep_callbacks callbacks;
  callbacks.on_point_done = [](const sweep_result& so_far) {
    const auto& p = so_far.points.back();
    std::printf("point %zu of %zu: %s, %u clients: %.0f answers/s\n", so_far.points.size(),
                so_far.planned_points, sweep_transport_name(p.point.transport).c_str(),
                p.point.clients, p.summary.qps.mean);
  };

  boost::asio::io_context io;
  auto swept = async_run_sweep(io.get_executor(), plan, callbacks, boost::asio::use_future);
  io.run();
  try {
    const sweep_result result = swept.get();
    for (const auto& f : result.findings) std::printf("- %s\n", f.text.c_str());
    const report_output written =
        write_report(result, argc > 1 ? argv[1] : "sweep-report", "sweep_and_report");
    std::printf("report: %s (%zu files)%s%s\n", written.index.c_str(), written.files.size(),
                written.plot_problem.empty() ? "" : "; ", written.plot_problem.c_str());
    return result.points.size() == 6 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sweep_and_report: %s\n", e.what());
    return 1;
  }
}
