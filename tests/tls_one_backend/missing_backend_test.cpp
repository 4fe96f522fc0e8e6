#include "transport/tls/tls_backend.hpp"

// A build without one of the two TLS libraries refuses it by name and says which it has; it
// never falls back to the other. Compiled with exactly one DNSTRANSPORT_HAVE_ definition:
// into the unit tests of a build that lacks a library, and in a build with both into a
// program per library, built from the library's TLS files without the other's
// (tests/CMakeLists.txt), so that every build, CI's included, runs these tests.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <fmt/format.h>

#include <dnstransport/error.hpp>
#include <dnstransport/tls.hpp>

namespace dnstransport::detail {
namespace {

#if defined(DNSTRANSPORT_HAVE_OPENSSL) && defined(DNSTRANSPORT_HAVE_GNUTLS)
#error "compiled with both TLS libraries: there is no missing one to refuse"
#elif defined(DNSTRANSPORT_HAVE_OPENSSL)
constexpr tls_backend compiled_backend = tls_backend::openssl;
constexpr tls_backend missing_backend = tls_backend::gnutls;
#elif defined(DNSTRANSPORT_HAVE_GNUTLS)
constexpr tls_backend compiled_backend = tls_backend::gnutls;
constexpr tls_backend missing_backend = tls_backend::openssl;
#else
#error "a build without TLS is not supported"
#endif

TEST(tls_missing_backend_test, only_the_compiled_backend_is_available) {
  EXPECT_EQ(available_tls_backends(), std::vector<tls_backend>{compiled_backend});
}

TEST(tls_missing_backend_test, the_missing_backend_is_refused_naming_the_available_one) {
  const std::string expected =
      fmt::format("TLS backend {} is not compiled into this build (available: {})",
                  tls_backend_name(missing_backend), tls_backend_name(compiled_backend));
  tls_client_options client;
  client.backend = missing_backend;
  try {
    make_tls_client_context(client);
    ADD_FAILURE() << "a client context of the missing backend was made";
  } catch (const setup_error& e) {
    EXPECT_EQ(std::string(e.what()), expected);
  }
  // The server refuses before it reads the files.
  tls_server_options server;
  server.backend = missing_backend;
  server.certificate_file = "/nonexistent/certificate.pem";
  server.key_file = "/nonexistent/key.pem";
  try {
    make_tls_server_context(server);
    ADD_FAILURE() << "a server context of the missing backend was made";
  } catch (const setup_error& e) {
    EXPECT_EQ(std::string(e.what()), expected);
  }
}

TEST(tls_missing_backend_test, the_compiled_backend_makes_a_context) {
  tls_client_options client;
  client.backend = compiled_backend;
  EXPECT_NE(make_tls_client_context(client), nullptr);
}

}  // namespace
}  // namespace dnstransport::detail
