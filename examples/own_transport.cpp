// A transport of the program's own, plugged in and swept: "greeting", DNS over TCP after a
// 4-octet greeting ("HELO") that the client sends and the server checks, as a proxy in front
// of a server might want. Registered with register_transport, it is swept beside UDP against
// the built-in responder listening for it, and the sweep's tables are printed as
// `dnstransport sweep` prints them.
//
//   own_transport          1 and 4 clients, 1 and unlimited queries per connection
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <span>
#include <string>

#include <dnstransport/report.hpp>
#include <dnstransport/server.hpp>
#include <dnstransport/sweep.hpp>
#include <dnstransport/user_transport.hpp>

using namespace dnstransport;

constexpr std::array<std::uint8_t, 4> greeting{'H', 'E', 'L', 'O'};

// One end of a connection on a non-blocking socket: the client's handshake sends the
// greeting, the server's reads and checks it; then DNS over TCP's octets pass as they are.
class greeting_stream final : public user_stream {
 public:
  greeting_stream(int fd, bool client) : fd_(fd), client_(client) {}

  stream_status handshake() override {
    while (done_ < greeting.size()) {
      const std::size_t left = greeting.size() - done_;
      const ssize_t n = client_ ? ::send(fd_, greeting.data() + done_, left, MSG_NOSIGNAL)
                                : ::recv(fd_, heard_.data() + done_, left, 0);
      if (n == 0) return stream_status::closed;
      if (n < 0)
        return wait_or_fail(client_ ? stream_status::want_write : stream_status::want_read);
      done_ += static_cast<std::size_t>(n);
    }
    if (!client_ && heard_ != greeting) {
      cause_ = "bad_greeting";
      return stream_status::failed;
    }
    return stream_status::done;
  }

  stream_status read(std::span<std::uint8_t> buffer, std::size_t& transferred) override {
    const ssize_t n = ::recv(fd_, buffer.data(), buffer.size(), 0);
    if (n == 0) return stream_status::closed;
    if (n < 0) return wait_or_fail(stream_status::want_read);
    transferred = static_cast<std::size_t>(n);
    return stream_status::done;
  }

  stream_status write(std::span<const std::span<const std::uint8_t>> pieces,
                      std::size_t& transferred) override {
    // One gather write of the pieces as they are: nothing copied, nothing allocated.
    std::array<iovec, 64> vectors;
    const std::size_t n = std::min(pieces.size(), vectors.size());
    for (std::size_t i = 0; i < n; ++i) {
      vectors[i] = {const_cast<std::uint8_t*>(pieces[i].data()), pieces[i].size()};
    }
    msghdr message{};
    message.msg_iov = vectors.data();
    message.msg_iovlen = n;
    const ssize_t sent = ::sendmsg(fd_, &message, MSG_NOSIGNAL);
    if (sent < 0) return wait_or_fail(stream_status::want_write);
    transferred = static_cast<std::size_t>(sent);
    return stream_status::done;
  }

  std::string failure_cause() const override { return cause_; }

 private:
  stream_status wait_or_fail(stream_status wait) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return wait;
    cause_ = errno == ECONNRESET ? "ECONNRESET" : "socket_error";
    return stream_status::failed;
  }

  int fd_;
  bool client_;
  std::size_t done_ = 0;
  std::array<std::uint8_t, 4> heard_{};
  std::string cause_ = "failed";
};

int main() {
  try {
    user_transport own;
    own.name = "greeting";
    own.long_name = "DNS over TCP after a greeting";
    own.short_name = "Greeting";
    own.has_handshake = true;  // the greeting is counted as a connection's handshake
    own.client = [](int fd) { return std::make_unique<greeting_stream>(fd, true); };
    own.server = [](int fd) { return std::make_unique<greeting_stream>(fd, false); };
    const transport_kind kind = register_transport(own);

    server_options options;
    options.listen[transport_kind::udp] = endpoint{"127.0.0.1", 0};
    options.listen[kind] = endpoint{"127.0.0.1", 0};
    server responder(options);

    sweep_plan plan;
    plan.ports = responder.ports();
    plan.transports = {{transport_kind::udp, std::nullopt}, {kind, std::nullopt}};
    plan.clients = {1, 4};
    plan.queries_per_connection = {1, 0};
    plan.repeats = 2;
    plan.duration_seconds = 0.3;
    plan.pause_seconds = 0.1;
    const sweep_result result = run_sweep(plan);
    std::fputs(format_tables(result).c_str(), stdout);
    std::uint64_t answered = 0;
    for (const auto& point : result.points) {
      if (point.point.transport.transport != kind) continue;
      for (const auto& run : point.repeats) answered += run.responses_received;
    }
    std::printf("%s: %llu answers over %zu points\n", own.name.c_str(),
                static_cast<unsigned long long>(answered), result.points.size());
    return answered > 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "own_transport: %s\n", e.what());
    return 1;
  }
}
