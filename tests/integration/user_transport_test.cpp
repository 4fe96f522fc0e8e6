// A transport of the program's own (user_transport.hpp), registered from outside the
// library through its public headers alone: "toy", DNS over TCP after a 4-octet greeting
// ("TOY1") that the client sends and the server checks, as a proxy in front of a server might
// want. The library's load, client, sweep, report and responder take it like a built-in one.
#include <dnstransport/user_transport.hpp>

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <dnstransport/client.hpp>
#include <dnstransport/error.hpp>
#include <dnstransport/load.hpp>
#include <dnstransport/message.hpp>
#include <dnstransport/report.hpp>
#include <dnstransport/server.hpp>
#include <dnstransport/sweep.hpp>

#include "cli_runs.hpp"
#include "scratch_dir.hpp"

namespace dnstransport {
namespace {

constexpr std::array<std::uint8_t, 4> toy_greeting{'T', 'O', 'Y', '1'};

stream_status toy_status_of_errno() {
  if (errno == EAGAIN || errno == EWOULDBLOCK) return stream_status::want_read;
  return stream_status::failed;
}

// One end of a toy connection on a non-blocking socket: the client writes the greeting as
// its handshake, the server reads and checks it; then octets pass as they are.
class toy_stream final : public user_stream {
 public:
  toy_stream(int fd, bool client) : fd_(fd), client_(client) {}

  stream_status handshake() override {
    while (done_ < toy_greeting.size()) {
      const std::size_t left = toy_greeting.size() - done_;
      const ssize_t n = client_ ? ::send(fd_, toy_greeting.data() + done_, left, MSG_NOSIGNAL)
                                : ::recv(fd_, greeting_.data() + done_, left, 0);
      if (n == 0) return stream_status::closed;
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
          return client_ ? stream_status::want_write : stream_status::want_read;
        }
        return fail("greeting_io");
      }
      done_ += static_cast<std::size_t>(n);
    }
    if (!client_ && greeting_ != toy_greeting) return fail("bad_greeting");
    return stream_status::done;
  }

  stream_status read(std::span<std::uint8_t> buffer, std::size_t& transferred) override {
    const ssize_t n = ::recv(fd_, buffer.data(), buffer.size(), 0);
    if (n == 0) return stream_status::closed;
    if (n < 0)
      return toy_status_of_errno() == stream_status::failed ? fail("recv")
                                                            : stream_status::want_read;
    transferred = static_cast<std::size_t>(n);
    return stream_status::done;
  }

  stream_status write(std::span<const std::span<const std::uint8_t>> pieces,
                      std::size_t& transferred) override {
    std::vector<std::uint8_t> all;
    for (const auto& piece : pieces) all.insert(all.end(), piece.begin(), piece.end());
    const ssize_t n = ::send(fd_, all.data(), all.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return stream_status::want_write;
      return fail("send");
    }
    transferred = static_cast<std::size_t>(n);
    return stream_status::done;
  }

  std::string failure_cause() const override { return cause_; }

 private:
  stream_status fail(const char* cause) {
    cause_ = cause;
    return stream_status::failed;
  }

  int fd_;
  bool client_;
  std::size_t done_ = 0;
  std::array<std::uint8_t, 4> greeting_{};
  std::string cause_ = "failed";
};

// Registered once for the whole test program (a registration lasts the program's life).
transport_kind toy_kind() {
  static const transport_kind kind = [] {
    user_transport toy;
    toy.name = "toy";
    toy.long_name = "DNS over TCP after a greeting";
    toy.short_name = "Toy";
    toy.default_port = 5353;
    toy.has_handshake = true;
    toy.client = [](int fd) { return std::make_unique<toy_stream>(fd, true); };
    toy.server = [](int fd) { return std::make_unique<toy_stream>(fd, false); };
    return register_transport(std::move(toy));
  }();
  return kind;
}

server_options toy_responder() {
  server_options options;
  options.listen[transport_kind::udp] = endpoint{"127.0.0.1", 0};
  options.listen[toy_kind()] = endpoint{"127.0.0.1", 0};
  return options;
}

TEST(user_transport_test, is_a_transport_like_the_built_in_ones) {
  const transport_kind toy = toy_kind();
  EXPECT_EQ(parse_transport("toy"), toy);
  EXPECT_EQ(transport_name(toy), "toy");
  const transport_traits& traits = traits_of(toy);
  EXPECT_EQ(traits.short_name, "Toy");
  EXPECT_EQ(traits.default_port, 5353);
  EXPECT_TRUE(traits.has_connections);
  EXPECT_TRUE(traits.over_tcp);
  EXPECT_FALSE(traits.has_tls);
  EXPECT_TRUE(std::any_of(all_transports().begin(), all_transports().end(),
                          [&](const transport_traits& t) { return t.kind == toy; }));
  EXPECT_EQ(default_ports()[toy], 5353);
}

// A load over it against the responder listening for it: every answer, the connections and
// their greetings counted as handshakes.
TEST(user_transport_test, a_load_over_it_is_answered_and_counted) {
  server responder(toy_responder());
  load_spec spec;
  spec.target.transport = toy_kind();
  spec.target.port = responder.port(toy_kind());
  spec.traffic.clients = 4;
  spec.traffic.outstanding = 10;
  spec.traffic.count = 2000;
  spec.traffic.warmup_seconds = 0;
  spec.connections.queries_per_connection = 10;
  const run_result r = run_load(spec);
  EXPECT_EQ(r.responses_received, 2000u) << r.connections.first_failure;
  EXPECT_EQ(r.connections.opened, 200u);
  EXPECT_EQ(r.handshakes_full, r.connections.opened);
  EXPECT_EQ(r.handshake_latency.count(), r.connections.opened);
  EXPECT_EQ(r.connections.failed, 0u);
  const auto counted = responder.stats();
  EXPECT_EQ(counted.queries[toy_kind()], 2000u);
}

// dnstransport::client over it: each query answered with its own ID.
TEST(user_transport_test, the_client_exchanges_over_it) {
  server responder(toy_responder());
  client_settings settings;
  settings.target.transport = toy_kind();
  settings.target.port = responder.port(toy_kind());
  std::vector<std::vector<std::uint8_t>> queries;
  for (std::uint16_t i = 0; i < 5; ++i) {
    queries.push_back(encode_query(fmt::format("toy{}.example", i), rr_type::a));
    patch_id(queries.back().data(), static_cast<std::uint16_t>(300 + i));
  }
  const client_exchange got = run_exchange(settings, queries);
  for (std::uint16_t i = 0; i < 5; ++i) {
    ASSERT_TRUE(got.answers[i].answered) << i;
    EXPECT_EQ(read_id(got.answers[i].message.data()), 300 + i);
  }
  EXPECT_EQ(got.run.connections.opened, 1u);
}

// A sweep of UDP and it, its JSON read back, and its tables: its points are there by name.
TEST(user_transport_test, a_sweep_of_it_is_reported) {
  server responder(toy_responder());
  sweep_plan plan;
  plan.base.target.server = "127.0.0.1";
  plan.ports[transport_kind::udp] = responder.port(transport_kind::udp);
  plan.ports[toy_kind()] = responder.port(toy_kind());
  plan.transports = {{transport_kind::udp, {}}, {toy_kind(), {}}};
  plan.clients = {2};
  plan.queries_per_connection = {1, 0};
  plan.repeats = 1;
  plan.base.traffic.count = 500;
  plan.base.traffic.warmup_seconds = 0;
  plan.pause_seconds = 0;
  const sweep_result result = run_sweep(plan);
  std::uint64_t toy_answers = 0;
  for (const auto& point : result.points) {
    if (point.point.transport.transport != toy_kind()) continue;
    for (const auto& run : point.repeats) toy_answers += run.responses_received;
  }
  EXPECT_EQ(toy_answers, 1000u);  // two points of 500
  const sweep_result read = sweep_result_from_json(to_json(result), "sweep.json");
  ASSERT_EQ(read.points.size(), result.points.size());
  EXPECT_EQ(read.points.back().point.transport.transport, toy_kind());
  const std::string tables = format_tables(read);
  EXPECT_NE(tables.find("toy"), std::string::npos) << tables;
  // The command-line tool, which has no transport named toy, reports the file too.
  const hostile::scratch files("user-transport-report");
  const std::string file = files.file("sweep.json", to_json(result));
  const std::string out = files.path("report");
  const hostile::process_result r =
      hostile::run_process(hostile::cli, {"report", file, "--out", out}, std::chrono::seconds(60));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("toy"), std::string::npos) << r.out;
  // Its plots draw it as they draw UDP: a line of the throughput plot, named.
  EXPECT_NE(hostile::contents(out + "/points.csv").find("toy"), std::string::npos);
  const std::string throughput = hostile::contents(out + "/qps_vs_clients.gp");
  EXPECT_NE(throughput.find("toy"), std::string::npos) << throughput;
  EXPECT_NE(throughput.find("udp"), std::string::npos) << throughput;
}

// A result's transport name that no transport of the program has is registered from the name
// alone: its runs read and tabled, a load over it refused with the reason.
TEST(user_transport_test, a_transport_known_from_a_result_file_is_read_not_run) {
  EXPECT_EQ(transport_of_record("tcp"), transport_kind::tcp);
  EXPECT_EQ(transport_of_record("dot"), transport_kind::tls);
  const transport_kind recorded = transport_of_record("recorded_only");
  EXPECT_EQ(transport_of_record("recorded_only"), recorded);
  EXPECT_EQ(transport_name(recorded), "recorded_only");
  EXPECT_TRUE(traits_of(recorded).has_connections);
  EXPECT_TRUE(traits_of(recorded).over_tcp);
  EXPECT_FALSE(traits_of(recorded).compiled);  // presets and calibration leave it out
  load_spec spec;
  spec.target.transport = recorded;
  spec.traffic.count = 1;
  try {
    run_load(spec);
    ADD_FAILURE() << "a load over a transport known from a file ran";
  } catch (const setup_error& e) {
    EXPECT_NE(std::string(e.what()).find("only from a result file"), std::string::npos) << e.what();
  }
  EXPECT_THROW(transport_of_record("Not-A-Name"), setup_error);
  // The program registers it after reading the file: the same kind, now one it can run.
  user_transport real;
  real.name = "recorded_only";
  real.client = [](int) { return std::unique_ptr<user_stream>(); };
  EXPECT_EQ(register_transport(std::move(real)), recorded);
  EXPECT_TRUE(traits_of(recorded).compiled);
  EXPECT_EQ(transport_name(recorded), "recorded_only");
  user_transport again;
  again.name = "recorded_only";
  again.client = [](int) { return std::unique_ptr<user_stream>(); };
  EXPECT_THROW(register_transport(std::move(again)), setup_error);
}

// A 0.3 s load over `broken` against the toy responder: no answer, its connections failed,
// the first failure saying `says`.
void expect_connections_fail(transport_kind broken, const char* says) {
  server responder(toy_responder());
  load_spec spec;
  spec.target.transport = broken;
  spec.target.port = responder.port(toy_kind());
  spec.traffic.duration_seconds = 0.3;
  spec.traffic.warmup_seconds = 0;
  const run_result r = run_load(spec);
  EXPECT_EQ(r.responses_received, 0u);
  EXPECT_GT(r.connections.failed, 0u);
  EXPECT_NE(r.connections.first_failure.find(says), std::string::npos)
      << r.connections.first_failure;
}

// A stream factory that makes no stream: the connections fail with that cause, the load
// ends (count reached by no one: its duration), nothing is counted as an answer.
TEST(user_transport_test, a_factory_without_streams_fails_connections_not_the_load) {
  static const transport_kind broken = [] {
    user_transport t;
    t.name = "toy_broken";
    t.client = [](int) { return std::unique_ptr<user_stream>(); };
    return register_transport(std::move(t));
  }();
  expect_connections_fail(broken, "made no stream");
}

// A stream whose handshake throws: its connections fail with the exception's message; the
// load and the process go on.
TEST(user_transport_test, a_stream_that_throws_fails_its_connection) {
  static const transport_kind throwing = [] {
    user_transport t;
    t.name = "toy_throws";
    t.has_handshake = true;
    t.client = [](int) -> std::unique_ptr<user_stream> {
      struct thrower final : user_stream {
        stream_status handshake() override { throw std::runtime_error("boom"); }
        stream_status read(std::span<std::uint8_t>, std::size_t&) override {
          return stream_status::failed;
        }
        stream_status write(std::span<const std::span<const std::uint8_t>>, std::size_t&) override {
          return stream_status::failed;
        }
      };
      return std::make_unique<thrower>();
    };
    return register_transport(std::move(t));
  }();
  expect_connections_fail(throwing, "boom");
}

// A kind no transport was registered under: a setup error of the load and of the
// responder, not a crash.
TEST(user_transport_test, an_unregistered_kind_is_a_setup_error) {
  const auto unregistered = static_cast<transport_kind>(max_transports - 1);
  load_spec spec;
  spec.target.transport = unregistered;
  EXPECT_THROW(run_load(spec), setup_error);
  server_options options;
  options.listen[unregistered] = endpoint{"127.0.0.1", 0};
  EXPECT_THROW(server{options}, setup_error);
}

TEST(user_transport_test, bad_registrations_are_refused) {
  toy_kind();
  const auto refused = [](user_transport t, const char* says) {
    try {
      register_transport(std::move(t));
      ADD_FAILURE() << "registered: " << says;
    } catch (const setup_error& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  const auto stream = [](int fd) { return std::make_unique<toy_stream>(fd, true); };
  user_transport taken;
  taken.name = "toy";
  taken.client = stream;
  refused(taken, "registered already");
  user_transport builtin;
  builtin.name = "dot";  // tls's alias
  builtin.client = stream;
  refused(builtin, "registered already");
  user_transport nameless;
  nameless.client = stream;
  refused(nameless, "needs a name");
  user_transport no_client;
  no_client.name = "toy_without_client";
  refused(no_client, "has no client");
  user_transport dashed;
  dashed.name = "toy-dashed";  // a sweep's list would read tls-gnutls's dash in it
  dashed.client = stream;
  refused(dashed, "cannot name a transport");
  user_transport pid;
  pid.name = "pid";
  pid.client = stream;
  refused(pid, "cannot name a transport");
}

}  // namespace
}  // namespace dnstransport
