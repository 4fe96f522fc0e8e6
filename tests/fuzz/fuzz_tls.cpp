// TLS sessions of both backends (OpenSSL and GnuTLS, chosen per input as at run time), client
// side and server side, over in-memory transports: each session works on one end of a
// non-blocking AF_UNIX socket pair and the fuzzer owns the other end.
//
// Input: octet 0 chooses the case, the rest is its data.
//   bit 0     backend of the session under test (raw) or of the client (relay)
//   bit 1     raw: 0 client side, 1 server side; relay: backend of the server
//   bit 2     0 raw, 1 relay
//   bits 3-4  TLS versions the session(s) allow: any, 1.2 only, 1.3 only, any
// raw:   octet 1 chooses how the peer's bytes are cut into writes (as in fuzz_frame_reader);
//        every following octet is what the peer sends: records and handshake messages from
//        the fuzzer, against the session's handshake and then its reads.
// relay: a real client and a real server talk through the harness, which applies edits
//        taken from the data (4 octets each: direction and kind, 16-bit stream offset, value)
//        to the bytes in flight: flip, insert or delete an octet, or end the stream there.
//        This reaches the states after the handshake (tickets, application data, alerts,
//        close_notify) with records the fuzzer has corrupted.
// Properties: every step ends (no session waits for bytes after the peer's EOF, no busy
// loop); an error names its kind and message and stays final; a read never reports more
// than it was given room for; a relay without edits completes both handshakes and carries
// the query and the answer intact; with edits, what either side reads is always a prefix of
// what the other side wrote (a corrupted record is an error, never different data).
//
// Seeds: FUZZ_TLS_WRITE_SEEDS=DIR fuzz_tls writes the bytes of real loopback handshakes
// (both backends, every version choice) as seeds into DIR and exits; tests/fuzz/corpus/tls
// holds them.

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include <dnstransport/tls.hpp>

#include "fuzz_check.hpp"
#include "transport/tls/tls_backend.hpp"

namespace {

using namespace dnstransport;
using namespace dnstransport::detail;
using bytes = std::vector<std::uint8_t>;

constexpr int max_steps = 20000;  // far above any real exchange; more is a busy loop

std::filesystem::path certificate_directory;
certificate_files certificate;

void remove_certificates() {
  std::error_code ignored;
  std::filesystem::remove_all(certificate_directory, ignored);
}

void make_certificates() {
  if (!certificate_directory.empty()) return;
  certificate_directory = std::filesystem::temp_directory_path() /
                          ("dnstransport-fuzz-tls-" + std::to_string(::getpid()));
  certificate = generate_self_signed_certificate(certificate_directory, "fuzz.test");
  std::atexit(remove_certificates);
  std::signal(SIGPIPE, SIG_IGN);
}

void set_versions(unsigned choice, std::optional<tls_version>& min,
                  std::optional<tls_version>& max) {
  if (choice == 1) min = max = tls_version::v1_2;
  if (choice == 2) min = max = tls_version::v1_3;
}

// Contexts are made once per choice and reused, as a run does for all its connections.
tls_client_context& client_context(tls_backend backend, unsigned versions) {
  static std::map<std::pair<tls_backend, unsigned>, std::unique_ptr<tls_client_context>> made;
  auto& context = made[{backend, versions}];
  if (!context) {
    tls_client_options options;
    options.backend = backend;
    options.server_name = "fuzz.test";
    options.resume = true;
    set_versions(versions, options.min_version, options.max_version);
    context = make_tls_client_context(options);
  }
  return *context;
}

tls_server_context& server_context(tls_backend backend, unsigned versions) {
  static std::map<std::pair<tls_backend, unsigned>, std::unique_ptr<tls_server_context>> made;
  auto& context = made[{backend, versions}];
  if (!context) {
    make_certificates();
    tls_server_options options;
    options.backend = backend;
    options.certificate_file = certificate.certificate_file;
    options.key_file = certificate.key_file;
    set_versions(versions, options.min_version, options.max_version);
    context = make_tls_server_context(options);
  }
  return *context;
}

class socket_pair {
 public:
  socket_pair() {
    FUZZ_CHECK(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds_.data()) ==
               0);
  }
  ~socket_pair() {
    ::close(fds_[0]);
    ::close(fds_[1]);
  }
  socket_pair(const socket_pair&) = delete;
  socket_pair& operator=(const socket_pair&) = delete;
  int session() const { return fds_[0]; }
  int peer() const { return fds_[1]; }

 private:
  std::array<int, 2> fds_{-1, -1};
};

// Everything the session has written so far.
bytes take_output(int peer) {
  bytes out;
  std::uint8_t buffer[16384];
  for (;;) {
    const ssize_t n = ::read(peer, buffer, sizeof buffer);
    if (n <= 0) return out;
    out.insert(out.end(), buffer, buffer + n);
  }
}

// Writes as much of `data` as the socket takes; returns how much.
std::size_t give_input(int peer, std::span<const std::uint8_t> data) {
  if (data.empty()) return 0;
  const ssize_t n = ::write(peer, data.data(), data.size());
  return n > 0 ? static_cast<std::size_t>(n) : 0;
}

void check_step(tls_connection& session, tls_io io) {
  FUZZ_CHECK(io == tls_io::done || io == tls_io::want_read || io == tls_io::want_write ||
             io == tls_io::closed || io == tls_io::error);
  if (io == tls_io::error) {
    FUZZ_CHECK(session.failure() != tls_failure::none);
    FUZZ_CHECK(!session.error_message().empty());
    std::size_t n = 1;
    std::uint8_t byte = 0;
    FUZZ_CHECK(session.handshake() == tls_io::error);
    FUZZ_CHECK(session.read(&byte, 1, n) == tls_io::error && n == 0);
    FUZZ_CHECK(session.write(&byte, 1, n) == tls_io::error && n == 0);
  }
}

// The session under test against a peer whose bytes are the input.
void run_raw(tls_connection& session, const socket_pair& pair, std::span<const std::uint8_t> input,
             chunker chunks) {
  std::size_t given = 0;
  bool eof = false;
  int waits_after_eof = 0;
  bool established = false;
  std::uint8_t buffer[4096];
  for (int step = 0;; ++step) {
    FUZZ_CHECK(step < max_steps);
    std::size_t n = 0;
    const tls_io io = established ? session.read(buffer, sizeof buffer, n) : session.handshake();
    check_step(session, io);
    take_output(pair.peer());
    if (io == tls_io::error || io == tls_io::closed) return;
    if (io == tls_io::done) {
      if (established) FUZZ_CHECK(n > 0 && n <= sizeof buffer);
      if (!established) {
        established = true;
        // A query goes out as soon as the handshake is done, as the stream client does.
        static constexpr std::uint8_t query[] = {0, 12, 0x12, 0x34, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0};
        std::size_t written = 0;
        check_step(session, session.write(query, sizeof query, written));
        FUZZ_CHECK(written <= sizeof query);
        (void)session.ticket();
        (void)session.version();
      }
      continue;
    }
    if (io == tls_io::want_write) continue;  // the output was just taken: room again
    // want_read: the peer sends its next piece, then its EOF; after that the session must end.
    if (given < input.size()) {
      const std::size_t size = std::min(chunks.next(), input.size() - given);
      given += give_input(pair.peer(), input.subspan(given, size));
    } else if (!eof) {
      ::shutdown(pair.peer(), SHUT_WR);
      eof = true;
    } else {
      FUZZ_CHECK(++waits_after_eof < 3);
    }
  }
}

// One direction of the relay: the edits to apply to its bytes, by offset in the original
// stream.
struct edit {
  unsigned kind;  // 0 flip, 1 insert, 2 delete, 3 end of stream
  std::size_t offset;
  std::uint8_t value;
};

class direction {
 public:
  explicit direction(std::vector<edit> edits) : edits_(std::move(edits)) {
    std::stable_sort(edits_.begin(), edits_.end(),
                     [](const edit& a, const edit& b) { return a.offset < b.offset; });
  }

  // Passes what `from` wrote to `to`, edited; returns true when any byte moved.
  bool pass(int from, int to) {
    for (const std::uint8_t byte : take_output(from)) {
      std::uint8_t out = byte;
      bool drop = false;
      for (; next_ < edits_.size() && edits_[next_].offset == offset_; ++next_) {
        const edit& e = edits_[next_];
        if (e.kind == 0) out ^= e.value | 1;
        if (e.kind == 1 && !ended_) pending_.push_back(e.value);
        if (e.kind == 2) drop = true;
        if (e.kind == 3) ended_ = true;
      }
      ++offset_;
      if (!ended_ && !drop) pending_.push_back(out);
    }
    const std::size_t n = give_input(to, pending_);
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(n));
    if (ended_ && pending_.empty() && !shut_) {
      ::shutdown(to, SHUT_WR);
      shut_ = true;
    }
    return n > 0;
  }

  void end(int to) {
    if (!shut_) ::shutdown(to, SHUT_WR);
    shut_ = ended_ = true;
  }

 private:
  std::vector<edit> edits_;
  std::size_t next_ = 0;
  std::size_t offset_ = 0;
  bytes pending_;
  bool ended_ = false;
  bool shut_ = false;
};

// One side of the relay: handshake, then write what it has to say and read what it expects.
struct side {
  std::unique_ptr<tls_connection> session;
  bytes to_send;
  std::size_t expect = 0;  // octets it waits for before it sends (server) or ends (client)
  bool sends_first = false;
  bytes received;
  std::size_t sent = 0;
  bool established = false;
  bool finished = false;  // ended, by its own close_notify, the peer's, or an error
  bool failed = false;

  // One step; returns true when it did something other than wait.
  bool step() {
    if (finished) return false;
    tls_io io;
    std::size_t n = 0;
    if (!established) {
      io = session->handshake();
      if (io == tls_io::done) established = true;
    } else if (sent < to_send.size() && (sends_first || received.size() >= expect)) {
      io = session->write(to_send.data() + sent, to_send.size() - sent, n);
      FUZZ_CHECK(n <= to_send.size() - sent);
      sent += n;
    } else if (received.size() >= expect && sent == to_send.size()) {
      io = session->shutdown();
      if (io == tls_io::done) finished = true;
    } else {
      std::uint8_t buffer[512];
      io = session->read(buffer, sizeof buffer, n);
      if (io == tls_io::done) {
        FUZZ_CHECK(n > 0 && n <= sizeof buffer);
        received.insert(received.end(), buffer, buffer + n);
        (void)session->ticket();
      }
    }
    check_step(*session, io);
    if (io == tls_io::error) failed = true;
    if (io == tls_io::error || io == tls_io::closed) finished = true;
    return io == tls_io::done || finished;
  }
};

bool is_prefix(const bytes& got, const bytes& of) {
  return got.size() <= of.size() && std::equal(got.begin(), got.end(), of.begin());
}

void run_relay(tls_backend client_backend, tls_backend server_backend, unsigned versions,
               std::span<const std::uint8_t> data) {
  std::vector<edit> to_server, to_client;
  for (std::size_t i = 0; i + 4 <= data.size(); i += 4) {
    const edit e{data[i] & 3u, std::size_t{data[i + 1]} << 8 | data[i + 2], data[i + 3]};
    ((data[i] & 0x80) != 0 ? to_client : to_server).push_back(e);
  }
  const bool edited = !to_server.empty() || !to_client.empty();
  direction c2s(std::move(to_server)), s2c(std::move(to_client));

  socket_pair client_pair, server_pair;
  side client, server;
  client.session = client_context(client_backend, versions).connect(client_pair.session(), nullptr);
  server.session = server_context(server_backend, versions).accept(server_pair.session());
  // A DNS query over TLS and its answer, framed; the client speaks first.
  client.to_send = {0,   29,  0xab, 0xcd, 1,   0,   0,   1,   0, 0, 0, 0, 0, 0, 4, 'f',
                    'u', 'z', 'z',  4,    't', 'e', 's', 't', 0, 0, 1, 0, 1, 0, 0};
  client.sends_first = true;
  server.to_send = client.to_send;
  server.to_send[4] = 0x81;
  server.to_send[5] = 0x80;
  server.expect = client.to_send.size();
  client.expect = server.to_send.size();

  bool eof = false;
  int idle = 0;
  for (int step = 0;; ++step) {
    FUZZ_CHECK(step < max_steps);
    bool moved = client.step();
    moved |= server.step();
    moved |= c2s.pass(client_pair.peer(), server_pair.peer());
    moved |= s2c.pass(server_pair.peer(), client_pair.peer());
    if (client.finished && server.finished) break;
    // A step can consume a record that completes nothing (a ticket, a partial record) and
    // ask for more: only a few rounds in a row without any movement mean nobody can go on.
    if (moved) {
      idle = 0;
      continue;
    }
    if (++idle < 3) continue;
    // Nobody can go on (a deleted octet leaves both waiting): both peers hang up, after
    // which every session must end within a few rounds.
    FUZZ_CHECK(edited || eof);
    FUZZ_CHECK(idle < 6);
    if (!eof) {
      c2s.end(server_pair.peer());
      s2c.end(client_pair.peer());
      eof = true;
      idle = 0;
    }
  }
  FUZZ_CHECK(is_prefix(server.received, client.to_send));
  FUZZ_CHECK(is_prefix(client.received, server.to_send));
  if (!edited) {
    FUZZ_CHECK(!client.failed && !server.failed);
    FUZZ_CHECK(server.received == client.to_send);
    FUZZ_CHECK(client.received == server.to_send);
  }
}

tls_backend backend_of(unsigned bit) {
  return bit != 0 ? tls_backend::gnutls : tls_backend::openssl;
}

struct relay_record {  // the bytes of a real handshake, each way
  bytes client_to_server;
  bytes server_to_client;
};

// Seeds: a real handshake recorded each way, replayed as the raw peer's bytes.
class recorder {
 public:
  explicit recorder(std::filesystem::path directory) : directory_(std::move(directory)) {
    std::filesystem::create_directories(directory_);
  }
  void write(const std::string& name, const bytes& data) {
    std::ofstream(directory_ / name, std::ios::binary)
        .write(reinterpret_cast<const char*>(data.data()),
               static_cast<std::streamsize>(data.size()));
  }

 private:
  std::filesystem::path directory_;
};

// Captures a real handshake each way by running both sessions over two socket pairs joined
// by a copy loop.
relay_record capture(tls_backend client_backend, tls_backend server_backend, unsigned versions) {
  socket_pair client_pair, server_pair;
  auto client = client_context(client_backend, versions).connect(client_pair.session(), nullptr);
  auto server = server_context(server_backend, versions).accept(server_pair.session());
  relay_record record;
  bool client_done = false, server_done = false;
  for (int step = 0; step < max_steps && !(client_done && server_done); ++step) {
    if (!client_done) client_done = client->handshake() == tls_io::done;
    if (!server_done) server_done = server->handshake() == tls_io::done;
    const bytes c2s = take_output(client_pair.peer());
    const bytes s2c = take_output(server_pair.peer());
    record.client_to_server.insert(record.client_to_server.end(), c2s.begin(), c2s.end());
    record.server_to_client.insert(record.server_to_client.end(), s2c.begin(), s2c.end());
    FUZZ_CHECK(give_input(server_pair.peer(), c2s) == c2s.size());
    FUZZ_CHECK(give_input(client_pair.peer(), s2c) == s2c.size());
  }
  FUZZ_CHECK(client_done && server_done);
  return record;
}

void write_seeds(const char* directory) {
  recorder out(directory);
  static const char* const version_names[] = {"any", "tls12", "tls13"};
  const char* const backend_names[] = {"openssl", "gnutls"};
  for (unsigned versions = 0; versions < 3; ++versions) {
    for (unsigned b = 0; b < 2; ++b) {
      const std::string suffix = std::string(backend_names[b]) + "-" + version_names[versions];
      // The session under test is backend b; its peer is the other backend's real bytes.
      const relay_record r = capture(backend_of(b), backend_of(b ^ 1), versions);
      bytes client = {static_cast<std::uint8_t>(b | versions << 3), 3};
      client.insert(client.end(), r.server_to_client.begin(), r.server_to_client.end());
      out.write("client-" + suffix, client);
      const relay_record s = capture(backend_of(b ^ 1), backend_of(b), versions);
      bytes server = {static_cast<std::uint8_t>(b | 2 | versions << 3), 3};
      server.insert(server.end(), s.client_to_server.begin(), s.client_to_server.end());
      out.write("server-" + suffix, server);
      // Relays: backend b as the client against either server, unedited and with one edit.
      for (unsigned sb = 0; sb < 2; ++sb) {
        const auto config = static_cast<std::uint8_t>(b | sb << 1 | 4 | versions << 3);
        const std::string name = std::string("relay-") + backend_names[b] + "-to-" +
                                 backend_names[sb] + "-" + version_names[versions];
        out.write(name, {config});
        out.write(name + "-flip-late", {config, 0x80, 0x03, 0x00, 0x40});
      }
    }
  }
  std::printf("fuzz_tls: seeds written to %s\n", directory);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  make_certificates();
  if (const char* directory = std::getenv("FUZZ_TLS_WRITE_SEEDS")) {
    write_seeds(directory);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const unsigned config = data[0];
  const unsigned versions = (config >> 3) & 3u;
  const std::span<const std::uint8_t> rest(data + 1, size - 1);
  if ((config & 4) != 0) {
    run_relay(backend_of(config & 1), backend_of(config & 2), versions == 3 ? 0 : versions, rest);
    return 0;
  }
  if (rest.empty()) return 0;
  const tls_backend backend = backend_of(config & 1);
  socket_pair pair;
  std::unique_ptr<tls_connection> session =
      (config & 2) != 0
          ? server_context(backend, versions == 3 ? 0 : versions).accept(pair.session())
          : client_context(backend, versions == 3 ? 0 : versions).connect(pair.session(), nullptr);
  run_raw(*session, pair, rest.subspan(1), chunker(rest[0], 2048));
  return 0;
}
