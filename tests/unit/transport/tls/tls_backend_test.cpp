#include "transport/tls/tls_backend.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <ostream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <dnstransport/error.hpp>
#include <dnstransport/tls.hpp>

#include "transport/stream/byte_stream.hpp"
#include "util/receive_time.hpp"
#include "util/syscall_counter.hpp"

namespace dnstransport::detail {

void PrintTo(tls_io io, std::ostream* out) {
  static constexpr const char* names[] = {"done", "want_read", "want_write", "closed", "error"};
  *out << names[static_cast<int>(io)];
}

void PrintTo(tls_failure failure, std::ostream* out) {
  *out << tls_failure_name(failure);
}

namespace {

using namespace std::chrono_literals;

// Bounds every exchange so that an engine bug fails a test instead of hanging it.
constexpr auto time_limit = 5s;

// Certificates for all tests, in a directory of this process: test runners may start
// several processes of this binary at once.
class certificates : public ::testing::Environment {
 public:
  void SetUp() override {
    directory_ = std::filesystem::path(::testing::TempDir()) /
                 ("dnstransport_tls_backend_test_" + std::to_string(::getpid()));
    server_ = generate_self_signed_certificate(directory_ / "server");
    other_ = generate_self_signed_certificate(directory_ / "other");
    // OpenSSL writes with write(2), so writing to a socket whose peer has gone raises
    // SIGPIPE; processes using the engine ignore it, and so does this one.
    std::signal(SIGPIPE, SIG_IGN);
  }
  void TearDown() override { std::filesystem::remove_all(directory_); }

  static const std::filesystem::path& directory() { return directory_; }
  static const certificate_files& server() { return server_; }
  static const certificate_files& other() { return other_; }

 private:
  static inline std::filesystem::path directory_;
  static inline certificate_files server_;
  static inline certificate_files other_;
};

[[maybe_unused]] const auto* const certificates_environment =
    ::testing::AddGlobalTestEnvironment(new certificates);

class socket_pair {
 public:
  enum class kind { unix_stream, loopback_tcp };

  explicit socket_pair(kind k = kind::unix_stream) {
    if (k == kind::loopback_tcp) {
      connect_over_loopback();
    } else if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds_.data()) !=
               0) {
      ADD_FAILURE() << "socketpair failed";
      fds_ = {-1, -1};
    }
  }
  ~socket_pair() {
    for (const int fd : fds_) {
      if (fd >= 0) ::close(fd);
    }
  }
  socket_pair(const socket_pair&) = delete;
  socket_pair& operator=(const socket_pair&) = delete;

  int client() const { return fds_[0]; }
  int server() const { return fds_[1]; }

  // Ends one side as a peer that gives up would. The descriptor stays open so that its
  // number is not reused while a session still refers to it.
  void hang_up_client() { ::shutdown(fds_[0], SHUT_RDWR); }
  void hang_up_server() { ::shutdown(fds_[1], SHUT_RDWR); }

  // Closes the server end with data still unread in it, which resets the stream.
  void reset_server() {
    ::close(fds_[1]);
    fds_[1] = -1;
  }

 private:
  // A TCP connection over 127.0.0.1, both ends non-blocking.
  void connect_over_loopback() {
    const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    auto* any = reinterpret_cast<sockaddr*>(&address);
    if (listener < 0 || ::bind(listener, any, length) != 0 || ::listen(listener, 1) != 0 ||
        ::getsockname(listener, any, &length) != 0) {
      ADD_FAILURE() << "no loopback listener";
    } else {
      fds_[0] = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fds_[0] < 0 || ::connect(fds_[0], any, length) != 0) ADD_FAILURE() << "no connect";
      fds_[1] = ::accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fds_[1] < 0) ADD_FAILURE() << "no accept";
      if (fds_[0] >= 0) ::fcntl(fds_[0], F_SETFL, ::fcntl(fds_[0], F_GETFL) | O_NONBLOCK);
      // No Nagle delay: a small record written while the peer's ACK is delayed would leave
      // tens of milliseconds later (which the receive stamps do show).
      const int one = 1;
      for (const int fd : fds_) {
        if (fd >= 0) ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      }
    }
    if (listener >= 0) ::close(listener);
  }

  std::array<int, 2> fds_{-1, -1};
};

tls_client_options client_options(tls_backend backend) {
  tls_client_options options;
  options.backend = backend;
  return options;
}

tls_server_options server_options(tls_backend backend) {
  tls_server_options options;
  options.backend = backend;
  options.certificate_file = certificates::server().certificate_file;
  options.key_file = certificates::server().key_file;
  return options;
}

struct combination {
  tls_backend client;
  tls_backend server;
};

std::vector<combination> combinations() {
  std::vector<combination> result;
  for (const tls_backend client : available_tls_backends()) {
    for (const tls_backend server : available_tls_backends()) result.push_back({client, server});
  }
  return result;
}

std::string describe(const combination& c) {
  return std::string(tls_backend_name(c.client)) + " client, " +
         std::string(tls_backend_name(c.server)) + " server";
}

constexpr std::array<tls_version, 2> versions{tls_version::v1_2, tls_version::v1_3};

std::string version_string(tls_version version) {
  return "TLSv" + std::string(tls_version_name(version));
}

// Repeats `step` while it asks for readiness, waiting for that readiness on `fd`.
tls_io drive(int fd, const std::function<tls_io()>& step) {
  const auto deadline = std::chrono::steady_clock::now() + time_limit;
  for (;;) {
    const tls_io result = step();
    if (result != tls_io::want_read && result != tls_io::want_write) return result;
    if (std::chrono::steady_clock::now() > deadline) {
      ADD_FAILURE() << "no progress within the time limit";
      return tls_io::error;
    }
    pollfd wait{fd, static_cast<short>(result == tls_io::want_read ? POLLIN : POLLOUT), 0};
    ::poll(&wait, 1, 100);
  }
}

struct handshake_outcome {
  tls_io client = tls_io::error;
  tls_io server = tls_io::error;
};

// Runs both handshakes in this thread. A side that ends without success hangs up its
// socket, as the engine and the responder do, so the other side sees the end rather than
// waiting for a message that never comes.
handshake_outcome handshake(tls_connection& client, tls_connection& server, socket_pair& sockets) {
  struct side {
    tls_connection& session;
    int fd;
    std::function<void()> hang_up;
    tls_io last = tls_io::want_read;
  };
  std::array<side, 2> sides{side{client, sockets.client(), [&] { sockets.hang_up_client(); }},
                            side{server, sockets.server(), [&] { sockets.hang_up_server(); }}};
  const auto deadline = std::chrono::steady_clock::now() + time_limit;
  for (;;) {
    std::vector<pollfd> waits;
    for (side& s : sides) {
      if (s.last != tls_io::want_read && s.last != tls_io::want_write) continue;
      s.last = s.session.handshake();
      if (s.last == tls_io::want_read || s.last == tls_io::want_write) {
        waits.push_back(
            {s.fd, static_cast<short>(s.last == tls_io::want_read ? POLLIN : POLLOUT), 0});
      } else if (s.last != tls_io::done) {
        s.hang_up();
      }
    }
    if (waits.empty()) break;
    if (std::chrono::steady_clock::now() > deadline) {
      ADD_FAILURE() << "handshake did not finish within the time limit";
      break;
    }
    ::poll(waits.data(), waits.size(), 100);
  }
  return {sides[0].last, sides[1].last};
}

void write_all(tls_connection& session, int fd, const std::vector<std::uint8_t>& data) {
  std::size_t written = 0;
  while (written < data.size()) {
    std::size_t transferred = 0;
    const tls_io result = drive(fd, [&] {
      return session.write(data.data() + written, data.size() - written, transferred);
    });
    ASSERT_EQ(result, tls_io::done) << session.error_message();
    written += transferred;
  }
}

std::vector<std::uint8_t> read_exactly(tls_connection& session, int fd, std::size_t size) {
  std::vector<std::uint8_t> data(size);
  std::size_t received = 0;
  while (received < size) {
    std::size_t transferred = 0;
    const tls_io result = drive(
        fd, [&] { return session.read(data.data() + received, size - received, transferred); });
    if (result != tls_io::done) {
      ADD_FAILURE() << "read ended with " << ::testing::PrintToString(result) << ": "
                    << session.error_message();
      data.resize(received);
      break;
    }
    received += transferred;
  }
  return data;
}

// A DNS-over-TCP query for example.com/A with its two-octet length prefix.
std::vector<std::uint8_t> framed_query() {
  const std::vector<std::uint8_t> message{
      0x12, 0x34, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 7,    'e', 'x',
      'a',  'm',  'p',  'l',  'e',  3,    'c',  'o',  'm',  0,    0x00, 0x01, 0x00, 0x01};
  std::vector<std::uint8_t> framed(message.size() + 2);
  framed[1] = static_cast<std::uint8_t>(message.size());
  std::copy(message.begin(), message.end(), framed.begin() + 2);
  return framed;
}

// The query turned into a response header-wise, enough to tell it apart from the query.
std::vector<std::uint8_t> answer_to(std::vector<std::uint8_t> query) {
  query[4] |= 0x80;
  return query;
}

// Sends a query from the client and an answer back; afterwards TLS 1.3 tickets sent with
// the server's first flight have reached the client.
void exchange(tls_connection& client, tls_connection& server, socket_pair& sockets) {
  const std::vector<std::uint8_t> query = framed_query();
  write_all(client, sockets.client(), query);
  const std::vector<std::uint8_t> received = read_exactly(server, sockets.server(), query.size());
  EXPECT_EQ(received, query);
  const std::vector<std::uint8_t> answer = answer_to(received);
  write_all(server, sockets.server(), answer);
  EXPECT_EQ(read_exactly(client, sockets.client(), answer.size()), answer);
}

// A client and server context pair and one connection between them.
struct connection {
  socket_pair sockets;
  std::unique_ptr<tls_connection> client;
  std::unique_ptr<tls_connection> server;

  connection(tls_client_context& client_context, tls_server_context& server_context,
             const tls_ticket* ticket = nullptr,
             socket_pair::kind kind = socket_pair::kind::unix_stream)
      : sockets(kind),
        client(client_context.connect(sockets.client(), ticket)),
        server(server_context.accept(sockets.server())) {}

  handshake_outcome handshake() { return detail::handshake(*client, *server, sockets); }
};

// Feeds `bytes` to `session` from a raw peer and runs its handshake to the end.
tls_io handshake_against_raw_peer(tls_connection& session, int session_fd, int peer_fd,
                                  const std::vector<std::uint8_t>& bytes) {
  EXPECT_EQ(::write(peer_fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  return drive(session_fd, [&] { return session.handshake(); });
}

TEST(tls_backend_test, both_backends_are_available) {
#if defined(DNSTRANSPORT_HAVE_OPENSSL) && defined(DNSTRANSPORT_HAVE_GNUTLS)
  const std::vector<tls_backend> backends = available_tls_backends();
  EXPECT_EQ(std::set<tls_backend>(backends.begin(), backends.end()),
            (std::set<tls_backend>{tls_backend::openssl, tls_backend::gnutls}));
#else
  GTEST_SKIP() << "this build has only one TLS backend";
#endif
}

TEST(tls_backend_test, names_round_trip) {
  for (const tls_backend backend : {tls_backend::openssl, tls_backend::gnutls}) {
    EXPECT_EQ(parse_tls_backend(tls_backend_name(backend)), backend);
  }
  EXPECT_EQ(parse_tls_backend("OpenSSL"), std::nullopt);
  for (const tls_version version : versions) {
    EXPECT_EQ(parse_tls_version(tls_version_name(version)), version);
  }
  EXPECT_EQ(parse_tls_version("1.1"), std::nullopt);
  EXPECT_STREQ(tls_failure_name(tls_failure::protocol_version), "protocol_version");
  EXPECT_STREQ(tls_failure_name(tls_failure::not_tls), "not_tls");
}

TEST(tls_backend_test, generated_certificate_files_are_pem_and_key_is_private) {
  const certificate_files& files = certificates::server();
  EXPECT_EQ(files.certificate_file.parent_path(), files.key_file.parent_path());
  struct stat key_status {};
  ASSERT_EQ(::stat(files.key_file.c_str(), &key_status), 0);
  EXPECT_EQ(key_status.st_mode & 0777, 0600u);
  EXPECT_GT(std::filesystem::file_size(files.certificate_file), 0u);
}

TEST(tls_backend_test, handshake_negotiates_the_pinned_version) {
  for (const combination& c : combinations()) {
    for (const tls_version version : versions) {
      SCOPED_TRACE(describe(c) + ", TLS " + std::string(tls_version_name(version)));
      tls_client_options client = client_options(c.client);
      client.min_version = client.max_version = version;
      const auto client_context = make_tls_client_context(client);
      const auto server_context = make_tls_server_context(server_options(c.server));
      connection link(*client_context, *server_context);
      const handshake_outcome outcome = link.handshake();
      ASSERT_EQ(outcome.client, tls_io::done) << link.client->error_message();
      ASSERT_EQ(outcome.server, tls_io::done) << link.server->error_message();
      EXPECT_EQ(link.client->version(), version_string(version));
      EXPECT_EQ(link.server->version(), version_string(version));
      EXPECT_FALSE(link.client->resumed());
      EXPECT_EQ(link.client->failure(), tls_failure::none);
    }
  }
}

TEST(tls_backend_test, default_versions_negotiate_tls_1_3) {
  for (const combination& c : combinations()) {
    SCOPED_TRACE(describe(c));
    const auto client_context = make_tls_client_context(client_options(c.client));
    const auto server_context = make_tls_server_context(server_options(c.server));
    connection link(*client_context, *server_context);
    const handshake_outcome outcome = link.handshake();
    ASSERT_EQ(outcome.client, tls_io::done) << link.client->error_message();
    ASSERT_EQ(outcome.server, tls_io::done) << link.server->error_message();
    EXPECT_EQ(link.client->version(), "TLSv1.3");
  }
}

TEST(tls_backend_test, dns_message_crosses_in_both_directions) {
  for (const combination& c : combinations()) {
    for (const tls_version version : versions) {
      SCOPED_TRACE(describe(c) + ", TLS " + std::string(tls_version_name(version)));
      tls_server_options server = server_options(c.server);
      server.min_version = server.max_version = version;
      const auto client_context = make_tls_client_context(client_options(c.client));
      const auto server_context = make_tls_server_context(server);
      connection link(*client_context, *server_context);
      const handshake_outcome outcome = link.handshake();
      ASSERT_EQ(outcome.client, tls_io::done) << link.client->error_message();
      ASSERT_EQ(outcome.server, tls_io::done) << link.server->error_message();
      exchange(*link.client, *link.server, link.sockets);
    }
  }
}

TEST(tls_backend_test, bulk_data_crosses_through_partial_writes) {
  // Far more than a socket buffer holds, so writes must wait for the reader.
  std::vector<std::uint8_t> data(1 << 20);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::uint8_t>(i * 7);
  for (const combination& c : combinations()) {
    SCOPED_TRACE(describe(c));
    const auto client_context = make_tls_client_context(client_options(c.client));
    const auto server_context = make_tls_server_context(server_options(c.server));
    connection link(*client_context, *server_context);
    ASSERT_EQ(link.handshake().client, tls_io::done);

    std::vector<std::uint8_t> received(data.size());
    std::size_t written = 0;
    std::size_t read = 0;
    tls_io write_state = tls_io::done;
    const auto deadline = std::chrono::steady_clock::now() + time_limit;
    while (read < data.size() && std::chrono::steady_clock::now() < deadline) {
      std::size_t transferred = 0;
      if (written < data.size()) {
        write_state = link.client->write(data.data() + written, data.size() - written, transferred);
        ASSERT_NE(write_state, tls_io::error) << link.client->error_message();
        if (write_state == tls_io::done) written += transferred;
      }
      const tls_io read_state =
          link.server->read(received.data() + read, received.size() - read, transferred);
      ASSERT_NE(read_state, tls_io::error) << link.server->error_message();
      if (read_state == tls_io::done) read += transferred;
      if (write_state != tls_io::done && read_state != tls_io::done) {
        std::array<pollfd, 2> waits{
            pollfd{link.sockets.client(),
                   static_cast<short>(write_state == tls_io::want_read ? POLLIN : POLLOUT), 0},
            pollfd{link.sockets.server(), POLLIN, 0}};
        ::poll(waits.data(), waits.size(), 100);
      }
    }
    ASSERT_EQ(read, data.size());
    EXPECT_EQ(received, data);
  }
}

TEST(tls_backend_test, pending_bytes_are_readable_without_socket_readiness) {
  for (const combination& c : combinations()) {
    SCOPED_TRACE(describe(c));
    const auto client_context = make_tls_client_context(client_options(c.client));
    const auto server_context = make_tls_server_context(server_options(c.server));
    connection link(*client_context, *server_context);
    ASSERT_EQ(link.handshake().client, tls_io::done);
    const std::vector<std::uint8_t> query = framed_query();
    write_all(*link.client, link.sockets.client(), query);

    // Only the length prefix: the rest of the record stays decrypted inside the library.
    const std::vector<std::uint8_t> prefix = read_exactly(*link.server, link.sockets.server(), 2);
    ASSERT_EQ(prefix.size(), 2u);
    ASSERT_EQ(link.server->pending(), query.size() - 2);
    std::vector<std::uint8_t> rest(query.size() - 2);
    std::size_t transferred = 0;
    ASSERT_EQ(link.server->read(rest.data(), rest.size(), transferred), tls_io::done);
    EXPECT_EQ(transferred, rest.size());
    EXPECT_EQ(link.server->pending(), 0u);
  }
}

// A client whose calls are counted (as the engine's are) takes what the socket holds in
// one read: the records after the first wait in the session, reported as pending, and are
// read without the socket becoming readable again.
TEST(tls_backend_test, client_reads_records_ahead_and_reports_them_pending) {
  for (const combination& c : combinations()) {
    SCOPED_TRACE(describe(c));
    const auto client_context = make_tls_client_context(client_options(c.client));
    const auto server_context = make_tls_server_context(server_options(c.server));
    connection link(*client_context, *server_context);
    syscall_counter calls;
    link.client->count_syscalls(calls);
    ASSERT_EQ(link.handshake().client, tls_io::done);
    const std::vector<std::uint8_t> answer = answer_to(framed_query());
    constexpr int records = 3;
    for (int i = 0; i < records; ++i) write_all(*link.server, link.sockets.server(), answer);

    const std::uint64_t before = calls.calls;
    std::vector<std::uint8_t> received;
    std::vector<std::uint8_t> buffer(4096);
    const auto deadline = std::chrono::steady_clock::now() + time_limit;
    while (received.size() < records * answer.size() &&
           std::chrono::steady_clock::now() < deadline) {
      std::size_t transferred = 0;
      const tls_io r = link.client->read(buffer.data(), buffer.size(), transferred);
      ASSERT_TRUE(r == tls_io::done || r == tls_io::want_read) << link.client->error_message();
      // Waiting for readiness with input held inside the session would wait forever.
      if (r == tls_io::want_read) {
        ASSERT_EQ(link.client->pending(), 0u);
      }
      if (r == tls_io::done)
        received.insert(received.end(), buffer.begin(), buffer.begin() + transferred);
      if (received.size() == records * answer.size()) break;
      // A record taken off the socket must be reported, or the caller would wait forever.
      if (received.size() > 0) {
        ASSERT_GT(link.client->pending(), 0u) << received.size() << " octets read";
        continue;
      }
      pollfd wait{link.sockets.client(), POLLIN, 0};
      ::poll(&wait, 1, 100);
    }
    ASSERT_EQ(received.size(), records * answer.size());
    EXPECT_EQ(std::vector<std::uint8_t>(received.begin(), received.begin() + answer.size()),
              answer);
    EXPECT_EQ(link.client->pending(), 0u);
    // The three records (and a TLS 1.3 ticket before them) came in one read(2).
    EXPECT_EQ(calls.calls - before, 1u);
    std::size_t transferred = 0;
    EXPECT_EQ(link.client->read(buffer.data(), buffer.size(), transferred), tls_io::want_read);
  }
}

// How long ago, by the engine's clock, the kernel stamped `stamp` (receive_time.hpp).
std::chrono::nanoseconds age_of(std::uint64_t stamp) {
  const receive_clock clock = receive_clock::read();
  return std::chrono::nanoseconds(clock.monotonic_now - clock.received(stamp));
}

// The kernel stamps packets once any socket asks, but turns that on for the whole system a
// moment after the first one does (a deferred static key): waits, over a connection of its
// own, until packets come stamped. Call it while a socket with stamps on is open, or the
// kernel may turn them off again.
bool packets_come_stamped() {
  socket_pair probe(socket_pair::kind::loopback_tcp);
  if (!enable_receive_stamps(probe.client())) return false;
  const auto stream = make_tcp_stream(probe.client());
  const auto deadline = std::chrono::steady_clock::now() + time_limit;
  while (stream->newest_arrival() == 0 && std::chrono::steady_clock::now() < deadline) {
    const std::uint8_t byte = 0;
    if (::send(probe.server(), &byte, 1, 0) != 1) return false;
    pollfd wait{probe.client(), POLLIN, 0};
    ::poll(&wait, 1, 100);
    std::array<std::uint8_t, 16> sink{};
    std::size_t transferred = 0;
    stream->read(sink, transferred);
    std::this_thread::sleep_for(1ms);
  }
  return stream->newest_arrival() != 0;
}

// Reads with the session until `size` octets came; the stamps of the reads are the client's.
TEST(tls_backend_test, a_client_session_keeps_the_receive_stamp_of_what_it_read) {
  for (const combination& c : combinations()) {
    SCOPED_TRACE(describe(c));
    const auto client_context = make_tls_client_context(client_options(c.client));
    const auto server_context = make_tls_server_context(server_options(c.server));
    connection link(*client_context, *server_context, nullptr, socket_pair::kind::loopback_tcp);
    ASSERT_TRUE(enable_receive_stamps(link.sockets.client()));
    ASSERT_TRUE(packets_come_stamped());
    syscall_counter calls;
    link.client->count_syscalls(calls);
    EXPECT_EQ(link.client->newest_arrival(), 0u);
    ASSERT_EQ(link.handshake().client, tls_io::done);
    exchange(*link.client, *link.server, link.sockets);
    // An answer that waits 50 ms in the socket before the client reads it: its stamp says
    // when it came, not when it was read.
    const std::vector<std::uint8_t> answer = answer_to(framed_query());
    write_all(*link.server, link.sockets.server(), answer);
    std::this_thread::sleep_for(50ms);
    ASSERT_EQ(read_exactly(*link.client, link.sockets.client(), answer.size()), answer);
    const std::uint64_t stamp = link.client->newest_arrival();
    ASSERT_NE(stamp, 0u);
    EXPECT_GE(age_of(stamp), 45ms);
    EXPECT_LT(age_of(stamp), time_limit);
    // The next answer's read moves it on: to that answer's arrival, written after the 50 ms
    // the first one waited (both are the kernel's stamps, so a stall in between only makes
    // the gap longer).
    write_all(*link.server, link.sockets.server(), answer);
    ASSERT_EQ(read_exactly(*link.client, link.sockets.client(), answer.size()), answer);
    EXPECT_GT(link.client->newest_arrival(), stamp);
    EXPECT_GE(link.client->newest_arrival() - stamp,
              static_cast<std::uint64_t>(std::chrono::nanoseconds(50ms).count()));
  }
}

TEST(tls_backend_test, a_plain_tcp_stream_keeps_the_receive_stamp_of_what_it_read) {
  socket_pair sockets(socket_pair::kind::loopback_tcp);
  ASSERT_TRUE(enable_receive_stamps(sockets.client()));
  ASSERT_TRUE(packets_come_stamped());
  syscall_counter calls;
  const auto stream = make_tcp_stream(sockets.client(), &calls);
  EXPECT_EQ(stream->newest_arrival(), 0u);
  const std::vector<std::uint8_t> answer = answer_to(framed_query());
  ASSERT_EQ(::send(sockets.server(), answer.data(), answer.size(), 0),
            static_cast<ssize_t>(answer.size()));
  std::this_thread::sleep_for(50ms);
  std::vector<std::uint8_t> buffer(4096);
  std::size_t transferred = 0;
  ASSERT_EQ(stream->read(buffer, transferred), stream_io::done);
  EXPECT_EQ(transferred, answer.size());
  EXPECT_EQ(calls.calls, 1u);
  const std::uint64_t stamp = stream->newest_arrival();
  ASSERT_NE(stamp, 0u);
  EXPECT_GE(age_of(stamp), 45ms);
  EXPECT_LT(age_of(stamp), time_limit);
  // Without stamps on the socket there are none.
  socket_pair unstamped(socket_pair::kind::loopback_tcp);
  const auto plain = make_tcp_stream(unstamped.client());
  ASSERT_EQ(::send(unstamped.server(), answer.data(), answer.size(), 0),
            static_cast<ssize_t>(answer.size()));
  pollfd wait{unstamped.client(), POLLIN, 0};
  ASSERT_EQ(::poll(&wait, 1, 5000), 1);
  ASSERT_EQ(plain->read(buffer, transferred), stream_io::done);
  EXPECT_EQ(plain->newest_arrival(), 0u);
}

TEST(tls_backend_test, ticket_resumes_the_session) {
  for (const combination& c : combinations()) {
    for (const tls_version version : versions) {
      SCOPED_TRACE(describe(c) + ", TLS " + std::string(tls_version_name(version)));
      tls_client_options client = client_options(c.client);
      client.resume = true;
      client.min_version = client.max_version = version;
      const auto client_context = make_tls_client_context(client);
      const auto server_context = make_tls_server_context(server_options(c.server));

      std::unique_ptr<tls_ticket> ticket;
      {
        connection first(*client_context, *server_context);
        ASSERT_EQ(first.handshake().client, tls_io::done);
        exchange(*first.client, *first.server, first.sockets);
        EXPECT_FALSE(first.client->resumed());
        ticket = first.client->ticket();
        ASSERT_NE(ticket, nullptr);
      }

      connection second(*client_context, *server_context, ticket.get());
      const handshake_outcome outcome = second.handshake();
      ASSERT_EQ(outcome.client, tls_io::done) << second.client->error_message();
      ASSERT_EQ(outcome.server, tls_io::done) << second.server->error_message();
      EXPECT_TRUE(second.client->resumed());
      EXPECT_TRUE(second.server->resumed());
      EXPECT_EQ(second.client->version(), version_string(version));
      exchange(*second.client, *second.server, second.sockets);

      connection fresh(*client_context, *server_context);
      ASSERT_EQ(fresh.handshake().client, tls_io::done);
      EXPECT_FALSE(fresh.client->resumed());
      EXPECT_FALSE(fresh.server->resumed());
    }
  }
}

// dnsdist, and unbound with tls-session-ticket-keys, issue no new ticket on a resumed
// handshake: the client must offer the ticket it has again, with either backend.
TEST(tls_backend_test, a_ticket_the_server_does_not_renew_resumes_again) {
  for (const tls_backend client_backend : available_tls_backends()) {
    for (const tls_version version : versions) {
      SCOPED_TRACE(std::string(tls_backend_name(client_backend)) + " client, TLS " +
                   std::string(tls_version_name(version)));
      tls_client_options client = client_options(client_backend);
      client.resume = true;
      client.min_version = client.max_version = version;
      const auto client_context = make_tls_client_context(client);
      tls_server_options server = server_options(tls_backend::openssl);
      server.renew_tickets = false;
      const auto server_context = make_tls_server_context(server);

      std::unique_ptr<tls_ticket> ticket;
      {
        connection first(*client_context, *server_context);
        ASSERT_EQ(first.handshake().client, tls_io::done);
        exchange(*first.client, *first.server, first.sockets);
        ticket = first.client->ticket();
        ASSERT_NE(ticket, nullptr);
      }
      for (int i = 0; i < 3; ++i) {
        SCOPED_TRACE("resumption " + std::to_string(i + 1));
        connection again(*client_context, *server_context, ticket.get());
        const handshake_outcome outcome = again.handshake();
        ASSERT_EQ(outcome.client, tls_io::done) << again.client->error_message();
        exchange(*again.client, *again.server, again.sockets);
        EXPECT_TRUE(again.client->resumed());
        EXPECT_TRUE(again.server->resumed());
        // Half the connections end with close_notify, half without, as runs do.
        if (i % 2 == 0) again.client->shutdown();
        if (auto renewed = again.client->ticket()) ticket = std::move(renewed);
      }
    }
  }
}

TEST(tls_backend_test, the_gnutls_server_refuses_to_keep_tickets) {
#if defined(DNSTRANSPORT_HAVE_GNUTLS)
  tls_server_options server = server_options(tls_backend::gnutls);
  server.renew_tickets = false;
  try {
    make_tls_server_context(server);
    ADD_FAILURE() << "no error";
  } catch (const setup_error& e) {
    EXPECT_NE(std::string(e.what()).find("openssl"), std::string::npos) << e.what();
  }
#else
  GTEST_SKIP() << "this build has no GnuTLS";
#endif
}

TEST(tls_backend_test, no_resumption_when_either_side_turns_it_off) {
  for (const combination& c : combinations()) {
    for (const tls_version version : versions) {
      SCOPED_TRACE(describe(c) + ", TLS " + std::string(tls_version_name(version)));
      tls_client_options client = client_options(c.client);
      client.min_version = client.max_version = version;
      client.resume = true;
      tls_server_options server = server_options(c.server);
      server.session_tickets = false;
      const auto resuming_client = make_tls_client_context(client);
      client.resume = false;
      const auto plain_client = make_tls_client_context(client);
      const auto server_context = make_tls_server_context(server_options(c.server));
      const auto ticketless_server = make_tls_server_context(server);

      // A client that does not resume hands out no ticket and ignores one it is given.
      std::unique_ptr<tls_ticket> ticket;
      {
        connection first(*resuming_client, *server_context);
        ASSERT_EQ(first.handshake().client, tls_io::done);
        exchange(*first.client, *first.server, first.sockets);
        ticket = first.client->ticket();
        ASSERT_NE(ticket, nullptr);

        connection plain(*plain_client, *server_context);
        ASSERT_EQ(plain.handshake().client, tls_io::done);
        exchange(*plain.client, *plain.server, plain.sockets);
        EXPECT_EQ(plain.client->ticket(), nullptr);
      }
      connection ignored(*plain_client, *server_context, ticket.get());
      ASSERT_EQ(ignored.handshake().client, tls_io::done);
      EXPECT_FALSE(ignored.client->resumed());

      // A server without tickets resumes nothing, whatever the client kept.
      connection first(*resuming_client, *ticketless_server);
      ASSERT_EQ(first.handshake().client, tls_io::done);
      exchange(*first.client, *first.server, first.sockets);
      const std::unique_ptr<tls_ticket> kept = first.client->ticket();
      connection second(*resuming_client, *ticketless_server, kept.get());
      const handshake_outcome outcome = second.handshake();
      ASSERT_EQ(outcome.client, tls_io::done) << second.client->error_message();
      EXPECT_FALSE(second.client->resumed());
      EXPECT_FALSE(second.server->resumed());
    }
  }
}

TEST(tls_backend_test, verification_accepts_the_right_ca_and_name) {
  for (const combination& c : combinations()) {
    for (const std::string name : {"localhost", "127.0.0.1"}) {
      SCOPED_TRACE(describe(c) + ", name " + name);
      tls_client_options client = client_options(c.client);
      client.verify = true;
      client.ca_file = certificates::server().certificate_file;
      client.server_name = name;
      const auto client_context = make_tls_client_context(client);
      const auto server_context = make_tls_server_context(server_options(c.server));
      connection link(*client_context, *server_context);
      const handshake_outcome outcome = link.handshake();
      ASSERT_EQ(outcome.client, tls_io::done) << link.client->error_message();
      ASSERT_EQ(outcome.server, tls_io::done) << link.server->error_message();
    }
  }
}

TEST(tls_backend_test, listener_selects_its_most_preferred_protocol_the_client_offers) {
  struct offer {
    std::vector<std::string> client;
    std::vector<std::string> server;
    std::string selected;
  };
  const offer offers[] = {
      {{"h2"}, {"h2"}, "h2"},
      {{"dot", "h2"}, {"h2", "dot"}, "h2"},
      {{"h2", "dot"}, {"dot"}, "dot"},
      {{"http/1.1"}, {"h2"}, ""},
      {{}, {"h2"}, ""},
  };
  for (const combination& c : combinations()) {
    for (const offer& o : offers) {
      SCOPED_TRACE(describe(c) + ", expecting \"" + o.selected + "\"");
      tls_client_options client = client_options(c.client);
      client.alpn = o.client;
      tls_server_options server = server_options(c.server);
      server.alpn = o.server;
      const auto client_context = make_tls_client_context(client);
      const auto server_context = make_tls_server_context(server);
      connection link(*client_context, *server_context);
      const handshake_outcome outcome = link.handshake();
      ASSERT_EQ(outcome.client, tls_io::done) << link.client->error_message();
      ASSERT_EQ(outcome.server, tls_io::done) << link.server->error_message();
      EXPECT_EQ(link.client->alpn(), o.selected);
      EXPECT_EQ(link.server->alpn(), o.selected);
    }
  }
}

TEST(tls_backend_test, verification_rejects_a_wrong_ca_or_name) {
  struct variant {
    const char* what;
    std::filesystem::path ca_file;
    std::string server_name;
  };
  const std::array<variant, 3> variants{
      variant{"wrong CA", certificates::other().certificate_file, "localhost"},
      variant{"wrong name", certificates::server().certificate_file, "dns.example"},
      variant{"wrong address", certificates::server().certificate_file, "127.0.0.2"}};
  for (const combination& c : combinations()) {
    for (const variant& v : variants) {
      SCOPED_TRACE(describe(c) + ", " + v.what);
      tls_client_options client = client_options(c.client);
      client.verify = true;
      client.ca_file = v.ca_file;
      client.server_name = v.server_name;
      const auto client_context = make_tls_client_context(client);
      const auto server_context = make_tls_server_context(server_options(c.server));
      connection link(*client_context, *server_context);
      const handshake_outcome outcome = link.handshake();
      ASSERT_EQ(outcome.client, tls_io::error);
      EXPECT_EQ(link.client->failure(), tls_failure::certificate);
      EXPECT_FALSE(link.client->error_message().empty());
      // The server learns of the rejection from the client's alert. A TLS 1.3 OpenSSL client
      // sends that alert unencrypted (its handshake keys are not in use yet); OpenSSL
      // servers accept that, GnuTLS fails to decrypt it and can only report "other".
      EXPECT_NE(outcome.server, tls_io::done);
      if (outcome.server == tls_io::error) {
        const bool plaintext_alert =
            c.client == tls_backend::openssl && c.server == tls_backend::gnutls;
        EXPECT_EQ(link.server->failure(),
                  plaintext_alert ? tls_failure::other : tls_failure::certificate)
            << link.server->error_message();
      }
    }
  }
}

TEST(tls_backend_test, no_common_version_is_a_protocol_version_failure) {
  struct variant {
    tls_version client;
    tls_version server;
  };
  for (const combination& c : combinations()) {
    for (const variant v : {variant{tls_version::v1_3, tls_version::v1_2},
                            variant{tls_version::v1_2, tls_version::v1_3}}) {
      SCOPED_TRACE(describe(c) + ", client TLS " + std::string(tls_version_name(v.client)) +
                   " only, server TLS " + std::string(tls_version_name(v.server)) + " only");
      tls_client_options client = client_options(c.client);
      client.min_version = client.max_version = v.client;
      tls_server_options server = server_options(c.server);
      server.min_version = server.max_version = v.server;
      const auto client_context = make_tls_client_context(client);
      const auto server_context = make_tls_server_context(server);
      connection link(*client_context, *server_context);
      const handshake_outcome outcome = link.handshake();
      ASSERT_EQ(outcome.client, tls_io::error);
      ASSERT_EQ(outcome.server, tls_io::error);
      EXPECT_EQ(link.client->failure(), tls_failure::protocol_version)
          << link.client->error_message();
      EXPECT_EQ(link.server->failure(), tls_failure::protocol_version)
          << link.server->error_message();
    }
  }
}

TEST(tls_backend_test, plain_dns_peer_is_not_tls) {
  for (const tls_backend backend : available_tls_backends()) {
    SCOPED_TRACE(std::string(tls_backend_name(backend)));
    {
      // A server that answers a ClientHello with DNS over plain TCP.
      const auto client_context = make_tls_client_context(client_options(backend));
      socket_pair sockets;
      const auto client = client_context->connect(sockets.client(), nullptr);
      EXPECT_EQ(handshake_against_raw_peer(*client, sockets.client(), sockets.server(),
                                           answer_to(framed_query())),
                tls_io::error);
      EXPECT_EQ(client->failure(), tls_failure::not_tls) << client->error_message();
      EXPECT_FALSE(client->error_message().empty());
    }
    {
      // A client that sends DNS over plain TCP to the TLS port.
      const auto server_context = make_tls_server_context(server_options(backend));
      socket_pair sockets;
      const auto server = server_context->accept(sockets.server());
      EXPECT_EQ(
          handshake_against_raw_peer(*server, sockets.server(), sockets.client(), framed_query()),
          tls_io::error);
      EXPECT_EQ(server->failure(), tls_failure::not_tls) << server->error_message();
    }
  }
}

// The alert's description byte is the peer's choice: an assigned certificate alert is a
// certificate failure, an unassigned one (151, found by fuzz_tls) a plain alert failure
// whose message carries the number.
TEST(tls_backend_test, fatal_alert_in_answer_to_the_hello_names_it) {
  struct alert_case {
    std::uint8_t description;
    tls_failure failure;
    const char* message;
  };
  const std::array<alert_case, 3> cases{{
      {45, tls_failure::certificate, "xpired"},
      {70, tls_failure::protocol_version, ""},
      {151, tls_failure::handshake_alert, "151"},
  }};
  for (const tls_backend backend : available_tls_backends()) {
    for (const alert_case& c : cases) {
      SCOPED_TRACE(fmt::format("{}, alert {}", tls_backend_name(backend), c.description));
      const auto client_context = make_tls_client_context(client_options(backend));
      socket_pair sockets;
      const auto client = client_context->connect(sockets.client(), nullptr);
      const std::vector<std::uint8_t> alert{0x15, 0x03, 0x03, 0x00, 0x02, 0x02, c.description};
      EXPECT_EQ(handshake_against_raw_peer(*client, sockets.client(), sockets.server(), alert),
                tls_io::error);
      EXPECT_EQ(client->failure(), c.failure) << client->error_message();
      EXPECT_NE(client->error_message().find(c.message), std::string::npos)
          << client->error_message();
    }
  }
}

// SSLv2-style record headers (found by fuzz_tls) and then the peer's EOF: the server's
// handshake ends, rather than asking for more reads of a socket that has nothing left.
TEST(tls_backend_test, server_handshake_ends_at_eof_after_sslv2_style_records) {
  // Three and four of them (GnuTLS takes one per call, asking for more each time).
  const std::vector<std::vector<std::uint8_t>> inputs{
      {0x80, 0x03, 0x91, 0x00, 0x5d, 0x80, 0x03, 0x91, 0x00, 0x5d, 0x80, 0x03, 0x91, 0x00, 0x00,
       0x40},
      {0x80, 0x03, 0x91, 0x00, 0x5d, 0x80, 0x03, 0x91, 0x00, 0x5d, 0x80, 0x03, 0x91,
       0x00, 0x5d, 0x80, 0x03, 0x91, 0x00, 0x5d, 0x37, 0x91, 0x00, 0x00, 0x40}};
  for (const tls_backend backend : available_tls_backends()) {
    for (const std::vector<std::uint8_t>& records : inputs) {
      SCOPED_TRACE(fmt::format("{}, {} octets", tls_backend_name(backend), records.size()));
      tls_server_options options = server_options(backend);
      options.min_version = options.max_version = tls_version::v1_2;
      const auto server_context = make_tls_server_context(options);
      socket_pair sockets;
      const auto server = server_context->accept(sockets.server());
      ASSERT_EQ(::write(sockets.client(), records.data(), records.size()),
                static_cast<ssize_t>(records.size()));
      sockets.hang_up_client();
      int steps = 0;
      tls_io result = tls_io::want_read;
      while ((result == tls_io::want_read || result == tls_io::want_write) && steps < 20) {
        result = server->handshake();
        ++steps;
      }
      EXPECT_TRUE(result == tls_io::closed || result == tls_io::error)
          << ::testing::PrintToString(result) << " after " << steps << " steps";
      // Input and EOF were there from the start: no call may ask to wait for more.
      EXPECT_EQ(steps, 1);
    }
  }
}

TEST(tls_backend_test, peer_hanging_up_mid_handshake_ends_it) {
  const std::set<tls_io> endings{tls_io::closed, tls_io::error};
  const std::set<tls_failure> failures{tls_failure::none, tls_failure::reset};
  for (const tls_backend backend : available_tls_backends()) {
    SCOPED_TRACE(std::string(tls_backend_name(backend)));
    {
      // The server reads the ClientHello and goes away.
      const auto client_context = make_tls_client_context(client_options(backend));
      socket_pair sockets;
      const auto client = client_context->connect(sockets.client(), nullptr);
      ASSERT_EQ(client->handshake(), tls_io::want_read);
      std::array<std::uint8_t, 4096> hello{};
      ASSERT_GT(::read(sockets.server(), hello.data(), hello.size()), 0);
      sockets.hang_up_server();
      const tls_io result = drive(sockets.client(), [&] { return client->handshake(); });
      EXPECT_TRUE(endings.contains(result)) << ::testing::PrintToString(result);
      EXPECT_TRUE(failures.contains(client->failure())) << client->error_message();
    }
    {
      // The client sends half a ClientHello and goes away.
      const auto client_context = make_tls_client_context(client_options(backend));
      const auto server_context = make_tls_server_context(server_options(backend));
      socket_pair first;
      const auto client = client_context->connect(first.client(), nullptr);
      ASSERT_EQ(client->handshake(), tls_io::want_read);
      std::array<std::uint8_t, 4096> hello{};
      const ssize_t size = ::read(first.server(), hello.data(), hello.size());
      ASSERT_GT(size, 10);

      socket_pair second;
      const auto server = server_context->accept(second.server());
      ASSERT_EQ(::write(second.client(), hello.data(), size / 2), size / 2);
      ASSERT_EQ(server->handshake(), tls_io::want_read);
      second.hang_up_client();
      const tls_io result = drive(second.server(), [&] { return server->handshake(); });
      EXPECT_TRUE(endings.contains(result)) << ::testing::PrintToString(result);
      EXPECT_TRUE(failures.contains(server->failure())) << server->error_message();
    }
  }
}

TEST(tls_backend_test, peer_reset_is_a_reset_failure) {
  for (const tls_backend backend : available_tls_backends()) {
    SCOPED_TRACE(std::string(tls_backend_name(backend)));
    const auto client_context = make_tls_client_context(client_options(backend));
    socket_pair sockets;
    const auto client = client_context->connect(sockets.client(), nullptr);
    ASSERT_EQ(client->handshake(), tls_io::want_read);
    sockets.reset_server();
    EXPECT_EQ(drive(sockets.client(), [&] { return client->handshake(); }), tls_io::error);
    EXPECT_EQ(client->failure(), tls_failure::reset) << client->error_message();
    EXPECT_FALSE(client->error_message().empty());
  }
}

TEST(tls_backend_test, shutdown_reads_as_closed_at_the_peer) {
  for (const combination& c : combinations()) {
    for (const tls_version version : versions) {
      for (const bool client_closes : {true, false}) {
        SCOPED_TRACE(describe(c) + ", TLS " + std::string(tls_version_name(version)) +
                     (client_closes ? ", client closes" : ", server closes"));
        tls_client_options client = client_options(c.client);
        client.min_version = client.max_version = version;
        const auto client_context = make_tls_client_context(client);
        const auto server_context = make_tls_server_context(server_options(c.server));
        connection link(*client_context, *server_context);
        ASSERT_EQ(link.handshake().client, tls_io::done);
        exchange(*link.client, *link.server, link.sockets);

        tls_connection& closer = client_closes ? *link.client : *link.server;
        tls_connection& peer = client_closes ? *link.server : *link.client;
        const int closer_fd = client_closes ? link.sockets.client() : link.sockets.server();
        const int peer_fd = client_closes ? link.sockets.server() : link.sockets.client();
        EXPECT_EQ(drive(closer_fd, [&] { return closer.shutdown(); }), tls_io::done)
            << closer.error_message();
        std::array<std::uint8_t, 64> buffer{};
        std::size_t transferred = 0;
        EXPECT_EQ(
            drive(peer_fd, [&] { return peer.read(buffer.data(), buffer.size(), transferred); }),
            tls_io::closed)
            << peer.error_message();
        EXPECT_EQ(transferred, 0u);
        // Answering close_notify is still allowed.
        EXPECT_EQ(drive(peer_fd, [&] { return peer.shutdown(); }), tls_io::done)
            << peer.error_message();
      }
    }
  }
}

TEST(tls_backend_test, server_accepts_clients_with_other_or_no_alpn) {
  for (const combination& c : combinations()) {
    for (const std::vector<std::string>& alpn :
         {std::vector<std::string>{}, std::vector<std::string>{"h2"},
          std::vector<std::string>{"h2", "dot"}}) {
      SCOPED_TRACE(describe(c) + ", " + std::to_string(alpn.size()) + " ALPN protocols");
      tls_client_options client = client_options(c.client);
      client.alpn = alpn;
      const auto client_context = make_tls_client_context(client);
      const auto server_context = make_tls_server_context(server_options(c.server));
      connection link(*client_context, *server_context);
      const handshake_outcome outcome = link.handshake();
      ASSERT_EQ(outcome.client, tls_io::done) << link.client->error_message();
      ASSERT_EQ(outcome.server, tls_io::done) << link.server->error_message();
      // The default listener selects only "dot".
      const std::string expected = alpn.size() == 2 ? "dot" : "";
      EXPECT_EQ(link.client->alpn(), expected);
      EXPECT_EQ(link.server->alpn(), expected);
    }
  }
}

// Runs `make` and checks that it throws setup_error whose message contains `needle`.
void expect_setup_error(const std::function<void()>& make, const std::string& needle) {
  try {
    make();
    ADD_FAILURE() << "no setup_error; expected one mentioning " << needle;
  } catch (const setup_error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(tls_backend_test, bad_files_are_setup_errors_naming_the_file) {
  const std::string missing = (certificates::directory() / "missing.pem").string();
  for (const tls_backend backend : available_tls_backends()) {
    SCOPED_TRACE(std::string(tls_backend_name(backend)));
    tls_client_options client = client_options(backend);
    client.verify = true;
    client.ca_file = missing;
    expect_setup_error([&] { make_tls_client_context(client); }, missing);

    tls_server_options server = server_options(backend);
    server.certificate_file = missing;
    expect_setup_error([&] { make_tls_server_context(server); }, missing);

    server = server_options(backend);
    server.key_file = missing;
    expect_setup_error([&] { make_tls_server_context(server); }, missing);

    server = server_options(backend);
    server.key_file = certificates::other().key_file;
    expect_setup_error([&] { make_tls_server_context(server); }, server.key_file.string());
  }
}

TEST(tls_backend_test, bad_options_are_setup_errors) {
  for (const tls_backend backend : available_tls_backends()) {
    SCOPED_TRACE(std::string(tls_backend_name(backend)));
    tls_client_options client = client_options(backend);
    client.priority = "NO-SUCH-CIPHER";
    expect_setup_error([&] { make_tls_client_context(client); }, "NO-SUCH-CIPHER");

    tls_server_options server = server_options(backend);
    server.priority = "NO-SUCH-CIPHER";
    expect_setup_error([&] { make_tls_server_context(server); }, "NO-SUCH-CIPHER");

    client = client_options(backend);
    client.min_version = tls_version::v1_3;
    client.max_version = tls_version::v1_2;
    expect_setup_error([&] { make_tls_client_context(client); }, "minimum version");

    client = client_options(backend);
    client.alpn = {""};
    expect_setup_error([&] { make_tls_client_context(client); }, "ALPN");

    server = server_options(backend);
    server.certificate_file.clear();
    expect_setup_error([&] { make_tls_server_context(server); }, "certificate file");
  }
}

TEST(tls_backend_test, valid_priority_strings_are_accepted) {
  for (const combination& c : combinations()) {
    SCOPED_TRACE(describe(c));
    tls_client_options client = client_options(c.client);
    tls_server_options server = server_options(c.server);
    if (c.client == tls_backend::openssl) {
      client.priority = "ECDHE+AESGCM:TLS_AES_256_GCM_SHA384";
    } else {
      client.priority = "NORMAL:-AES-128-GCM";
    }
    const auto client_context = make_tls_client_context(client);
    const auto server_context = make_tls_server_context(server);
    connection link(*client_context, *server_context);
    const handshake_outcome outcome = link.handshake();
    ASSERT_EQ(outcome.client, tls_io::done) << link.client->error_message();
  }
}

}  // namespace
}  // namespace dnstransport::detail
