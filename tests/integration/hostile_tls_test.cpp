// DNS-over-TLS servers that fail the client at the TLS layer: no TLS at all, a handshake
// that never ends, versions in common or not, certificates for another name or expired
// (verified and not), an alert in the middle of the stream. Each TLS library goes through
// every case as the client, against the other library as the server.
#include <dnstransport/load.hpp>

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <filesystem>
#include <optional>
#include <string>

#include <dnstransport/error.hpp>

#include "hostile_checks.hpp"
#include "hostile_server.hpp"
#include "misbehaviour.hpp"
#include "stream_scripts.hpp"
#include "test_certificates.hpp"
#include "transport/tls/tls_backend.hpp"

namespace dnstransport::hostile {
namespace {

class hostile_tls_test : public ::testing::TestWithParam<tls_backend> {
 protected:
  hostile_options server_options(transport_kind transport = transport_kind::tls) const {
    hostile_options options;
    options.transport = transport;
    options.tls.backend = other_backend(GetParam());
    return options;
  }

  // Two clients, five queries in flight each, 0.3 s of load (a count mode spec keeps its
  // count), 0.5 s timeout unless given: a handshake under a sanitizer on a busy machine can
  // take a while.
  load_spec client_spec(const hostile_server& server, load_spec spec = {}) const {
    spec.target.transport = transport_kind::tls;
    spec.target.port = server.port();
    spec.tls.backend = GetParam();
    if (spec.traffic.count == 0) spec.traffic.duration_seconds = 0.3;
    if (spec.traffic.timeout_seconds == load_spec{}.traffic.timeout_seconds)
      spec.traffic.timeout_seconds = 0.5;
    spec.traffic.clients = 2;
    spec.traffic.outstanding = 5;
    return spec;
  }

  static std::uint64_t failures(const run_result& r, const std::string& cause) {
    const auto it = r.connections.failures.find(cause);
    return it == r.connections.failures.end() ? 0 : it->second;
  }

  // A count-mode run in which no set-up can succeed: each of the two clients gives up after
  // three failures in a row, all for `cause`, and nothing is sent.
  static void expect_every_set_up_failed(const run_result& r, const std::string& cause) {
    EXPECT_EQ(r.queries_sent, 0u) << summary(r);
    EXPECT_EQ(r.connections.failed, 6u) << summary(r);
    EXPECT_EQ(failures(r, cause), 6u) << summary(r);
    EXPECT_EQ(r.handshakes_full + r.handshakes_resumed, 0u) << summary(r);
  }

  // A server with a bad certificate (for `name`, trusted through `ca`): answered in full
  // without verification, every handshake refused as a certificate failure with it.
  // Returns the verified run for further checks.
  run_result served_unverified_refused_verified(const hostile_server& server,
                                                const std::string& name,
                                                const std::filesystem::path& ca) const {
    load_spec spec;
    spec.tls.server_name = name;
    spec.traffic.count = 20;
    spec.traffic.timeout_seconds = generous_timeout_seconds;
    const run_result unverified = run_checked(client_spec(server, spec)).result;
    EXPECT_EQ(unverified.queries_sent, 20u) << unverified.connections.first_failure;
    expect_all_in(unverified.responses_received, unverified);

    spec.tls.verify = true;
    spec.tls.ca_file = ca;
    spec.traffic.count = 100;
    spec.traffic.timeout_seconds = load_spec{}.traffic.timeout_seconds;
    run_result verified = run_checked(client_spec(server, spec)).result;
    expect_every_set_up_failed(verified, "tls_certificate");
    return verified;
  }
};

TEST_P(hostile_tls_test, plain_dns_on_the_tls_port_is_not_tls) {
  hostile_server server(server_options(transport_kind::tcp), plain_dns_reply());
  load_spec spec;
  spec.traffic.count = 100;
  const run_result r = run_checked(client_spec(server, spec)).result;
  expect_every_set_up_failed(r, "tls_not_tls");
}

TEST_P(hostile_tls_test, handshake_that_never_finishes_times_out) {
  hostile_options options = server_options();
  options.tls_handshake = false;
  hostile_server server(options, stall_handshake());
  // In count mode each client gives up after three set-ups in a row failed: exactly three
  // handshake timeouts per client, whatever the timing.
  load_spec spec;
  spec.traffic.count = 100;
  spec.traffic.timeout_seconds = 0.15;
  const run_result r = run_checked(client_spec(server, spec)).result;
  EXPECT_EQ(r.queries_sent, 0u);
  EXPECT_EQ(r.connections.opened, 6u) << summary(r);
  EXPECT_EQ(r.connections.failed, 6u) << summary(r);
  EXPECT_EQ(failures(r, "ETIMEDOUT"), 6u) << summary(r);
  EXPECT_EQ(r.connections.closed_by_client, 0u) << summary(r);
  EXPECT_NE(r.connections.first_failure.find("tls handshake"), std::string::npos)
      << r.connections.first_failure;

  // For a duration: handshakes still going when the run ends are closed, not left uncounted
  // (how many timed out before depends on the timing).
  spec.traffic.count = 0;
  const run_result d = run_checked(client_spec(server, spec)).result;
  EXPECT_EQ(d.queries_sent, 0u);
  EXPECT_EQ(failures(d, "ETIMEDOUT"), d.connections.failed) << summary(d);
  EXPECT_EQ(d.connections.opened, d.connections.failed + d.connections.closed_by_client)
      << summary(d);
}

TEST_P(hostile_tls_test, close_before_the_handshake_is_a_failed_connection) {
  hostile_options options = server_options();
  options.tls_handshake = false;
  hostile_server server(options, close_after_client_hello());
  load_spec spec;
  spec.traffic.count = 100;
  const run_result r = run_checked(client_spec(server, spec)).result;
  expect_every_set_up_failed(r, "tls_closed");
}

TEST_P(hostile_tls_test, count_mode_ends_when_every_handshake_fails) {
  hostile_options options = server_options();
  options.tls.min_version = options.tls.max_version = tls_version::v1_2;
  hostile_server server(options, answer_all());
  load_spec spec;
  spec.traffic.count = 1000;
  spec.tls.min_version = spec.tls.max_version = tls_version::v1_3;
  const run_result r = run_checked(client_spec(server, spec)).result;
  expect_every_set_up_failed(r, "tls_protocol_version");
}

TEST_P(hostile_tls_test, close_right_after_the_handshake) {
  // Count mode: the run goes on until 200 queries are sent, however slow the machine.
  hostile_server server(server_options(), close_at_once());
  load_spec spec;
  spec.traffic.count = 200;
  const run_result r = run_checked(client_spec(server, spec)).result;
  EXPECT_GT(r.queries_sent, 0u);
  EXPECT_EQ(r.responses_received, 0u);
  EXPECT_EQ(r.lost_on_close, r.queries_sent);
  EXPECT_GT(r.handshakes_full, 0u);
  EXPECT_GT(r.connections.closed_by_server + r.connections.reset_by_server, 0u);
}

TEST_P(hostile_tls_test, alert_mid_stream_resets_the_connection) {
  hostile_server server(server_options(), alert_after(2));
  load_spec spec;
  spec.traffic.count = 200;
  const run_result r = run_checked(client_spec(server, spec)).result;
  EXPECT_EQ(r.queries_sent, 200u);
  EXPECT_GT(r.responses_received, 0u);
  EXPECT_LE(r.responses_received, 2 * r.connections.opened);
  EXPECT_GT(r.connections.reset_by_server, 0u);
  EXPECT_EQ(r.responses_received + r.lost_on_close, r.queries_sent);
}

// Server pinned to one version; client offering the default range, or one version.
TEST_P(hostile_tls_test, version_only_servers_against_each_client_setting) {
  for (const tls_version server_version : {tls_version::v1_2, tls_version::v1_3}) {
    for (const std::optional<tls_version> client_version :
         {std::optional<tls_version>{}, std::optional{tls_version::v1_2},
          std::optional{tls_version::v1_3}}) {
      SCOPED_TRACE(fmt::format("server {} only, client {}", tls_version_name(server_version),
                               client_version ? tls_version_name(*client_version) : "default"));
      hostile_options options = server_options();
      options.tls.min_version = options.tls.max_version = server_version;
      hostile_server server(options, answer_all());
      load_spec spec;
      spec.tls.min_version = spec.tls.max_version = client_version;
      const bool common = !client_version || *client_version == server_version;
      spec.traffic.count = common ? 20 : 100;
      if (common) spec.traffic.timeout_seconds = generous_timeout_seconds;
      const run_result r = run_checked(client_spec(server, spec)).result;
      if (common) {
        EXPECT_EQ(r.queries_sent, 20u);
        expect_all_in(r.responses_received, r);
        EXPECT_EQ(r.connections.failed, 0u) << r.connections.first_failure;
      } else {
        expect_every_set_up_failed(r, "tls_protocol_version");
      }
    }
  }
}

TEST_P(hostile_tls_test, certificate_for_another_name) {
  hostile_options options = server_options();
  const certificate_files other_name = test_certificate("other.example");
  options.tls.certificate_file = other_name.certificate_file;
  options.tls.key_file = other_name.key_file;
  hostile_server server(options, answer_all());
  served_unverified_refused_verified(server, "dns.example", other_name.certificate_file);
}

TEST_P(hostile_tls_test, expired_certificate) {
  hostile_options options = server_options();
  const certificate_files expired = expired_certificate();
  options.tls.certificate_file = expired.certificate_file;
  options.tls.key_file = expired.key_file;
  hostile_server server(options, answer_all());
  const run_result verified =
      served_unverified_refused_verified(server, "localhost", expired.certificate_file);
  EXPECT_NE(verified.connections.first_failure.find("expired"), std::string::npos)
      << verified.connections.first_failure;
}

// Hundreds of TLS 1.3 tickets in a row before the first answer (an OpenSSL server told to
// send 300 per handshake): GnuTLS returns "again" after each post-handshake message, and the
// client reads on while records wait in its read-ahead buffer. Stopping after a fixed number
// of them with records still read ahead would leave those records, the answer among them,
// to a readiness wait that never ends: every answer would be lost at the timeout.
TEST(hostile_tls_tickets_test, a_gnutls_client_reads_past_hundreds_of_tickets_in_a_row) {
  hostile_options options;
  options.transport = transport_kind::tls;
  options.tls.backend = tls_backend::openssl;
  options.tls.tickets_per_handshake = 300;
  hostile_server server(options, one_at_a_time(microseconds{0}));
  load_spec spec;
  spec.target.transport = transport_kind::tls;
  spec.target.port = server.port();
  spec.tls.backend = tls_backend::gnutls;
  spec.traffic.clients = 2;
  spec.traffic.outstanding = 1;
  spec.traffic.count = 60;
  spec.connections.queries_per_connection =
      3;  // twenty connections, each flooded with tickets first
  spec.traffic.timeout_seconds = generous_timeout_seconds;
  const run_result r = run_checked(spec).result;
  EXPECT_EQ(r.queries_sent, 60u) << summary(r);
  expect_all_in(r.responses_received, r);
  EXPECT_EQ(r.connections.opened, 20u) << summary(r);
  EXPECT_EQ(r.connections.failed, 0u) << r.connections.first_failure;
}

// The GnuTLS listener sends one ticket per handshake: asking it for more is refused.
TEST(hostile_tls_tickets_test, a_number_of_tickets_needs_the_openssl_listener) {
  tls_server_options options;
  options.backend = tls_backend::gnutls;
  options.tickets_per_handshake = 3;
  EXPECT_THROW(detail::make_tls_server_context(options), setup_error);
}

INSTANTIATE_TEST_SUITE_P(hostile, hostile_tls_test,
                         ::testing::Values(tls_backend::openssl, tls_backend::gnutls),
                         backend_name);

}  // namespace
}  // namespace dnstransport::hostile
