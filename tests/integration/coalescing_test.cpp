// Coalesced receiving (engine/read_coalescing.hpp), every transport: on by default where
// queries leave on a schedule (a rate), off by default in a closed loop (load.hpp says why),
// on in a closed loop when a delay is given, off everywhere with 0. A client with many queries
// in flight against a slow server puts its reads off, and every query still ends in one
// bucket. The responder spends 2 ms of CPU per answer against a client sending 1,000 q/s (at
// most 500 answers/s whatever the machine: the queries queue as long as the client sends
// faster than that), or 200 us against a closed loop of 16 in flight, so the client waits
// milliseconds for each answer, and a delay (a twentieth of that, at least 10 us) engages
// after the first answers. Over TCP the responder answers each read's queries in one write,
// so answers come in bursts (the queries that arrived while it worked on the last burst) and
// a delay engages after a burst that leaves queries in flight: at 1,000 q/s the 400 queries
// take 0.4 s to leave, so there are several bursts even when the responder's first read
// comes late (at 20,000 q/s they left within 20 ms: a ThreadSanitizer build's responder,
// reading late on a loaded machine, took them in one burst, and no read was put off).
#include <gtest/gtest.h>

#include <optional>
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
  // rate 0: a closed loop of 16 in flight.
  run_result run(std::optional<unsigned> coalesce_us, double rate) {
    const coalescing_case& c = GetParam();
    server_options options;
    options.listen[c.transport] = endpoint{"127.0.0.1", 0};
    options.tls_options.backend = c.backend;
    // At a rate, 2 ms: the generator need only send faster than 500 q/s (a ThreadSanitizer
    // build sent slower than 5,000 q/s, the limit 200 us would give, and nothing queued).
    options.cost_answer_us = rate > 0 ? 2000 : 200;
    if (c.transport != transport_kind::udp && c.transport != transport_kind::tcp) {
      options.certificate_directory = scratch_directory(("coalescing-" + c.name).c_str());
    }
    server responder(options);
    load_spec spec;
    spec.target.transport = c.transport;
    spec.target.port = responder.port(c.transport);
    spec.tls.backend = c.backend;
    spec.traffic.clients = 1;
    // At a rate, a query whose time comes while its client has `outstanding` in flight is
    // not sent: room for all 400.
    spec.traffic.outstanding = rate > 0 ? 1000 : 16;
    spec.traffic.count = 400;
    spec.traffic.timeout_seconds = generous_timeout_seconds;
    spec.traffic.rate = rate;
    spec.generator.coalesce_us = coalesce_us;
    return run_checked(spec).result;
  }
};

void expect_reads_put_off(const run_result& r, unsigned coalesce_us) {
  EXPECT_EQ(r.responses_received, 400u) << summary(r);
  EXPECT_EQ(queries_ended(r), r.queries_sent) << summary(r);
  EXPECT_EQ(r.latency.count(), r.responses_received);
  EXPECT_EQ(r.coalesce_us, coalesce_us);
  EXPECT_GT(r.generator.reads_delayed, 0u) << summary(r);
  // No more than one delayed read per wake-up that brought answers.
  EXPECT_LE(r.generator.reads_delayed, r.responses_received);
}

void expect_no_read_put_off(const run_result& r) {
  EXPECT_EQ(r.responses_received, 400u) << summary(r);
  EXPECT_EQ(r.coalesce_us, 0u);
  EXPECT_EQ(r.generator.reads_delayed, 0u);
}

TEST_P(coalescing_test, reads_are_put_off_by_default_when_queries_leave_on_a_schedule) {
  EXPECT_FALSE(load_spec{}.generator.coalesce_us.has_value());  // the default for the arrivals
  expect_reads_put_off(run(std::nullopt, 1000), generator_settings::default_coalesce_us);
  expect_no_read_put_off(run(0, 1000));
}

TEST_P(coalescing_test, a_closed_loop_reads_answer_by_answer_unless_a_delay_is_given) {
  expect_no_read_put_off(run(std::nullopt, 0));
  expect_reads_put_off(run(1000, 0), 1000);
  expect_no_read_put_off(run(0, 0));
}

INSTANTIATE_TEST_SUITE_P(transports, coalescing_test, ::testing::ValuesIn(coalescing_cases()),
                         [](const ::testing::TestParamInfo<coalescing_case>& c) {
                           return c.param.name;
                         });

}  // namespace
}  // namespace dnstransport::hostile
