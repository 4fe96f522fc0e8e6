// The responder's DNS-over-QUIC listener against an independent client: kdig +quic (Knot
// DNS 3.2, Debian knot-dnsutils, on ngtcp2 and GnuTLS of its own), verifying the responder's
// certificate. Skipped when kdig is not installed, except in CI (CI=true), where a missing
// kdig is a failure.
#include <dnstransport/server.hpp>

#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "child_process.hpp"
#include "scratch_dir.hpp"

namespace dnstransport {
namespace {

using hostile::find_program;

using namespace std::chrono_literals;

bool in_ci() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string_view(ci) == "true";
}

std::size_t count_of(const std::string& text, std::string_view what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class doq_kdig_test : public ::testing::Test {
 protected:
  void SetUp() override {
#ifndef DNSTRANSPORT_HAVE_DOQ
    GTEST_SKIP() << "built without GnuTLS, so without DNS over QUIC";
#endif
    kdig_ = find_program("kdig");
    if (!kdig_) {
      if (in_ci()) FAIL() << "kdig is not installed (Debian: knot-dnsutils); CI needs it";
      GTEST_SKIP() << "kdig is not installed (Debian: knot-dnsutils)";
    }
  }

  server_options options(const std::string& address = "127.0.0.1") const {
    server_options o;
    o.listen[transport_kind::doq] = endpoint{address, 0};
    o.certificate_directory = directory_.path("certificate");
    return o;
  }

  // kdig +quic against the responder, bounded in time (kdig's own timeout is shorter still).
  // The TLS options come before +quic, which would otherwise fall back to DoT over TCP.
  hostile::process_result kdig(const server& responder, const std::string& at,
                               const std::vector<std::string>& questions) const {
    std::vector<std::string> arguments{
        "@" + at,
        "-p",
        std::to_string(responder.port(transport_kind::doq)),
        "+tls-ca=" + responder.certificate().certificate_file.string(),
        "+tls-hostname=localhost",
        "+quic",
        "+timeout=5",
        "+retry=0"};
    arguments.insert(arguments.end(), questions.begin(), questions.end());
    return hostile::run_process(*kdig_, arguments, 30s);
  }

 private:
  hostile::scratch directory_{"doq_kdig_test"};
  std::optional<std::string> kdig_;
};

TEST_F(doq_kdig_test, an_a_query_and_a_nodata_query_are_answered) {
  server responder(options());
  ASSERT_NE(responder.port(transport_kind::doq), 0);
  const auto a = kdig(responder, "127.0.0.1", {"www.example.com", "A"});
  EXPECT_FALSE(a.timed_out);
  EXPECT_EQ(a.exit_code, 0) << a.out << a.err;
  EXPECT_NE(a.out.find(";; QUIC session (QUICv1)-(TLS1.3)"), std::string::npos) << a.out;
  // RFC 9250, section 4.2.1: the DNS id is 0 on DoQ, and the answer keeps it.
  EXPECT_NE(a.out.find("status: NOERROR; id: 0"), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("ANSWER: 1;"), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("www.example.com."), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("IN\tA\t192.0.2.1"), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("(UDP)"), std::string::npos) << a.out;

  // The responder has no records of other types: NOERROR with no answer (NODATA).
  const auto txt = kdig(responder, "127.0.0.1", {"nodata.example", "TXT"});
  EXPECT_FALSE(txt.timed_out);
  EXPECT_EQ(txt.exit_code, 0) << txt.out << txt.err;
  EXPECT_NE(txt.out.find("status: NOERROR; id: 0"), std::string::npos) << txt.out;
  EXPECT_NE(txt.out.find("ANSWER: 0;"), std::string::npos) << txt.out;
  EXPECT_NE(txt.out.find("nodata.example."), std::string::npos) << txt.out;

  responder.stop();
  const server_stats stats = responder.stats();
  EXPECT_EQ(stats.queries[transport_kind::doq], 2u);
  EXPECT_EQ(stats.connections_accepted, 2u);
  EXPECT_EQ(stats.tls_handshakes_failed, 0u);
  EXPECT_EQ(stats.malformed_queries, 0u);
  EXPECT_EQ(stats.doq_packets_dropped, 0u);
}

TEST_F(doq_kdig_test, several_questions_share_one_connection) {
  server responder(options());
  // +keepopen: kdig asks each question on the next stream of the same connection. kdig 3.2
  // only sends the next query once the previous one is acknowledged, which the responder
  // does in the answer's own packet.
  const auto r = kdig(responder, "127.0.0.1",
                      {"+keepopen", "a.example", "A", "b.example", "AAAA", "c.example", "A"});
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(count_of(r.out, "status: NOERROR; id: 0"), 3u) << r.out;
  EXPECT_NE(r.out.find("a.example.          \t300\tIN\tA\t192.0.2.1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("IN\tAAAA\t2001:db8::1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("c.example.          \t300\tIN\tA\t192.0.2.1"), std::string::npos) << r.out;
  responder.stop();
  EXPECT_EQ(responder.stats().queries[transport_kind::doq], 3u);
  EXPECT_EQ(responder.stats().connections_accepted, 1u);
  EXPECT_EQ(responder.stats().tls_handshakes_failed, 0u);
}

// An independent client follows the responder's Retry (address validation) and checks the
// transport parameters that prove the Retry came from the server it then talks to.
TEST_F(doq_kdig_test, kdig_follows_a_retry) {
  server_options o = options();
  o.doq_retry = true;
  server responder(o);
  const auto a = kdig(responder, "127.0.0.1", {"retry.example", "A"});
  EXPECT_FALSE(a.timed_out);
  EXPECT_EQ(a.exit_code, 0) << a.out << a.err;
  EXPECT_NE(a.out.find("IN\tA\t192.0.2.1"), std::string::npos) << a.out;
  responder.stop();
  EXPECT_EQ(responder.stats().doq_retries, 1u);
  EXPECT_EQ(responder.stats().connections_accepted, 1u);
  EXPECT_EQ(responder.stats().queries[transport_kind::doq], 1u);
  EXPECT_EQ(responder.stats().tls_handshakes_failed, 0u);
}

// On a wildcard address each datagram's destination (IP_PKTINFO / IPV6_PKTINFO) is the
// local address of its path, and the answers leave from it.
TEST_F(doq_kdig_test, a_wildcard_listener_answers_from_the_address_asked) {
  {
    server responder(options("0.0.0.0"));
    const auto r = kdig(responder, "127.0.0.1", {"v4.example", "A"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("IN\tA\t192.0.2.1"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("From 127.0.0.1@"), std::string::npos) << r.out;
  }
  server responder(options("::"));
  const auto r = kdig(responder, "::1", {"v6.example", "AAAA"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("IN\tAAAA\t2001:db8::1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("From ::1@"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace dnstransport
