// Encodes a query, starts the responder, runs a tiny load: the installed headers and library
// are complete enough for a real program.
#include <cstdio>

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
  return result.responses_received == 100 ? 0 : 1;
}
