// run_load, run_sweep and run_search as members of a group (what mpirun ranks are), with the
// members as threads of this process and the group as shared memory: each member sends its
// share, all start together, every member ends with the same merged result, a member that
// cannot run stops the others with its reason, and one that never reports is named. The
// MPI group itself is tested through mpirun in mpi_test.cpp.
#include <dnstransport/group.hpp>

#include <gtest/gtest.h>

#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include <dnstransport/error.hpp>
#include <dnstransport/load.hpp>
#include <dnstransport/search.hpp>
#include <dnstransport/server.hpp>
#include <dnstransport/sweep.hpp>

namespace dnstransport {
namespace {

// What the members share: one state per round (a start or a gather), in the order every
// member calls them.
struct rendezvous {
  explicit rendezvous(unsigned members) : size(members) {}
  struct round_state {
    unsigned arrived = 0;
    std::map<unsigned, std::string> errors;  // by rank
    bool stopping = false;
    std::vector<std::optional<run_result>> results;
  };
  const unsigned size;
  std::mutex mutex;
  std::condition_variable changed;
  std::map<unsigned, round_state> rounds;
};

// A member waits at most this long for the others (the group decides what its wait means;
// a test needs no more).
constexpr double longest_wait_seconds = 2;

class thread_member final : public load_group {
 public:
  thread_member(rendezvous& shared, unsigned rank) : shared_(shared), rank_(rank) {}
  unsigned rank() const noexcept override { return rank_; }
  unsigned size() const noexcept override { return shared_.size; }
  std::vector<std::string> hosts() const override {
    std::vector<std::string> out;
    for (unsigned r = 0; r < shared_.size; ++r) out.push_back("thread-" + std::to_string(r));
    return out;
  }
  bool broken() const noexcept override { return broken_; }

  bool start_together(const std::string& error, bool stopping, double wait_seconds) override {
    std::unique_lock lock(shared_.mutex);
    auto& round = shared_.rounds[next_++];
    if (!error.empty()) round.errors[rank_] = error;
    round.stopping = round.stopping || stopping;
    if (!arrive(lock, round, wait_seconds)) {
      broken_ = true;
      throw setup_error("a member did not get ready");
    }
    if (!round.errors.empty()) {
      const auto& [who, what] = *round.errors.begin();
      throw setup_error(fmt::format("rank {}: {}", who, what));
    }
    return !round.stopping;
  }

  std::vector<std::optional<run_result>> gather(const run_result& mine,
                                                double wait_seconds) override {
    std::unique_lock lock(shared_.mutex);
    auto& round = shared_.rounds[next_++];
    round.results.resize(shared_.size);
    round.results[rank_] = mine;
    if (!arrive(lock, round, wait_seconds)) broken_ = true;
    return round.results;
  }

 private:
  // Counts this member in and waits until every member is (false: the wait ended first).
  bool arrive(std::unique_lock<std::mutex>& lock, rendezvous::round_state& round,
              double wait_seconds) {
    ++round.arrived;
    shared_.changed.notify_all();
    return shared_.changed.wait_for(
        lock, std::chrono::duration<double>(std::min(wait_seconds, longest_wait_seconds)),
        [&] { return round.arrived == shared_.size; });
  }

  rendezvous& shared_;
  unsigned rank_;
  unsigned next_ = 0;
  bool broken_ = false;
};

class load_group_test : public ::testing::Test {
 protected:
  load_group_test() : responder_(options()) {}

  static server_options options() {
    server_options o;
    o.listen[transport_kind::udp] = endpoint{"127.0.0.1", 0};
    o.listen[transport_kind::tcp] = endpoint{"127.0.0.1", 0};
    o.certificate_directory =
        (std::filesystem::path(::testing::TempDir()) / ("group-" + std::to_string(getpid())))
            .string();
    return o;
  }

  load_spec spec(transport_kind t) const {
    load_spec s;
    s.target.transport = t;
    s.target.port = t == transport_kind::udp ? responder_.port(transport_kind::udp)
                                             : responder_.port(transport_kind::tcp);
    s.traffic.clients = 5;
    s.traffic.outstanding = 4;
    s.traffic.count = 999;
    s.traffic.timeout_seconds = 10;
    return s;
  }

  // Runs `body(rank, member)` on `members` threads, each with its own member of one group.
  template <typename Body>
  static void as_members(unsigned members, Body body) {
    rendezvous shared(members);
    std::vector<std::thread> threads;
    for (unsigned r = 0; r < members; ++r) {
      threads.emplace_back([&, r] {
        try {
          body(r, std::make_shared<thread_member>(shared, r));
        } catch (const std::exception& e) {
          ADD_FAILURE() << "member " << r << ": " << e.what();
        }
      });
    }
    for (auto& t : threads) t.join();
  }

  server responder_;
};

TEST_F(load_group_test, every_member_sends_its_share_and_gets_the_same_merged_result) {
  for (const transport_kind t : {transport_kind::udp, transport_kind::tcp}) {
    SCOPED_TRACE(std::string(transport_name(t)));
    std::vector<run_result> results(3);
    as_members(3, [&](unsigned rank, std::shared_ptr<load_group> member) {
      load_spec s = spec(t);
      s.group = member;
      results[rank] = run_load(s);
    });
    const run_result& r = results[0];
    // 999 queries over 5 clients in 3 members: 2, 2, 1 clients; 333 queries each.
    EXPECT_EQ(r.queries_sent, 999u);
    EXPECT_EQ(r.responses_received, 999u) << r.connections.first_failure;
    EXPECT_EQ(r.latency.count(), 999u);
    EXPECT_EQ(r.clients, 5u);
    ASSERT_EQ(r.ranks.size(), 3u);
    std::uint64_t sum = 0;
    for (unsigned k = 0; k < 3; ++k) {
      EXPECT_EQ(r.ranks[k].clients, k < 2 ? 2u : 1u);
      EXPECT_EQ(r.ranks[k].responses_received, 333u);
      EXPECT_EQ(r.ranks[k].host, "thread-" + std::to_string(k));
      sum += r.ranks[k].responses_received;
    }
    EXPECT_EQ(sum, r.responses_received);
    if (t == transport_kind::tcp) {
      EXPECT_EQ(r.connections.opened, 5u);
    }
    for (unsigned k = 1; k < 3; ++k) {
      EXPECT_EQ(results[k].responses_received, r.responses_received);
      EXPECT_EQ(results[k].ranks.size(), 3u);
    }
  }
}

TEST_F(load_group_test, a_member_that_cannot_run_stops_every_member_with_its_reason) {
  std::vector<std::string> errors(2);
  std::vector<std::vector<std::string>> named(2);
  as_members(2, [&](unsigned rank, std::shared_ptr<load_group> member) {
    load_spec s = spec(transport_kind::udp);
    s.group = member;
    if (rank == 1) s.connections.sources = {"not-an-address"};
    try {
      run_load(s);
    } catch (const setup_error& e) {
      errors[rank] = e.what();
      // The setting stays marked across members, for each caller to name in its own words.
      named[rank] = e.settings();
    }
  });
  for (const auto& e : errors) {
    EXPECT_EQ(e,
              "rank 1: load_spec::connections.sources: \"not-an-address\" is neither an IP "
              "address nor a range (ADDRESS/PREFIX, e.g. 127.0.0.0/16 or fd00::/112)");
  }
  for (const auto& settings : named) {
    EXPECT_EQ(settings, std::vector<std::string>{"load_spec::connections.sources"});
  }
}

TEST_F(load_group_test, a_member_that_sends_no_result_is_named_and_the_others_counted) {
  std::vector<run_result> results(3);
  as_members(3, [&](unsigned rank, std::shared_ptr<load_group> member) {
    if (rank == 2) {
      // Starts with the others, then is gone (killed) before its result.
      EXPECT_TRUE(member->start_together({}, false, 10));
      return;
    }
    load_spec s = spec(transport_kind::udp);
    s.group = member;
    results[rank] = run_load(s);
    EXPECT_TRUE(member->broken());
  });
  for (unsigned rank = 0; rank < 2; ++rank) {
    const run_result& r = results[rank];
    ASSERT_EQ(r.ranks.size(), 3u);
    EXPECT_EQ(r.ranks_missing(), 1u);
    EXPECT_FALSE(r.ranks[2].reported);
    // Members 0 and 1: 2 clients and 333 queries each.
    EXPECT_EQ(r.responses_received, 666u);
    EXPECT_EQ(r.clients, 4u);
    EXPECT_EQ(r.warnings.back(),
              "rank 2 on thread-2 sent no result (it failed, hung or was killed): the figures "
              "are those of the 2 other ranks");
  }
}

TEST_F(load_group_test, a_sweep_steps_every_member_through_the_same_points) {
  std::vector<sweep_result> results(2);
  as_members(2, [&](unsigned rank, std::shared_ptr<load_group> member) {
    sweep_plan plan;
    plan.base = spec(transport_kind::udp);
    plan.base.traffic.count = 0;
    plan.base.group = member;
    plan.transports = {sweep_transport{transport_kind::udp, std::nullopt}};
    plan.clients = {2, 4};
    plan.queries_per_connection = {0};
    plan.repeats = 2;
    plan.duration_seconds = 0.2;
    plan.pause_seconds = 0;
    plan.ports[transport_kind::udp] = responder_.port(transport_kind::udp);
    results[rank] = run_sweep(plan);
  });
  for (const auto& r : results) {
    ASSERT_EQ(r.points.size(), 2u);
    EXPECT_FALSE(r.interrupted);
    for (const auto& p : r.points) {
      ASSERT_EQ(p.repeats.size(), 2u);
      for (const auto& run : p.repeats) {
        EXPECT_EQ(run.clients, p.point.clients);
        EXPECT_EQ(run.ranks.size(), 2u);
        EXPECT_GT(run.responses_received, 0u);
        EXPECT_EQ(run.ranks[0].responses_received + run.ranks[1].responses_received,
                  run.responses_received);
      }
    }
  }
  // Both members hold the same merged figures.
  EXPECT_EQ(results[0].points[1].repeats[1].responses_received,
            results[1].points[1].repeats[1].responses_received);
}

TEST_F(load_group_test, a_search_takes_the_same_steps_on_every_member) {
  std::vector<search_result> results(2);
  as_members(2, [&](unsigned rank, std::shared_ptr<load_group> member) {
    search_spec s;
    s.load = spec(transport_kind::udp);
    s.load.traffic.count = 0;
    s.load.traffic.clients = 2;
    s.load.group = member;
    s.start_rate = 2000;
    s.max_rate = 8000;
    s.step_seconds = 0.3;
    s.settle_seconds = 0;
    s.repeats = 1;
    s.precision = 0.5;
    results[rank] = run_search(s);
  });
  ASSERT_FALSE(results[0].steps.empty());
  ASSERT_EQ(results[0].steps.size(), results[1].steps.size());
  for (std::size_t i = 0; i < results[0].steps.size(); ++i) {
    EXPECT_EQ(results[0].steps[i].rate, results[1].steps[i].rate);
    EXPECT_EQ(results[0].steps[i].answered, results[1].steps[i].answered);
    EXPECT_EQ(results[0].steps[i].run.ranks.size(), 2u);
  }
  EXPECT_EQ(results[0].max_rate, results[1].max_rate);
}

}  // namespace
}  // namespace dnstransport
