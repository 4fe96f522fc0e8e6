// What the members of an MPI group send each other, without mpirun: fields and packed texts
// (every member's result, every member's host) survive the trip whatever they hold, and
// member 0's verdict at a start names the member that cannot run or the ones that said
// nothing.
#include "mpi/mpi_exchange.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace dnstransport::detail {
namespace {

TEST(mpi_exchange_test, split_fields_keeps_the_rest_of_the_text_in_the_last_field) {
  EXPECT_EQ(split_fields("ready\nhost-a\nbad flag\nsecond line", 3),
            (std::vector<std::string>{"ready", "host-a", "bad flag\nsecond line"}));
  EXPECT_EQ(split_fields("go\n\n", 3), (std::vector<std::string>{"go", "", ""}));
  // Fewer fields than asked for: as many as there are.
  EXPECT_EQ(split_fields("stop", 3), (std::vector<std::string>{"stop"}));
  EXPECT_EQ(split_fields("", 3), (std::vector<std::string>{""}));
}

TEST(mpi_exchange_test, packed_texts_come_back_whole_whatever_they_hold) {
  const std::vector<std::string> texts{"",       "{\"queries_sent\":10}", "two\nlines",
                                       "12\n34", std::string(1000, 'x'),  ""};
  const std::string packed = pack_texts(texts);
  EXPECT_EQ(unpack_texts(packed), texts);
  EXPECT_EQ(pack_texts({"ab", ""}), "2\nab0\n");
  EXPECT_TRUE(unpack_texts("").empty());
  EXPECT_TRUE(pack_texts({}).empty());
}

TEST(mpi_exchange_test, packed_texts_travel_inside_the_last_field) {
  const std::vector<std::string> hosts{"host-a", "host-b\n", ""};
  const auto fields = split_fields("go\n\n" + pack_texts(hosts), 3);
  ASSERT_EQ(fields.size(), 3u);
  EXPECT_EQ(fields[0], "go");
  EXPECT_EQ(unpack_texts(fields[2]), hosts);
}

TEST(mpi_exchange_test, a_member_is_named_by_rank_and_host_when_known) {
  const std::vector<std::string> hosts{"host-a", ""};
  EXPECT_EQ(member_name(0, hosts), "rank 0 on host-a");
  EXPECT_EQ(member_name(1, hosts), "rank 1");
  EXPECT_EQ(member_name(5, hosts), "rank 5");
}

const std::vector<std::string> three_hosts{"host-a", "host-b", "host-c"};

TEST(mpi_exchange_test, every_member_ready_is_go) {
  const auto v = decide_start({"ready", "ready", "ready"}, {"", "", ""}, three_hosts, 5);
  EXPECT_EQ(v.verdict, "go");
  EXPECT_EQ(v.message, "");
  EXPECT_FALSE(v.members_missing);
}

TEST(mpi_exchange_test, one_member_asked_to_stop_stops_all) {
  const auto v = decide_start({"ready", "stop", "ready"}, {"", "", ""}, three_hosts, 5);
  EXPECT_EQ(v.verdict, "stop");
  EXPECT_FALSE(v.members_missing);
}

TEST(mpi_exchange_test, the_first_member_that_cannot_run_fails_all_with_its_reason) {
  const auto v =
      decide_start({"ready", "error", "error"}, {"", "no such file", "other"}, three_hosts, 5);
  EXPECT_EQ(v.verdict, "fail");
  EXPECT_EQ(v.message, "rank 1 on host-b: no such file");
  EXPECT_FALSE(v.members_missing);
  // A member that cannot run is named before the ones that said nothing, and the group is
  // not broken by them: every member that spoke gets the answer.
  const auto w =
      decide_start({"ready", std::nullopt, "error"}, {"", "", "bad rate"}, {"host-a", "", ""}, 5);
  EXPECT_EQ(w.verdict, "fail");
  EXPECT_EQ(w.message, "rank 2: bad rate");
  EXPECT_FALSE(w.members_missing);
}

TEST(mpi_exchange_test, members_that_said_nothing_fail_all_and_break_the_group) {
  const auto one = decide_start({"ready", std::nullopt, "stop"}, {"", "", ""}, three_hosts, 2.5);
  EXPECT_EQ(one.verdict, "fail");
  EXPECT_EQ(one.message,
            "rank 1 did not get ready within 2.5 s (set-up hung, or the process failed or was "
            "killed)");
  EXPECT_TRUE(one.members_missing);
  const auto two =
      decide_start({"ready", std::nullopt, std::nullopt}, {"", "", ""}, three_hosts, 10);
  EXPECT_EQ(two.message.substr(0, two.message.find(" did")), "ranks 1, 2");
  EXPECT_TRUE(two.members_missing);
}

}  // namespace
}  // namespace dnstransport::detail
