// The responder's DNS-over-HTTPS connection (server_stream_connection running a
// server_doh_session, its nghttp2 server session) fed what a client sends, without TLS: a
// memory_stream in place of the TLS stream carries the octets into the session as the connection's
// reads would, then ends. The first two octets choose the read and write pieces, the third the
// responder's settings (answer or echo, GOAWAY after two answers, one concurrent stream, another
// path); the rest is the client's side of the connection (seeds: a client preface, SETTINGS, then
// POST and GET requests). Whatever comes, the connection ends once its input did (no wait left
// behind, released by its thread), its output opens with the server's SETTINGS, and it writes
// nothing after its shutdown.

#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include <boost/asio/ip/tcp.hpp>

#include <dnstransport/server.hpp>

#include "fuzz_check.hpp"
#include "memory_stream.hpp"
#include "responder/server_thread.hpp"
#include "transport/doh/server_doh_session.hpp"
#include "transport/stream/server_stream_connection.hpp"

using namespace dnstransport;
using namespace dnstransport::detail;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) return 0;
  fuzzing::memory_wire wire;
  wire.read_pieces = chunker(data[0], 20000);
  wire.write_pieces = chunker(data[1], 20000);
  wire.from_client = {data + 3, size - 3};

  server_options options;
  options.mode = (data[2] & 1) != 0 ? answer_mode::echo : answer_mode::answer;
  options.close_after_queries = (data[2] & 2) != 0 ? 2 : 0;
  options.doh_max_streams = (data[2] & 4) != 0 ? 1 : 100;
  if ((data[2] & 8) != 0) options.doh_path = "/q";
  server_thread thread(options, nullptr, nullptr);

  // The connection's socket only waits and shuts down: one end of a pair whose other end is
  // closed, so that the linger after the connection's FIN ends at once.
  int ends[2];
  FUZZ_CHECK(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, ends) == 0);
  ::close(ends[1]);
  boost::asio::ip::tcp::socket socket(thread.io());
  socket.assign(boost::asio::ip::tcp::v4(), ends[0]);

  fuzzing::memory_acceptor acceptor(wire);
  std::weak_ptr<server_stream_connection> watch;
  {
    auto connection =
        server_stream_connection::make(thread, make_accepted_socket(std::move(socket)), acceptor,
                                       make_server_doh_session, transport_kind::doh);
    watch = connection;
    thread.adopt(std::move(connection));
  }
  thread.io().poll();
  FUZZ_CHECK(watch.expired());
  // The server's connection preface: a SETTINGS frame on stream 0.
  if (!wire.to_client.empty()) {
    FUZZ_CHECK(wire.to_client.size() >= 9 && wire.to_client[3] == 4 && wire.to_client[5] == 0 &&
               wire.to_client[6] == 0 && wire.to_client[7] == 0 && wire.to_client[8] == 0);
  }
  return 0;
}
