// The DoH client (doh_session: its nghttp2 client session, callbacks and response handling)
// fed what a server sends, through the in-memory connections of the unit tests
// (tests/support/scripted_socket.hpp, "h2" agreed on, no TLS). The first octet chooses POST
// or GET, how the client's reads are cut, whether the server resets or closes after its
// octets, and how many connections get them; the rest is what the server sends on the
// client's first write, after which it ends the connection. Later connections reach an
// honest HTTP/2 server (tests/support/scripted_h2.hpp) that answers every request, so the run
// always finishes: three queries, every one sent once and ended in exactly one outcome.
// FUZZ_DOH_CLIENT_WRITE_SEEDS=DIR writes seeds (a server's SETTINGS and good answers, whole
// and cut) built from the client's own queries.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <dnstransport/message.hpp>
#include <dnstransport/query_source.hpp>

#include "fuzz_check.hpp"
#include "responder/responder.hpp"
#include "scripted_h2.hpp"
#include "scripted_run.hpp"
#include "scripted_socket.hpp"
#include "transport/doh/doh_transport.hpp"

using namespace dnstransport;
using namespace dnstransport::detail;

namespace {

constexpr std::uint64_t query_count = 3;

using bytes = std::vector<std::uint8_t>;

// A server that sends its octets once the client wrote, then ends the connection.
class fuzzed_server final : public scripted::peer_end {
 public:
  fuzzed_server(std::span<const std::uint8_t> octets, bool reset)
      : octets_(octets), reset_(reset) {}
  void take(std::span<const std::uint8_t> /*octets*/) override {
    if (sent_) return;
    sent_ = true;
    send(octets_);
    end_after_sending(reset_);
  }

 private:
  std::span<const std::uint8_t> octets_;
  bool reset_;
  bool sent_ = false;
};

void frame(bytes& out, std::uint8_t type, std::uint8_t flags, std::uint32_t stream,
           const bytes& payload) {
  const std::size_t n = payload.size();
  out.insert(out.end(),
             {static_cast<std::uint8_t>(n >> 16), static_cast<std::uint8_t>(n >> 8),
              static_cast<std::uint8_t>(n), type, flags, static_cast<std::uint8_t>(stream >> 24),
              static_cast<std::uint8_t>(stream >> 16), static_cast<std::uint8_t>(stream >> 8),
              static_cast<std::uint8_t>(stream)});
  out.insert(out.end(), payload.begin(), payload.end());
}

// HPACK: a literal without indexing whose name is the static table's `index` (>= 15).
void literal(bytes& out, std::uint8_t index, const std::string& value) {
  out.insert(out.end(), {0x0f, static_cast<std::uint8_t>(index - 15),
                         static_cast<std::uint8_t>(value.size())});
  out.insert(out.end(), value.begin(), value.end());
}

void write_seeds(const char* directory) {
  const query_set queries = default_queries();
  bytes answers;
  frame(answers, 4, 0, 0, {});  // SETTINGS
  frame(answers, 4, 1, 0, {});  // SETTINGS ACK
  for (std::uint32_t i = 0; i < query_count; ++i) {
    bytes query(queries[i].begin(), queries[i].end());
    query[0] = query[1] = 0;  // DoH sends id 0
    bytes answer(query.size() + answer_overhead);
    answer.resize(build_answer(query, answer_mode::answer, answer));
    bytes headers{0x88};  // :status 200
    literal(headers, 31, "application/dns-message");
    literal(headers, 28, std::to_string(answer.size()));
    frame(answers, 1, 4, 2 * i + 1, headers);
    frame(answers, 0, 1, 2 * i + 1, answer);
  }
  const auto put = [&](const std::string& name, std::uint8_t options, const bytes& server) {
    std::ofstream file(std::string(directory) + "/" + name, std::ios::binary);
    file.put(static_cast<char>(options));
    file.write(reinterpret_cast<const char*>(server.data()),
               static_cast<std::streamsize>(server.size()));
  };
  put("post_answered", 0x00, answers);
  put("get_answered_one_octet_reads", 0x03, answers);
  put("answered_then_reset_twice", 0x1c, answers);
  put("cut_in_a_frame", 0x00, bytes(answers.begin(), answers.end() - 20));
  bytes goaway = answers;
  frame(goaway, 7, 0, 0, {0, 0, 0, 1, 0, 0, 0, 0});  // GOAWAY after stream 1
  put("goaway", 0x00, goaway);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  if (const char* directory = std::getenv("FUZZ_DOH_CLIENT_WRITE_SEEDS")) {
    write_seeds(directory);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::uint8_t options = data[0];
  const std::span<const std::uint8_t> server(data + 1, size - 1);
  const unsigned fuzzed_connections = 1 + ((options >> 3) & 1);
  const bool reset = (options & 4) != 0;

  scripted::h2_script script;  // the honest server's, and the wire's
  script.read_pieces =
      (options & 2) != 0 ? std::vector<std::size_t>{1} : std::vector<std::size_t>{65536};
  scripted::h2_log log;
  unsigned connections = 0;
  auto sockets =
      scripted::make_scripted_sockets(script, log, [&]() -> std::unique_ptr<scripted::peer_end> {
        if (connections++ < fuzzed_connections) {
          return std::make_unique<fuzzed_server>(server, reset);
        }
        return std::make_unique<scripted::h2_connection>(script, log);
      });
  doh_settings doh;
  doh.authority = "dns.example";
  doh.use_get = (options & 1) != 0;
  doh_transport transport(stream_settings{}, std::move(doh), make_tcp_connector(),
                          std::move(sockets));
  scripted::run_shape shape;
  shape.count = query_count;
  shape.outstanding = query_count;
  shape.timeout_seconds = 1;
  const counters counts = scripted::run_on_one_worker(transport, shape);
  const query_counters& q = counts.queries;
  FUZZ_CHECK(q.queries_sent == query_count);
  FUZZ_CHECK(queries_ended(q) == q.queries_sent);
  FUZZ_CHECK(q.lost == 0);  // every connection ends, so nothing waits for the timeout
  return 0;
}
