#include "transport/doh/server_doh_session.hpp"

#include <gtest/gtest.h>

namespace dnstransport::detail {
namespace {

TEST(server_doh_session_test, target_splits_at_the_first_question_mark) {
  EXPECT_EQ(split_doh_target("/dns-query").path, "/dns-query");
  EXPECT_EQ(split_doh_target("/dns-query").query, "");
  EXPECT_EQ(split_doh_target("/dns-query?dns=AAAB").path, "/dns-query");
  EXPECT_EQ(split_doh_target("/dns-query?dns=AAAB").query, "dns=AAAB");
  EXPECT_EQ(split_doh_target("/a?b?c").query, "b?c");
}

TEST(server_doh_session_test, dns_parameter_is_found_among_others) {
  EXPECT_EQ(doh_dns_parameter("dns=AAAB"), "AAAB");
  EXPECT_EQ(doh_dns_parameter("ct=x&dns=AAAB&y=1"), "AAAB");
  EXPECT_EQ(doh_dns_parameter("dns="), "");
  EXPECT_FALSE(doh_dns_parameter(""));
  EXPECT_FALSE(doh_dns_parameter("xdns=AAAB"));
  EXPECT_FALSE(doh_dns_parameter("ct=x&dnsx=1"));
}

TEST(server_doh_session_test, media_type_ignores_case_and_parameters) {
  EXPECT_TRUE(is_doh_media_type("application/dns-message"));
  EXPECT_TRUE(is_doh_media_type("Application/DNS-Message"));
  EXPECT_TRUE(is_doh_media_type("application/dns-message ; charset=x"));
  EXPECT_FALSE(is_doh_media_type("application/dns-messages"));
  EXPECT_FALSE(is_doh_media_type("text/plain"));
  EXPECT_FALSE(is_doh_media_type(""));
}

}  // namespace
}  // namespace dnstransport::detail
