// One query of the program's own over each transport (dnstransport::client), awaited in a
// C++20 coroutine: the built-in responder listens on UDP, TCP, DoT, DoH and DoQ, and each
// answer is printed with its RCODE, size and latency. A query that gets no answer is a
// failure of the program.
//
//   one_query_each_transport      the built-in responder, www.example.com AAAA
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <dnstransport/client.hpp>
#include <dnstransport/message.hpp>
#include <dnstransport/server.hpp>

namespace asio = boost::asio;
using namespace dnstransport;

asio::awaitable<void> ask_each(const server& responder, int& failures) {
  const std::vector<std::uint8_t> query = encode_query("www.example.com", rr_type::aaaa);
  for (const transport_traits& traits : all_transports()) {
    if (!traits.compiled) continue;
    const transport_kind t = traits.kind;
    const std::string name(traits.name);
    client_settings settings;
    settings.target.transport = t;
    settings.target.port = responder.port(t);
    if (traits.gnutls_only) settings.tls.backend = tls_backend::gnutls;
    client one(co_await asio::this_coro::executor, settings);
    try {
      const client_answer answer = co_await one.async_query(query, asio::use_awaitable);
      if (!answer.answered) {
        std::printf("%-4s no answer: %s\n", name.c_str(),
                    std::string(query_outcome_name(answer.outcome)).c_str());
        ++failures;
        continue;
      }
      std::printf("%-4s %s, %zu octets, %.3f ms\n", name.c_str(), rcode_name(answer.rcode).c_str(),
                  answer.message.size(), static_cast<double>(answer.latency_ns) / 1e6);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: %s\n", name.c_str(), e.what());
      ++failures;
    }
  }
}

int main() {
  server_options options;
  for (const transport_traits& traits : all_transports()) {
    if (traits.compiled) options.listen[traits.kind] = endpoint{"127.0.0.1", 0};
  }
  options.certificate_directory =
      (std::filesystem::temp_directory_path() / "one_query_each_transport").string();
  try {
    server responder(options);
    asio::io_context io;
    int failures = 0;
    asio::co_spawn(io, ask_each(responder, failures), asio::detached);
    io.run();
    return failures == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
