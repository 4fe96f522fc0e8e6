// TLS 1.3 early data (0-RTT) over DoT and DoH against the built-in responder, every pair of
// client and server backends: queries that ride with the ClientHello are answered and
// counted once; a server that refuses them gets them again after the handshake; a server
// whose tickets allow no early data gets none.
#include <dnstransport/load.hpp>

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <tuple>

#include <dnstransport/error.hpp>
#include <dnstransport/query_source.hpp>
#include <dnstransport/server.hpp>
#include <dnstransport/tls.hpp>

#include "hostile_checks.hpp"

namespace dnstransport {
namespace {

using hostile::expect_all_in;
using hostile::run_checked;
using hostile::summary;

// transport (tls or doh), client backend, server backend
using early_case = std::tuple<transport_kind, tls_backend, tls_backend>;

std::string case_name(const ::testing::TestParamInfo<early_case>& info) {
  const auto [transport, client, server] = info.param;
  return std::string(transport_name(transport)) + "_" + std::string(tls_backend_name(client)) +
         "_to_" + std::string(tls_backend_name(server));
}

class early_data_test : public ::testing::TestWithParam<early_case> {
 protected:
  server_options responder_options() const {
    const auto [transport, client, server_backend] = GetParam();
    server_options o;
    o.listen[transport] = endpoint{"127.0.0.1", 0};
    o.tls_options.backend = server_backend;
    o.certificate_directory =
        (std::filesystem::path(::testing::TempDir()) / ("early-data-" + std::to_string(getpid())))
            .string();
    return o;
  }

  load_spec spec_for(const server& s) const {
    const auto [transport, client, server_backend] = GetParam();
    load_spec spec;
    spec.target.transport = transport;
    spec.target.port = transport == transport_kind::doh ? s.port(transport_kind::doh)
                                                        : s.port(transport_kind::tls);
    spec.tls.backend = client;
    spec.tls.resume = true;
    spec.tls.early_data = true;
    spec.traffic.clients = 2;
    spec.traffic.outstanding = 1;
    spec.connections.queries_per_connection = 1;
    spec.traffic.count = 60;
    spec.traffic.timeout_seconds = hostile::generous_timeout_seconds;
    return spec;
  }
};

TEST_P(early_data_test, queries_ride_in_0rtt_and_are_answered_once) {
  server responder(responder_options());
  const run_result r = run_checked(spec_for(responder)).result;
  expect_all_in(r.responses_received, r);
  EXPECT_EQ(r.duplicates, 0u);
  // Each client's first connection has no ticket; each later one resumes, and its one
  // query goes with the ClientHello.
  EXPECT_EQ(r.handshakes_full, 2u) << summary(r);
  EXPECT_EQ(r.handshakes_resumed, 58u);
  EXPECT_EQ(r.early_data.offered, 58u);
  EXPECT_EQ(r.early_data.accepted, 58u);
  EXPECT_EQ(r.early_data.rejected, 0u);
  EXPECT_EQ(r.early_data.queries_in_early_data, 58u);
  EXPECT_EQ(r.early_data.queries_resent, 0u);
  responder.stop();
  EXPECT_EQ(responder.stats().tls_early_data, 58u);
}

TEST_P(early_data_test, several_queries_fit_in_the_early_data) {
  server responder(responder_options());
  load_spec spec = spec_for(responder);
  spec.traffic.outstanding = 4;
  spec.connections.queries_per_connection = 8;
  spec.traffic.count = 80;
  const run_result r = run_checked(spec).result;
  expect_all_in(r.responses_received, r);
  // 40 queries per client, 8 per connection: five connections each, the first in full.
  // Each resumed one sends its first 4 queries (all it may have in flight) early.
  EXPECT_EQ(r.handshakes_resumed, 8u) << summary(r);
  EXPECT_EQ(r.early_data.accepted, 8u);
  EXPECT_EQ(r.early_data.queries_in_early_data, 32u);
  EXPECT_EQ(r.early_data.queries_resent, 0u);
}

TEST_P(early_data_test, early_data_stops_at_the_tickets_limit) {
  server responder(responder_options());
  load_spec spec = spec_for(responder);
  // Queries of about 260 octets, 100 in flight: far more than the 16,384 octets a ticket
  // allows to go early. What does not fit goes after the handshake.
  std::string text;
  for (int i = 0; i < 20; ++i) {
    std::string name;
    for (int label = 0; label < 4; ++label) name += std::string(60, 'a' + (i + label) % 26) + ".";
    text += name + "example. A\n";
  }
  spec.traffic.queries = std::make_shared<const query_set>(parse_text_queries(text, "long names"));
  spec.traffic.outstanding = 100;
  spec.connections.queries_per_connection = 200;
  spec.traffic.count = 800;
  const run_result r = run_checked(spec).result;
  expect_all_in(r.responses_received, r);
  EXPECT_EQ(r.connections.failed, 0u) << r.connections.first_failure;
  EXPECT_EQ(r.connections.opened, 4u) << summary(r);
  EXPECT_EQ(r.early_data.accepted, 2u) << summary(r);
  // Each resumed connection sent some of its queries early, fewer than the 100 it had.
  EXPECT_GE(r.early_data.queries_in_early_data, 2u);
  EXPECT_LT(r.early_data.queries_in_early_data, 2 * 16384u / 260);
}

TEST_P(early_data_test, refused_0rtt_queries_are_sent_again_and_counted_once) {
  server_options o = responder_options();
  o.tls_options.refuse_early_data = true;
  server responder(o);
  const run_result r = run_checked(spec_for(responder)).result;
  // Every query is answered once, though each resumed connection's query went twice.
  expect_all_in(r.responses_received, r);
  EXPECT_EQ(r.queries_sent, 60u);
  EXPECT_EQ(r.duplicates, 0u);
  EXPECT_EQ(r.handshakes_resumed, 58u) << summary(r);
  EXPECT_EQ(r.early_data.offered, 58u);
  EXPECT_EQ(r.early_data.accepted, 0u);
  EXPECT_EQ(r.early_data.rejected, 58u);
  EXPECT_EQ(r.early_data.queries_in_early_data, 58u);
  EXPECT_EQ(r.early_data.queries_resent, 58u);
  responder.stop();
  EXPECT_EQ(responder.stats().tls_early_data, 0u);
}

TEST_P(early_data_test, tickets_without_early_data_get_none) {
  server_options o = responder_options();
  o.tls_options.early_data = false;
  server responder(o);
  const run_result r = run_checked(spec_for(responder)).result;
  expect_all_in(r.responses_received, r);
  EXPECT_EQ(r.handshakes_resumed, 58u) << summary(r);
  EXPECT_EQ(r.early_data.offered, 0u);
  EXPECT_EQ(r.early_data.queries_in_early_data, 0u);
}

INSTANTIATE_TEST_SUITE_P(
    early_data_test, early_data_test,
    ::testing::Combine(::testing::Values(transport_kind::tls, transport_kind::doh),
                       ::testing::Values(tls_backend::openssl, tls_backend::gnutls),
                       ::testing::Values(tls_backend::openssl, tls_backend::gnutls)),
    case_name);

TEST(early_data_usage_test, needs_a_tls_transport_tls_13_and_resumption) {
  load_spec spec;
  spec.target.transport = transport_kind::tcp;
  spec.tls.resume = true;
  spec.tls.early_data = true;
  spec.traffic.count = 1;
  try {
    run_load(spec);
    ADD_FAILURE() << "--early-data over tcp was accepted";
  } catch (const setup_error& e) {
    EXPECT_NE(std::string(e.what()).find("load_spec::tls.early_data: tcp has no TLS"),
              std::string::npos)
        << e.what();
  }
  spec.target.transport = transport_kind::tls;
  spec.tls.max_version = tls_version::v1_2;
  try {
    run_load(spec);
    ADD_FAILURE() << "--early-data with TLS 1.2 was accepted";
  } catch (const setup_error& e) {
    EXPECT_NE(std::string(e.what()).find("needs TLS 1.3"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dnstransport
