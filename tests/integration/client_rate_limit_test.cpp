// The responder's limit per client address (server_options::rate_limit_per_client), as a
// server's per-client rate limit works: each client address has a bucket of its own, over
// every thread and listener, whether the address is the query's or the one its PROXY header
// claims. UDP over a client's limit is dropped; stream answers wait and none is lost.
#include <dnstransport/server.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <dnstransport/error.hpp>
#include <dnstransport/load.hpp>
#include <dnstransport/tls.hpp>

#include "responder/rate_limiter.hpp"
#include "scratch_dir.hpp"

namespace dnstransport {
namespace {

using hostile::scratch_directory;

constexpr double client_limit = 500;     // answers per second per client address
constexpr unsigned limited_clients = 4;  // each with an address of its own

// Whatever the machine's speed, a client address gets at most client_limit * W + burst answers
// over a window of W seconds (rate_limiter); the window here is the responder's whole life,
// measured around it, so a stalled machine only makes the bound looser. The clients' sum is
// well over one client's bound: the limit is each address's, not the responder's.
void expect_each_client_within_its_limit(const server_stats& st,
                                         std::chrono::steady_clock::time_point since) {
  const double window =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
  const double most =
      client_limit * window + static_cast<double>(detail::rate_limiter(client_limit).burst());
  ASSERT_EQ(st.client_addresses, limited_clients);
  std::uint64_t all = 0;
  for (const client_answers& c : st.top_clients) {
    EXPECT_LE(static_cast<double>(c.answers), most) << c.address << " in " << window << " s";
    all += c.answers;
  }
  EXPECT_GT(static_cast<double>(all), most) << "the limit is per client, not the responder's";
}

// Four clients, each offering twice its limit for `seconds`, from the addresses `sources`
// (each client its own), or claiming 10.9.0.1 to 10.9.0.4 in PROXY headers.
load_spec over_the_limit(transport_kind t, std::uint16_t port, bool proxy, double seconds) {
  load_spec spec;
  spec.target.transport = t;
  spec.target.port = port;
  spec.traffic.clients = limited_clients;
  spec.traffic.outstanding = 50;
  spec.traffic.duration_seconds = seconds;
  spec.traffic.timeout_seconds = 5;
  if (t == transport_kind::doq) spec.tls.backend = tls_backend::gnutls;
  if (proxy) {
    spec.connections.proxy.version = proxy_protocol::v2;
    spec.connections.proxy.sources = {"10.9.0.0/29"};
  } else {
    spec.connections.sources = {"127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"};
    spec.connections.source_mode = source_mode::per_client;
  }
  return spec;
}

TEST(client_rate_limit_test, udp_over_a_clients_limit_is_dropped) {
  const auto since = std::chrono::steady_clock::now();
  server_options options;
  options.listen[transport_kind::udp] = endpoint{"127.0.0.1", 0};
  options.threads = 2;  // a client's datagrams may reach either: one bucket per address
  options.set_proxy_protocol(proxy_policy::required);
  options.rate_limit_per_client = client_limit;
  server responder(options);
  // Paced at twice each client's limit (as fast as answers come, a client's slots would wait
  // for their timeouts together and arrive in bursts no small burst allowance absorbs).
  load_spec spec =
      over_the_limit(transport_kind::udp, responder.port(transport_kind::udp), true, 1);
  spec.traffic.arrivals = arrival_mode::constant;
  spec.traffic.rate = 2 * client_limit * limited_clients;
  spec.traffic.timeout_seconds = 0.2;
  const run_result r = run_load(spec);
  responder.stop();
  const server_stats st = responder.stats();

  expect_each_client_within_its_limit(st, since);
  EXPECT_GT(st.rate_limited_dropped, 0u);
  // Every query reached the responder (loopback): answered, or dropped for its client's limit.
  EXPECT_EQ(st.rate_limited_dropped, r.queries_sent - st.queries[transport_kind::udp]);
  EXPECT_EQ(st.queries[transport_kind::udp], r.responses_received);
  EXPECT_EQ(st.rate_limited_delayed, 0u);
}

// A stream listener under the limit per client, saturated: each client's answers wait for its
// own bucket, in order, and none is lost.
void expect_each_clients_answers_wait(transport_kind t, bool proxy) {
  const auto since = std::chrono::steady_clock::now();
  server_options options;
  options.listen[t] = endpoint{"127.0.0.1", 0};
  options.threads = 2;
  options.set_proxy_protocol(proxy ? proxy_policy::required : proxy_policy::off);
  options.rate_limit_per_client = client_limit;
  if (traits_of(t).has_tls) {
    options.certificate_directory =
        scratch_directory(("client-rate-limit-" + std::string(transport_name(t))).c_str());
  }
  server responder(options);
  const run_result r = run_load(over_the_limit(t, responder.port(t), proxy, 1));
  responder.stop();
  const server_stats st = responder.stats();

  EXPECT_EQ(r.connections.failed, 0u) << r.connections.first_failure;
  expect_each_client_within_its_limit(st, since);
  EXPECT_EQ(r.responses_received, r.queries_sent);
  EXPECT_EQ(r.lost + r.lost_on_close + r.abandoned + r.http_failed + r.quic_failed, 0u);
  EXPECT_EQ(st.queries[t], r.responses_received);
  EXPECT_GT(st.rate_limited_delayed, 0u);
  EXPECT_EQ(st.rate_limited_dropped, 0u);
}

TEST(client_rate_limit_test, tcp_answers_wait_for_their_clients_limit) {
  expect_each_clients_answers_wait(transport_kind::tcp, false);
}

TEST(client_rate_limit_test, tcp_answers_wait_for_the_limit_of_the_address_claimed) {
  expect_each_clients_answers_wait(transport_kind::tcp, true);
}

TEST(client_rate_limit_test, doh_answers_wait_for_their_clients_limit) {
  expect_each_clients_answers_wait(transport_kind::doh, false);
}

#ifdef DNSTRANSPORT_HAVE_DOQ
TEST(client_rate_limit_test, doq_answers_wait_for_their_clients_limit) {
  expect_each_clients_answers_wait(transport_kind::doq, false);
}
#endif

TEST(client_rate_limit_test, a_limit_that_is_no_rate_is_refused) {
  server_options options;
  options.listen[transport_kind::udp] = endpoint{"127.0.0.1", 0};
  options.rate_limit_per_client = -1;
  try {
    server responder(options);
    FAIL() << "a negative limit was taken";
  } catch (const setup_error& e) {
    EXPECT_NE(std::string(e.what()).find("rate_limit_per_client"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dnstransport
