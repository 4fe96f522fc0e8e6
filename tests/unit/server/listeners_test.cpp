// The responder's listeners: what they share is made once per responder and only for the
// listeners asked for, their settings are refused before anything is bound, and a listener
// not asked for has no port.
#include "server/listeners.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <unistd.h>

#include <dnstransport/error.hpp>
#include <dnstransport/server.hpp>

namespace dnstransport::detail {
namespace {

std::string scratch(const char* name) {
  return (std::filesystem::path(::testing::TempDir()) /
          (std::string(name) + "-" + std::to_string(::getpid())))
      .string();
}

std::string setup_error_of(const server_options& options) {
  try {
    make_listener_contexts(options);
  } catch (const setup_error& e) {
    return e.what();
  }
  return "no setup_error";
}

TEST(listeners_test, plain_listeners_share_nothing_and_need_no_certificate) {
  server_options o;
  o.listen[transport_kind::udp] = endpoint{"127.0.0.1", 0};
  o.listen[transport_kind::tcp] = endpoint{"127.0.0.1", 0};
  const listener_contexts c = make_listener_contexts(o);
  EXPECT_TRUE(c.certificate.certificate_file.empty());
  EXPECT_EQ(c.shared[transport_kind::tls], nullptr);
  EXPECT_EQ(c.shared[transport_kind::doh], nullptr);
}

TEST(listeners_test, tls_listeners_share_one_generated_certificate) {
  server_options o;
  o.listen[transport_kind::tls] = endpoint{"127.0.0.1", 0};
  o.listen[transport_kind::doh] = endpoint{"127.0.0.1", 0};
  o.certificate_directory = scratch("listeners-certificate");
  const listener_contexts c = make_listener_contexts(o);
  EXPECT_TRUE(std::filesystem::exists(c.certificate.certificate_file));
  EXPECT_TRUE(std::filesystem::exists(c.certificate.key_file));
  EXPECT_NE(c.shared[transport_kind::tls], nullptr);
  EXPECT_NE(c.shared[transport_kind::doh], nullptr);
}

TEST(listeners_test, settings_of_the_listeners_asked_for_are_checked_before_any_is_made) {
  server_options o;
  o.listen[transport_kind::doh] = endpoint{"127.0.0.1", 0};
  o.doh_path = "dns-query";
  EXPECT_NE(setup_error_of(o).find("server_options::doh_path"), std::string::npos);
  o.doh_path = "/dns-query";
  o.doh_max_streams = 0;
  EXPECT_NE(setup_error_of(o).find("server_options::doh_max_streams"), std::string::npos);
  o.doh_max_streams = 100;
  o.tls_options.certificate_file = "cert.pem";
  EXPECT_NE(setup_error_of(o).find("both a TLS certificate and its key"), std::string::npos);
  // Settings of a listener not asked for are not its concern.
  server_options udp_only;
  udp_only.listen[transport_kind::udp] = endpoint{"127.0.0.1", 0};
  udp_only.doh_path = "dns-query";
  EXPECT_EQ(setup_error_of(udp_only), "no setup_error");
}

TEST(listeners_test, listeners_asked_for_have_ports_and_an_absent_listener_has_none) {
  server_options o;
  o.threads = 3;
  o.listen[transport_kind::udp] = endpoint{"127.0.0.1", 0};
  o.listen[transport_kind::tcp] = endpoint{"127.0.0.1", 0};
  server responder(o);
  EXPECT_NE(responder.port(transport_kind::udp), 0);
  EXPECT_NE(responder.port(transport_kind::tcp), 0);
  EXPECT_EQ(responder.port(transport_kind::tls), 0);
  EXPECT_EQ(responder.ports()[transport_kind::udp], responder.port(transport_kind::udp));
}

TEST(listeners_test, a_listener_address_that_is_no_ip_address_is_refused_naming_it) {
  server_options o;
  o.listen[transport_kind::tcp] = endpoint{"localhost", 0};
  try {
    server responder(o);
    ADD_FAILURE() << "no setup_error";
  } catch (const setup_error& e) {
    EXPECT_NE(std::string(e.what()).find("the tcp listener: \"localhost:0\" is not an IP address"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace dnstransport::detail
