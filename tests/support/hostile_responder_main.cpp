// dnstransport_hostile_responder: the tests' misbehaving responder as a program, for runs by
// hand (long runs, memory checks). Prints the port it listens on, stops on SIGINT/SIGTERM.
//   dnstransport_hostile_responder udp|tcp|tls SCENARIO
// SCENARIO: answer, drop-half, idle-close (50 ms), close-after-3, reset-on-accept, wrong-id,
// late (3 s), never-read, malformed.

#include <csignal>
#include <cstdio>
#include <map>
#include <string>
#include <thread>

#include "misbehaviour.hpp"
#include "stream_scripts.hpp"

namespace {

volatile std::sig_atomic_t stop = 0;

void on_signal(int) {
  stop = 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace dnstransport;
  using namespace dnstransport::hostile;
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s udp|tcp|tls SCENARIO\n", argv[0]);
    return 2;
  }
  const auto transport = parse_transport(argv[1]);
  if (!transport) {
    std::fprintf(stderr, "unknown transport %s\n", argv[1]);
    return 2;
  }
  const std::map<std::string, message_script> messages{
      {"answer", answer_all()},          {"drop-half", answer_every_other()},
      {"wrong-id", wrong_id()},          {"late", answer_all(std::chrono::seconds(3))},
      {"malformed", compression_loop()},
  };
  const std::map<std::string, connection_script> connections{
      {"idle-close", idle_close(milliseconds(50))},
      {"close-after-3", close_after(3)},
      {"reset-on-accept", reset_on_accept()},
      {"never-read", never_read()},
  };
  hostile_options options;
  options.transport = *transport;
  std::unique_ptr<hostile_server> server;
  if (const auto m = messages.find(argv[2]); m != messages.end()) {
    server = std::make_unique<hostile_server>(options, m->second);
  } else if (const auto c = connections.find(argv[2]);
             c != connections.end() && *transport != transport_kind::udp) {
    server = std::make_unique<hostile_server>(options, c->second);
  } else {
    std::fprintf(stderr, "unknown scenario %s for %s\n", argv[2], argv[1]);
    return 2;
  }
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::printf("%s 127.0.0.1:%u %s\n", argv[1], static_cast<unsigned>(server->port()), argv[2]);
  std::fflush(stdout);
  while (stop == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::printf("queries %llu, connections %llu\n",
              static_cast<unsigned long long>(server->queries()),
              static_cast<unsigned long long>(server->connections()));
  return 0;
}
