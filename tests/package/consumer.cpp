// Encodes a query, starts the responder, runs a tiny load with the blocking call and the
// same load asynchronously on the program's own io_context: the installed headers and
// library are complete enough for a real program.
#include <cstdio>
#include <exception>

#include <boost/asio/io_context.hpp>

#include <dnstransport/async_load.hpp>
#include <dnstransport/load.hpp>
#include <dnstransport/message.hpp>
#include <dnstransport/server.hpp>

int main() {
  using namespace dnstransport;
  const auto query = encode_query("example.com", rr_type::aaaa);
  if (query.size() != 29) return 1;

  server_options options;
  options.listen[transport_kind::udp] = endpoint{"127.0.0.1", 0};
  server responder(options);

  load_spec spec;
  spec.target.port = responder.port(transport_kind::udp);
  spec.traffic.count = 100;
  spec.traffic.outstanding = 10;
  const run_result result = run_load(spec);
  std::printf("%llu of %llu answered\n", static_cast<unsigned long long>(result.responses_received),
              static_cast<unsigned long long>(result.queries_sent));
  if (result.responses_received != 100) return 1;

  boost::asio::io_context io;
  unsigned long long answered = 0;
  bool failed = false;
  async_run_load(io.get_executor(), spec, [&](std::exception_ptr error, const run_result& r) {
    failed = error != nullptr;
    answered = r.responses_received;
  });
  io.run();
  std::printf("%llu answered asynchronously\n", answered);
  return !failed && answered == 100 ? 0 : 1;
}
