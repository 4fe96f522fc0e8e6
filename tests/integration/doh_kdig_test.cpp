// The responder's DNS-over-HTTPS listener against an independent client: kdig (Knot DNS,
// Debian knot-dnsutils), POST and GET, verifying the responder's certificate. Skipped when
// kdig is not installed, except in CI (CI=true), where a missing kdig is a failure.
#include <dnstransport/server.hpp>

#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <dnstransport/tls.hpp>

#include "child_process.hpp"
#include "hostile_checks.hpp"
#include "in_ci.hpp"
#include "scratch_dir.hpp"

namespace dnstransport {
namespace {

using hostile::find_program;

using namespace std::chrono_literals;

class doh_kdig_test : public ::testing::TestWithParam<tls_backend> {
 protected:
  void SetUp() override {
    kdig_ = find_program("kdig");
    if (!kdig_) {
      if (hostile::in_ci()) FAIL() << "kdig is not installed (Debian: knot-dnsutils); CI needs it";
      GTEST_SKIP() << "kdig is not installed (Debian: knot-dnsutils)";
    }
  }

  server_options options() const {
    server_options o;
    o.listen[transport_kind::doh] = endpoint{"127.0.0.1", 0};
    o.tls_options.backend = GetParam();
    o.certificate_directory = directory_.path("certificate");
    return o;
  }

  // kdig against the responder, bounded in time (kdig's own timeout is shorter still).
  hostile::process_result kdig(const server& responder, const std::string& method_flag,
                               const std::string& name, const std::string& type) const {
    return hostile::run_process(
        *kdig_,
        {"@127.0.0.1", "-p", std::to_string(responder.port(transport_kind::doh)), method_flag,
         "+tls-ca=" + responder.certificate().certificate_file.string(), "+tls-hostname=localhost",
         "+timeout=5", "+retry=0", name, type},
        20s);
  }

 private:
  hostile::scratch directory_{"doh_kdig_test"};
  std::optional<std::string> kdig_;
};

TEST_P(doh_kdig_test, post_and_get_are_answered) {
  server responder(options());
  const auto post = kdig(responder, "+https", "www.example.com", "A");
  EXPECT_FALSE(post.timed_out);
  EXPECT_EQ(post.exit_code, 0) << post.out << post.err;
  EXPECT_NE(post.out.find("HTTP/2-POST"), std::string::npos) << post.out;
  EXPECT_NE(post.out.find("(status: 200)"), std::string::npos) << post.out;
  EXPECT_NE(post.out.find("status: NOERROR"), std::string::npos) << post.out;
  EXPECT_NE(post.out.find("IN\tA\t192.0.2.1"), std::string::npos) << post.out;

  const auto get = kdig(responder, "+https-get", "example.org", "A");
  EXPECT_FALSE(get.timed_out);
  EXPECT_EQ(get.exit_code, 0) << get.out << get.err;
  EXPECT_NE(get.out.find("HTTP/2-GET"), std::string::npos) << get.out;
  EXPECT_NE(get.out.find("(status: 200)"), std::string::npos) << get.out;
  EXPECT_NE(get.out.find("status: NOERROR"), std::string::npos) << get.out;
  EXPECT_NE(get.out.find("IN\tA\t192.0.2.1"), std::string::npos) << get.out;

  responder.stop();
  EXPECT_EQ(responder.stats().queries[transport_kind::doh], 2u);
  EXPECT_EQ(responder.stats().tls_handshakes_failed, 0u);
}

INSTANTIATE_TEST_SUITE_P(backends, doh_kdig_test, ::testing::ValuesIn(available_tls_backends()),
                         hostile::backend_name);

}  // namespace
}  // namespace dnstransport
