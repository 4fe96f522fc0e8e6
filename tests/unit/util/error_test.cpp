// Setup errors that name settings: what() names them by their paths, a program renders them
// with its own names (the CLI: its flags), and a message without settings stays as written.
#include <dnstransport/error.hpp>

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include <dnstransport/load.hpp>

namespace dnstransport {
namespace {

std::string flag_for(std::string_view path) {
  if (path == "load_spec::traffic.rate") return "--rate";
  if (path == "load_spec::traffic.client_rate") return "--client-rate";
  return "?";
}

TEST(error_test, what_names_settings_by_their_paths) {
  const setup_error e(setting("load_spec::traffic.rate") + " and " +
                      setting("load_spec::traffic.client_rate") + " both set the rate");
  EXPECT_STREQ(e.what(),
               "load_spec::traffic.rate and load_spec::traffic.client_rate both set the rate");
  ASSERT_EQ(e.settings().size(), 2u);
  EXPECT_EQ(e.settings()[0], "load_spec::traffic.rate");
  EXPECT_EQ(e.settings()[1], "load_spec::traffic.client_rate");
  EXPECT_EQ(e.message_naming(flag_for), "--rate and --client-rate both set the rate");
}

TEST(error_test, a_warnings_settings_are_named_by_the_callers_names_or_their_paths) {
  const std::string marked = "raise " + setting("load_spec::traffic.rate");
  EXPECT_EQ(naming_settings(marked, flag_for), "raise --rate");
  EXPECT_EQ(naming_settings(marked, {}), "raise load_spec::traffic.rate");
  EXPECT_EQ(naming_settings("nothing marked", flag_for), "nothing marked");
}

TEST(error_test, a_message_without_settings_is_kept_as_written) {
  const setup_error e(std::string("cannot read \"queries.txt\": No such file or directory"));
  EXPECT_STREQ(e.what(), "cannot read \"queries.txt\": No such file or directory");
  EXPECT_TRUE(e.settings().empty());
  EXPECT_EQ(e.message_naming(flag_for), e.what());
  // An unpaired mark is text, not a setting.
  const setup_error unpaired(std::string("a \x1e b"));
  EXPECT_TRUE(unpaired.settings().empty());
  EXPECT_STREQ(unpaired.what(), "a \x1e b");
}

// The load's rules name the setting at fault by its path in load_spec.
TEST(error_test, validate_names_the_setting_at_fault) {
  load_spec spec;
  spec.traffic.rate = 100;
  spec.traffic.client_rate = 10;
  try {
    validate(spec);
    ADD_FAILURE() << "both rates accepted";
  } catch (const setup_error& e) {
    EXPECT_EQ(e.settings(), (std::vector<std::string>{"load_spec::traffic.rate",
                                                      "load_spec::traffic.client_rate"}));
    EXPECT_EQ(e.message_naming(flag_for),
              "--rate and --client-rate both set the load's rate (in total, or per client): give "
              "one");
  }
  spec = load_spec{};
  spec.generator.threads = 0;
  try {
    validate(spec);
    ADD_FAILURE() << "no threads accepted";
  } catch (const setup_error& e) {
    EXPECT_STREQ(e.what(), "load_spec::generator.threads must be at least 1");
  }
}

}  // namespace
}  // namespace dnstransport
