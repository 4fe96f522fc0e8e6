// UDP and TCP from AF_XDP sockets (run --xdp), in two network namespaces the test makes and
// joins with a veth pair: the generator's end in one, `dnstransport serve` (the kernel's
// sockets) in the other. Every query sent over XDP is answered and counted as over kernel
// sockets; on a
// two-queue veth, answers on either queue reach their client; the XDP program is gone after
// the run; bad set-ups are clear errors (exit 2). Needs root and iproute2; the traffic stays
// inside the namespaces.
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <boost/json.hpp>

#include "child_process.hpp"
#include "cli_runs.hpp"
#include "scratch_dir.hpp"

namespace dnstransport::hostile {
namespace {

using namespace std::chrono_literals;

// ip (iproute2), by its path (run_process does not search $PATH).
std::string xdp_test_ip() {
  return find_program("ip").value_or("/usr/sbin/ip");
}

// Two namespaces joined by a veth pair of `queues` queues: "a" (the generator, 10.213.Q.1 and
// fd00:213:Q::1) and "b" (the responder, 10.213.Q.2 and fd00:213:Q::2), removed with the
// object. The IPv6 addresses skip duplicate address detection (usable at once).
class xdp_test_link {
 public:
  explicit xdp_test_link(unsigned queues)
      : id_(fmt::format("{}q{}", getpid() % 100000, queues)),
        a_("dtxa" + id_),
        b_("dtxb" + id_),
        veth_a_("xa" + id_),
        veth_b_("xb" + id_),
        subnet_(fmt::format("10.213.{}", queues)),
        subnet6_(fmt::format("fd00:213:{}::", queues)) {
    ip({"netns", "add", a_});
    ip({"netns", "add", b_});
    const std::string q = std::to_string(queues);
    ip({"link", "add",  veth_a_, "netns", a_, "numtxqueues", q, "numrxqueues", q, "type", "veth",
        "peer", "name", veth_b_, "netns", b_, "numtxqueues", q, "numrxqueues", q});
    ip({"-n", a_, "addr", "add", subnet_ + ".1/24", "dev", veth_a_});
    ip({"-n", b_, "addr", "add", subnet_ + ".2/24", "dev", veth_b_});
    ip({"-n", a_, "addr", "add", subnet6_ + "1/64", "dev", veth_a_, "nodad"});
    ip({"-n", b_, "addr", "add", subnet6_ + "2/64", "dev", veth_b_, "nodad"});
    for (const auto& [ns, dev] : {std::pair{a_, veth_a_}, std::pair{b_, veth_b_}}) {
      ip({"-n", ns, "link", "set", dev, "up"});
      ip({"-n", ns, "link", "set", "lo", "up"});
    }
  }
  ~xdp_test_link() {
    run_process(xdp_test_ip(), {"netns", "del", a_}, 10s);
    run_process(xdp_test_ip(), {"netns", "del", b_}, 10s);
  }
  xdp_test_link(const xdp_test_link&) = delete;
  xdp_test_link& operator=(const xdp_test_link&) = delete;

  const std::string& interface() const noexcept { return veth_a_; }
  std::string server() const { return subnet_ + ".2"; }
  std::string server6() const { return subnet6_ + "2"; }
  // The tool run in namespace a (the generator's), to its end.
  process_result in_a(const std::vector<std::string>& arguments) const {
    std::vector<std::string> all{"netns", "exec", a_, cli};
    all.insert(all.end(), arguments.begin(), arguments.end());
    return run_process(xdp_test_ip(), all, 60s);
  }
  // The same as nobody (setpriv).
  process_result in_a_as_nobody(const std::vector<std::string>& arguments) const {
    std::vector<std::string> all{"netns", "exec",    a_,      "setpriv",        "--reuid",
                                 "65534", "--regid", "65534", "--clear-groups", cli};
    all.insert(all.end(), arguments.begin(), arguments.end());
    return run_process(xdp_test_ip(), all, 60s);
  }
  // `dnstransport serve` in namespace b on the IPv4 (or IPv6) address, UDP and TCP port 53,
  // listening when this returns.
  std::unique_ptr<child_process> serve(bool v6 = false) const {
    const std::string at = v6 ? "[" + server6() + "]:53" : server() + ":53";
    auto s = std::make_unique<child_process>(
        xdp_test_ip(),
        std::vector<std::string>{"netns", "exec", b_, cli, "serve", "--listen", at, "--tcp", at});
    EXPECT_TRUE(s->wait_for_stdout("tcp", 20s)) << s->stderr_so_far();
    return s;
  }
  // What `ip link show` says of the generator's end.
  std::string link_state() const {
    return run_process(xdp_test_ip(), {"-n", a_, "link", "show", veth_a_}, 10s).out;
  }
  // One more address on the generator's end (10.213.Q.N/24).
  std::string add_generator_address(unsigned n) const {
    const std::string address = fmt::format("{}.{}", subnet_, n);
    ip({"-n", a_, "addr", "add", address + "/24", "dev", veth_a_});
    return address;
  }
  // The responder's neighbour table (`ip neigh show`): the addresses it answered.
  std::string responder_neighbours() const {
    return run_process(xdp_test_ip(), {"-n", b_, "neigh", "show"}, 10s).out;
  }

 private:
  static void ip(const std::vector<std::string>& arguments) {
    const process_result r = run_process(xdp_test_ip(), arguments, 10s);
    ASSERT_EQ(r.exit_code, 0) << "ip " << fmt::format("{}", fmt::join(arguments, " ")) << ": "
                              << r.err;
  }

  std::string id_, a_, b_, veth_a_, veth_b_, subnet_, subnet6_;
};

// Root and ip are needed; a build without AF_XDP says so.
bool xdp_test_can_run(std::string& why) {
  if (geteuid() != 0) {
    why = "needs root (network namespaces, XDP)";
    return false;
  }
  if (!find_program("ip")) {
    why = "needs ip (iproute2)";
    return false;
  }
  return true;
}

#define XDP_TEST_NEEDS_ROOT()                        \
  do {                                               \
    std::string why;                                 \
    if (!xdp_test_can_run(why)) GTEST_SKIP() << why; \
  } while (false)

// The counts of a run's JSON.
struct xdp_test_counts {
  std::uint64_t sent = 0, answered = 0, lost = 0;
};

xdp_test_counts xdp_test_read(const std::string& json_file) {
  const auto doc = boost::json::parse(contents(json_file)).as_object();
  return {doc.at("queries_sent").to_number<std::uint64_t>(),
          doc.at("responses_received").to_number<std::uint64_t>(),
          doc.at("lost").to_number<std::uint64_t>()};
}

// A run that exited 0 and had all `queries` sent and answered, none lost (`what` names it).
void xdp_test_all_answered(const process_result& r, const std::string& json_file,
                           std::uint64_t queries, const std::string& what = "") {
  ASSERT_EQ(r.exit_code, 0) << what << r.err << r.out;
  const xdp_test_counts counts = xdp_test_read(json_file);
  EXPECT_EQ(counts.sent, queries) << what;
  EXPECT_EQ(counts.answered, queries) << what;
  EXPECT_EQ(counts.lost, 0u) << what;
}

// 20,000 queries from 4 clients over XDP, then over the kernel's sockets: every one answered
// and counted the same; no XDP program left on the interface.
TEST(xdp_test, every_query_sent_over_xdp_is_answered_and_counted_as_over_the_kernel) {
  XDP_TEST_NEEDS_ROOT();
  const xdp_test_link link(1);
  const auto responder = link.serve();
  const scratch files("xdp-test");
  for (const bool xdp : {true, false}) {
    const std::string json = files.path(xdp ? "xdp.json" : "kernel.json");
    std::vector<std::string> arguments{
        "run",       "--server", link.server(), "--count", "20000",         "--clients", "4",
        "--timeout", "5",        "--json",      json,      "--outstanding", "20"};
    if (xdp) {
      arguments.push_back("--xdp");
      arguments.push_back(link.interface());
    }
    const process_result r = link.in_a(arguments);
    ASSERT_NO_FATAL_FAILURE(xdp_test_all_answered(r, json, 20000, xdp ? "xdp " : "kernel "));
  }
  EXPECT_EQ(link.link_state().find("xdp"), std::string::npos) << link.link_state();
}

// A veth of two queues: the responder's answers come in on the queue it sent them from (a
// client's flow keeps to one), so both are read, by the run's one worker, and every answer
// reaches its client.
TEST(xdp_test, answers_on_every_queue_reach_their_client) {
  XDP_TEST_NEEDS_ROOT();
  const xdp_test_link link(2);
  const auto responder = link.serve();
  const scratch files("xdp-test-2");
  const std::string json = files.path("two.json");
  const process_result r =
      link.in_a({"run", "--server", link.server(), "--xdp", link.interface(), "--clients", "8",
                 "--count", "40000", "--timeout", "5", "--json", json, "--outstanding", "20"});
  ASSERT_NO_FATAL_FAILURE(xdp_test_all_answered(r, json, 40000));
}

// Two worker threads on a two-queue veth, each sending through a queue of its own: an answer
// comes in on the queue the responder sent it from, which is often the other worker's, and
// is handed over. With 3 clients on 2 threads the workers finish at different times (a
// --count is shared by clients): the one that finishes first hands its queue to the other,
// whose answers still come in there. Every query is answered.
TEST(xdp_test, two_threads_read_each_others_answers_to_the_end) {
  XDP_TEST_NEEDS_ROOT();
  const xdp_test_link link(2);
  const auto responder = link.serve();
  const scratch files("xdp-test-threads");
  for (const char* clients : {"8", "3"}) {
    const std::string json = files.path(fmt::format("threads-{}.json", clients));
    const process_result r = link.in_a({"run", "--server", link.server(), "--xdp", link.interface(),
                                        "--threads", "2", "--clients", clients, "--count", "30000",
                                        "--timeout", "5", "--json", json, "--outstanding", "20"});
    ASSERT_NO_FATAL_FAILURE(xdp_test_all_answered(r, json, 30000, clients));
    EXPECT_EQ(boost::json::parse(contents(json)).at("threads").to_number<int>(), 2) << clients;
  }
}

// --source: each client's frames go from an address of its own (four added to the generator's
// end), and the answers come back to each: every query is answered, and the responder's
// kernel resolved all four addresses to answer them.
TEST(xdp_test, each_client_sends_from_its_own_source_address) {
  XDP_TEST_NEEDS_ROOT();
  const xdp_test_link link(1);
  std::vector<std::string> sources;
  for (unsigned n = 11; n <= 14; ++n) sources.push_back(link.add_generator_address(n));
  const auto responder = link.serve();
  const scratch files("xdp-test-sources");
  const std::string json = files.path("sources.json");
  const process_result r =
      link.in_a({"run", "--server", link.server(), "--xdp", link.interface(), "--clients", "4",
                 "--source", fmt::format("{}", fmt::join(sources, ",")), "--count", "8000",
                 "--timeout", "5", "--json", json, "--outstanding", "20"});
  ASSERT_NO_FATAL_FAILURE(xdp_test_all_answered(r, json, 8000));
  const std::string neighbours = link.responder_neighbours();
  for (const std::string& s : sources) {
    EXPECT_NE(neighbours.find(s + " "), std::string::npos) << s << " in:\n" << neighbours;
  }
}

// Over IPv6: the server's MAC address comes from the kernel's neighbour table (neighbour
// discovery, no --xdp-gateway-mac), the frames are IPv6, and every query is answered.
TEST(xdp_test, over_ipv6_the_neighbour_is_found_and_every_query_answered) {
  XDP_TEST_NEEDS_ROOT();
  const xdp_test_link link(1);
  const auto responder = link.serve(true);
  const scratch files("xdp-test-6");
  const std::string json = files.path("v6.json");
  const process_result r =
      link.in_a({"run", "--server", link.server6(), "--xdp", link.interface(), "--clients", "4",
                 "--count", "10000", "--timeout", "5", "--json", json, "--outstanding", "20"});
  ASSERT_NO_FATAL_FAILURE(xdp_test_all_answered(r, json, 10000));
  EXPECT_EQ(boost::json::parse(contents(json)).at("server").as_string(), link.server6());
}

// The connection counts of a run's JSON.
struct xdp_test_connections {
  std::uint64_t opened = 0, answered = 0, closed_by_client = 0, failed = 0;
};

xdp_test_connections xdp_test_read_connections(const std::string& json_file) {
  const auto c = boost::json::parse(contents(json_file)).at("connections").as_object();
  return {c.at("opened").to_number<std::uint64_t>(), c.at("answered").to_number<std::uint64_t>(),
          c.at("closed_by_client").to_number<std::uint64_t>(),
          c.at("failed").to_number<std::uint64_t>()};
}

// DNS over TCP from user space, one query per connection (a handshake, the query on its
// ACK, the answer, FIN both ways): every query answered once, a connection opened and closed
// for each, as over the kernel's sockets; with RST instead of FIN, and over IPv6, the same.
TEST(xdp_test, one_query_per_tcp_connection_is_answered_and_counted_as_over_the_kernel) {
  XDP_TEST_NEEDS_ROOT();
  const xdp_test_link link(1);
  const auto responder = link.serve();
  const auto responder6 = link.serve(true);
  const scratch files("xdp-test-tcp");
  struct tcp_case {
    const char* name;
    bool xdp;
    bool v6;
    const char* close;
  };
  for (const tcp_case& c :
       {tcp_case{"xdp", true, false, "fin"}, tcp_case{"kernel", false, false, "fin"},
        tcp_case{"xdp-rst", true, false, "rst"}, tcp_case{"xdp-v6", true, true, "fin"}}) {
    const std::string json = files.path(fmt::format("{}.json", c.name));
    std::vector<std::string> arguments{"run",
                                       "--transport",
                                       "tcp",
                                       "--server",
                                       c.v6 ? link.server6() : link.server(),
                                       "--queries-per-connection",
                                       "1",
                                       "--close",
                                       c.close,
                                       "--count",
                                       "3000",
                                       "--clients",
                                       "4",
                                       "--timeout",
                                       "5",
                                       "--json",
                                       json};
    if (c.xdp) {
      arguments.push_back("--xdp");
      arguments.push_back(link.interface());
    }
    const process_result r = link.in_a(arguments);
    ASSERT_NO_FATAL_FAILURE(xdp_test_all_answered(r, json, 3000, c.name));
    const xdp_test_connections counts = xdp_test_read_connections(json);
    EXPECT_EQ(counts.opened, 3000u) << c.name;
    EXPECT_EQ(counts.answered, 3000u) << c.name;
    EXPECT_EQ(counts.closed_by_client, 3000u) << c.name;
    EXPECT_EQ(counts.failed, 0u) << c.name;
  }
  EXPECT_EQ(link.link_state().find("xdp"), std::string::npos) << link.link_state();
}

// Persistent connections over TCP from user space, on a two-queue veth (both read by the
// one worker): 20 queries in flight on each of 4 connections, 20,000 in all, every one
// answered, on the 4 connections. Two threads are refused over TCP.
TEST(xdp_test, persistent_tcp_connections_carry_every_query) {
  XDP_TEST_NEEDS_ROOT();
  const xdp_test_link link(2);
  const auto responder = link.serve();
  const scratch files("xdp-test-tcp-persistent");
  const std::string json = files.path("persistent.json");
  const process_result r =
      link.in_a({"run", "--transport", "tcp", "--server", link.server(), "--xdp", link.interface(),
                 "--clients", "4", "--count", "20000", "--outstanding", "20", "--timeout", "5",
                 "--json", json});
  ASSERT_NO_FATAL_FAILURE(xdp_test_all_answered(r, json, 20000));
  const xdp_test_connections counts = xdp_test_read_connections(json);
  EXPECT_EQ(counts.opened, 4u);
  EXPECT_EQ(counts.answered, 20000u);
  const process_result two =
      link.in_a({"run", "--transport", "tcp", "--server", link.server(), "--xdp", link.interface(),
                 "--threads", "2", "--clients", "4", "--count", "100"});
  EXPECT_EQ(two.exit_code, 2) << two.err;
  EXPECT_NE(two.err.find("--threads 2: DNS over TCP over AF_XDP runs on one worker thread"),
            std::string::npos)
      << two.err;
}

// Set-ups that cannot work are errors naming --xdp, exit 2, before anything is sent.
TEST(xdp_test, bad_set_ups_are_clear_errors) {
  XDP_TEST_NEEDS_ROOT();
  const xdp_test_link link(1);
  const auto expect_error = [&](std::vector<std::string> arguments, const std::string& says) {
    std::vector<std::string> all{"run", "--server", link.server(), "--count", "10"};
    all.insert(all.end(), arguments.begin(), arguments.end());
    const process_result r = link.in_a(all);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
  };
  expect_error({"--xdp", "nosuch0"}, "--xdp nosuch0: no such network interface");
  expect_error({"--xdp", link.interface(), "--transport", "tls"},
               "AF_XDP carries udp, tcp only, not tls");
  expect_error({"--xdp", link.interface(), "--transport", "tcp", "--tcp-fastopen"},
               "TCP Fast Open is not sent over AF_XDP");
  expect_error({"--xdp", link.interface(), "--threads", "2", "--clients", "2"},
               "the interface has 1 receive queue, fewer than --threads 2");
  expect_error({"--xdp-gateway-mac", "02:00:00:00:00:01"}, "--xdp-gateway-mac needs --xdp");
  expect_error({"--xdp", link.interface(), "--xdp-gateway-mac", "nonsense"},
               "\"nonsense\" is not a MAC address");
  // Not root (as nobody, in the same namespace): the program is refused.
  if (find_program("setpriv")) {
    const process_result r = link.in_a_as_nobody(
        {"run", "--server", link.server(), "--count", "10", "--xdp", link.interface()});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("needs root"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace dnstransport::hostile
