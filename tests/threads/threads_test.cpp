// Several threads on both sides at once, for ThreadSanitizer (`tools/dev test` runs these
// with the integration tests in build-tsan; label `threads`): the engine with two worker
// threads (one io_context each) against the built-in responder with two threads, over UDP,
// TCP and TLS with both backends, connections reopened every few queries (so that accepts,
// handshakes and resumption from tickets the other responder thread issued interleave).
// Counts are bounded (--count), not timed: every query must be answered.
#include <dnstransport/load.hpp>

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>

#include <dnstransport/server.hpp>
#include <dnstransport/tls.hpp>

namespace dnstransport {
namespace {

struct threads_case {
  const char* name;
  transport_kind transport;
  tls_backend client_backend;
  tls_backend server_backend;
};

std::string case_name(const ::testing::TestParamInfo<threads_case>& param) {
  return param.param.name;
}

class threads_test : public ::testing::TestWithParam<threads_case> {};

TEST_P(threads_test, two_engine_threads_against_two_responder_threads_answer_everything) {
  const threads_case c = GetParam();
  server_options o;
  o.threads = 2;
  o.listen[transport_kind::udp] = endpoint{"127.0.0.1", 0};
  o.listen[transport_kind::tcp] = endpoint{"127.0.0.1", 0};
  o.listen[transport_kind::tls] = endpoint{"127.0.0.1", 0};
  o.listen[transport_kind::doh] = endpoint{"127.0.0.1", 0};
  o.tls_options.backend = c.server_backend;
  o.certificate_directory =
      (std::filesystem::path(::testing::TempDir()) /
       ("threads-test-" + std::string(c.name) + "-" + std::to_string(getpid())))
          .string();
  server responder(o);

  load_spec spec;
  spec.target.transport = c.transport;
  spec.target.port = responder.port(c.transport);
  spec.generator.threads = 2;
  spec.traffic.clients = 4;
  spec.traffic.outstanding = 8;
  spec.traffic.count = 2000;
  spec.traffic.timeout_seconds = 10;
  if (c.transport != transport_kind::udp) spec.connections.queries_per_connection = 25;
  spec.tls.backend = c.client_backend;
  spec.tls.resume = true;
  const run_result r = run_load(spec);

  EXPECT_EQ(r.threads, 2u);
  EXPECT_EQ(r.queries_sent, 2000u);
  EXPECT_EQ(r.responses_received, 2000u) << r.connections.first_failure;
  EXPECT_EQ(r.lost + r.lost_on_close + r.malformed + r.mismatched, 0u);
  if (c.transport != transport_kind::udp) {
    EXPECT_EQ(r.connections.opened, 2000u / 25);
    EXPECT_EQ(r.connections.failed, 0u);
  }
  if (traits_of(c.transport).has_tls) {
    EXPECT_EQ(r.handshakes_full + r.handshakes_resumed, 2000u / 25);
    EXPECT_GT(r.handshakes_resumed, 0u);
  }
  responder.stop();
  const server_stats stats = responder.stats();
  const std::uint64_t served =
      c.transport == transport_kind::udp   ? stats.queries[transport_kind::udp]
      : c.transport == transport_kind::tcp ? stats.queries[transport_kind::tcp]
      : c.transport == transport_kind::tls ? stats.queries[transport_kind::tls]
                                           : stats.queries[transport_kind::doh];
  EXPECT_EQ(served, 2000u);
}

INSTANTIATE_TEST_SUITE_P(
    threads, threads_test,
    ::testing::Values(
        threads_case{"udp", transport_kind::udp, tls_backend::openssl, tls_backend::openssl},
        threads_case{"tcp", transport_kind::tcp, tls_backend::openssl, tls_backend::openssl},
        threads_case{"tls_openssl", transport_kind::tls, tls_backend::openssl,
                     tls_backend::openssl},
        threads_case{"tls_gnutls", transport_kind::tls, tls_backend::gnutls, tls_backend::gnutls},
        threads_case{"tls_openssl_to_gnutls", transport_kind::tls, tls_backend::openssl,
                     tls_backend::gnutls},
        threads_case{"doh_openssl", transport_kind::doh, tls_backend::openssl,
                     tls_backend::openssl},
        threads_case{"doh_gnutls_to_openssl", transport_kind::doh, tls_backend::gnutls,
                     tls_backend::openssl}),
    case_name);

}  // namespace
}  // namespace dnstransport
