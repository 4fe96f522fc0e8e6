// Coalesced receiving (engine/read_coalescing.hpp) is on by default for every transport: a
// client with many queries in flight against a slow server puts its reads off, and every
// query still ends in one bucket. Against a responder that spends 200 us of CPU per answer,
// one client with 16 in flight waits milliseconds for each answer, so a delay (a twentieth of
// that, at least 10 us) engages after the first answers whatever the machine's speed; with
// --coalesce-us 0 no read is ever put off.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <dnstransport/load.hpp>
#include <dnstransport/report.hpp>
#include <dnstransport/server.hpp>
#include <dnstransport/tls.hpp>

#include "hostile_checks.hpp"
#include "scratch_dir.hpp"

namespace dnstransport::hostile {
namespace {

struct coalescing_case {
  std::string name;
  transport_kind transport = transport_kind::udp;
  tls_backend backend = tls_backend::openssl;
};

std::vector<coalescing_case> coalescing_cases() {
  std::vector<coalescing_case> cases{{"udp", transport_kind::udp}, {"tcp", transport_kind::tcp}};
  // A build without a TLS library (and so, without GnuTLS, without DoQ) leaves its cases
  // out rather than skipping them: CI fails a stage where a test skips.
#if defined(DNSTRANSPORT_HAVE_OPENSSL)
  cases.push_back({"tls_openssl", transport_kind::tls, tls_backend::openssl});
  cases.push_back({"doh_openssl", transport_kind::doh, tls_backend::openssl});
#endif
#if defined(DNSTRANSPORT_HAVE_GNUTLS)
  cases.push_back({"tls_gnutls", transport_kind::tls, tls_backend::gnutls});
#endif
#if defined(DNSTRANSPORT_HAVE_DOQ)
  cases.push_back({"doq", transport_kind::doq, tls_backend::gnutls});
#endif
  return cases;
}

class coalescing_test : public ::testing::TestWithParam<coalescing_case> {
 protected:
  run_result run(unsigned coalesce_us) {
    const coalescing_case& c = GetParam();
    server_options options;
    options.listen[c.transport] = endpoint{"127.0.0.1", 0};
    options.tls_options.backend = c.backend;
    options.cost_answer_us = 200;
    if (c.transport != transport_kind::udp && c.transport != transport_kind::tcp) {
      options.certificate_directory = scratch_directory(("coalescing-" + c.name).c_str());
    }
    server responder(options);
    load_spec spec;
    spec.target.transport = c.transport;
    spec.target.port = responder.port(c.transport);
    spec.tls.backend = c.backend;
    spec.traffic.clients = 1;
    spec.traffic.outstanding = 16;
    spec.traffic.count = 400;
    spec.traffic.timeout_seconds = generous_timeout_seconds;
    spec.generator.coalesce_us = coalesce_us;
    return run_checked(spec).result;
  }
};

TEST_P(coalescing_test, reads_are_put_off_by_default_against_a_slow_server) {
  EXPECT_EQ(load_spec{}.generator.coalesce_us, 1000u);  // on unless asked otherwise
  const run_result on = run(load_spec{}.generator.coalesce_us);
  EXPECT_EQ(on.responses_received, 400u) << summary(on);
  EXPECT_EQ(queries_ended(on), on.queries_sent) << summary(on);
  EXPECT_EQ(on.latency.count(), on.responses_received);
  EXPECT_EQ(on.coalesce_us, 1000u);
  EXPECT_GT(on.generator.reads_delayed, 0u) << summary(on);
  // No more than one delayed read per wake-up that brought answers.
  EXPECT_LE(on.generator.reads_delayed, on.responses_received);

  const run_result off = run(0);
  EXPECT_EQ(off.responses_received, 400u) << summary(off);
  EXPECT_EQ(off.coalesce_us, 0u);
  EXPECT_EQ(off.generator.reads_delayed, 0u);
}

INSTANTIATE_TEST_SUITE_P(transports, coalescing_test, ::testing::ValuesIn(coalescing_cases()),
                         [](const ::testing::TestParamInfo<coalescing_case>& c) {
                           return c.param.name;
                         });

}  // namespace
}  // namespace dnstransport::hostile
