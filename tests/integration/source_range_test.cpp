// Source ranges (connection_settings::sources, --source): clients bind the hosts of a range
// of 127.0.0.0/8 (all of it is loopback), one each or in turn, and a server that records its
// peers (the tests' hostile_server) sees exactly those addresses.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include <dnstransport/error.hpp>
#include <dnstransport/load.hpp>
#include <dnstransport/report.hpp>
#include <dnstransport/server.hpp>

#include "child_process.hpp"
#include "cli_runs.hpp"
#include "hostile_server.hpp"
#include "in_ci.hpp"
#include "misbehaviour.hpp"
#include "scratch_dir.hpp"

namespace dnstransport {
namespace {

using hostile::answer_all;
using hostile::hostile_server;

hostile::hostile_options tcp() {
  hostile::hostile_options options;
  options.transport = transport_kind::tcp;
  return options;
}

std::set<std::string> hosts(const std::string& prefix, unsigned first, unsigned last) {
  std::set<std::string> out;
  for (unsigned i = first; i <= last; ++i) out.insert(prefix + std::to_string(i));
  return out;
}

load_spec load_of(transport_kind transport, std::uint16_t port, unsigned clients,
                  std::uint64_t count) {
  load_spec spec;
  spec.target.transport = transport;
  spec.target.port = port;
  spec.traffic.clients = clients;
  spec.traffic.outstanding = 1;
  spec.traffic.count = count;
  spec.traffic.timeout_seconds = 20;
  return spec;
}

TEST(source_range_test, udp_clients_each_send_from_a_host_of_the_range) {
  hostile_server server({}, answer_all());
  load_spec spec = load_of(transport_kind::udp, server.port(), 20, 400);
  spec.traffic.outstanding = 5;
  spec.connections.sources = {"127.1.0.0/24"};
  const run_result r = run_load(spec);
  EXPECT_EQ(r.responses_received, 400u);
  EXPECT_EQ(r.source_addresses, 20u);
  EXPECT_TRUE(r.sources_per_client);  // 254 hosts for 20 clients: one each
  EXPECT_EQ(server.sources(), hosts("127.1.0.", 1, 20));
}

// The built-in responder counts its answers by client address, over every transport, and
// lists the clients it answered most.
TEST(source_range_test, the_built_in_responder_answers_each_client_address_it_is_sent_from) {
  const auto every = {transport_kind::udp, transport_kind::tcp, transport_kind::tls,
                      transport_kind::doh, transport_kind::doq};
  server_options options;
  for (const transport_kind t : every) options.listen[t] = endpoint{"127.0.0.1", 0};
  options.certificate_directory = hostile::scratch_directory("source_range_test");
  server responder(options);
  for (const transport_kind t : every) {
    load_spec spec = load_of(t, responder.port(t), 12, 120);
    if (t == transport_kind::doq) spec.tls.backend = tls_backend::gnutls;
    spec.connections.sources = {"127.1.0.0/24"};
    EXPECT_EQ(run_load(spec).responses_received, 120u) << transport_name(t);
  }
  responder.stop();
  const server_stats stats = responder.stats();
  EXPECT_EQ(stats.client_addresses, 12u);
  ASSERT_EQ(stats.top_clients.size(), server_stats::top_client_count);
  std::set<std::string> listed;
  for (const client_answers& c : stats.top_clients) {
    EXPECT_EQ(c.answers, 50u) << c.address;  // 10 per transport
    listed.insert(c.address);
  }
  // Ties in address order: the first ten of the twelve.
  EXPECT_EQ(listed, hosts("127.1.0.", 1, 10));
}

TEST(source_range_test, a_tcp_client_keeps_its_address_for_every_connection) {
  hostile_server server(tcp(), answer_all());
  load_spec spec = load_of(transport_kind::tcp, server.port(), 4, 40);
  spec.connections.queries_per_connection = 1;
  spec.connections.sources = {"127.2.0.0/29"};  // 6 hosts
  spec.connections.source_mode = source_mode::per_client;
  const run_result r = run_load(spec);
  EXPECT_EQ(r.responses_received, 40u);
  EXPECT_TRUE(r.sources_per_client);
  EXPECT_EQ(r.source_addresses, 4u);
  EXPECT_EQ(server.sources(), hosts("127.2.0.", 1, 4));
  EXPECT_EQ(server.connections(), r.connections.opened);
}

TEST(source_range_test, taken_in_turn_tcp_connections_spread_over_the_whole_range) {
  hostile_server server(tcp(), answer_all());
  load_spec spec = load_of(transport_kind::tcp, server.port(), 2, 60);
  spec.connections.queries_per_connection = 1;
  spec.connections.sources = {"127.3.0.0/29"};
  spec.connections.source_mode = source_mode::round_robin;
  const run_result r = run_load(spec);
  EXPECT_EQ(r.responses_received, 60u);
  EXPECT_FALSE(r.sources_per_client);
  EXPECT_EQ(r.source_addresses, 6u);
  // Client i's k-th connection binds host (i + 2k) mod 6: each client three of them.
  EXPECT_EQ(server.sources(), hosts("127.3.0.", 1, 6));
}

TEST(source_range_test, fewer_addresses_than_clients_are_taken_in_turn_or_refused_per_client) {
  hostile_server server({}, answer_all());
  load_spec spec = load_of(transport_kind::udp, server.port(), 8, 80);
  spec.connections.sources = {"127.4.0.0/30"};  // 2 hosts
  const run_result r = run_load(spec);
  EXPECT_EQ(r.responses_received, 80u);
  EXPECT_FALSE(r.sources_per_client);
  EXPECT_EQ(r.source_addresses, 2u);
  EXPECT_EQ(server.sources(), hosts("127.4.0.", 1, 2));

  spec.connections.source_mode = source_mode::per_client;
  try {
    run_load(spec);
    ADD_FAILURE() << "8 clients ran per client on 2 addresses";
  } catch (const setup_error& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find("load_spec::traffic.clients 8"), std::string::npos) << text;
    EXPECT_NE(text.find("127.4.0.0/30 holds 2"), std::string::npos) << text;
    EXPECT_NE(text.find("round-robin"), std::string::npos) << text;
  }
}

#ifdef DNSTRANSPORT_CLI_PATH
// An IPv6 range made local in a network namespace of its own (`ip -6 route add local`, and
// net.ipv6.ip_nonlocal_bind, without which IPv6 binds only assigned addresses): the
// clients' connections to a `serve` on ::1 leave from its first hosts, one per client, as the
// kernel's TIME_WAIT sockets (the client closes each connection) say after the run.
TEST(source_range_test, an_ipv6_range_made_local_in_a_namespace_is_bound_per_client) {
  const std::string unshare = "/usr/bin/unshare";
  if (::geteuid() != 0 || !std::filesystem::exists(unshare) ||
      hostile::run_process(unshare, {"-n", "true"}, std::chrono::seconds(10)).exit_code != 0) {
    if (hostile::in_ci()) FAIL() << "needs root and unshare -n; CI runs as root and has both";
    GTEST_SKIP() << "needs root and unshare -n for a network namespace of its own";
  }
  const hostile::scratch files("source-v6");
  const std::string json = files.path("run.json");
  const std::string sockets = files.path("time-wait");
  const std::string serve_out = files.path("serve.out");
  const std::string script = fmt::format(
      "ip link set lo up && ip -6 route add local fd00::/112 dev lo && "
      "sysctl -qw net.ipv6.ip_nonlocal_bind=1 || exit 99\n"
      // serve's output through a FIFO: the script reads on until its TCP address is out
      // (a read that ends when serve exits first), not for a time.
      "mkfifo '{1}'\n"
      "'{0}' serve --listen '[::1]:5300' --tcp '[::1]:5300' > '{1}' 2>&1 & serve=$!\n"
      "exec 3< '{1}'\n"
      "while read -r line <&3; do case $line in tcp*) break;; esac; done\n"
      "'{0}' run --server '[::1]:5300' --transport tcp --queries-per-connection 1 --clients 4 "
      "--outstanding 1 --count 100 --source fd00::/112 --quiet --json '{2}'; code=$?\n"
      "ss -Htan state time-wait > '{3}'\n"
      "kill -INT $serve; wait $serve; exit $code",
      hostile::cli, serve_out, json, sockets);
  const hostile::process_result r =
      hostile::run_process(unshare, {"-n", "sh", "-c", script}, std::chrono::seconds(60));
  ASSERT_FALSE(r.timed_out);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  std::ifstream in(json);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const run_result result = run_result_from_json(text, json);
  EXPECT_EQ(result.responses_received, 100u);
  EXPECT_EQ(result.source_addresses, 4u);
  EXPECT_TRUE(result.sources_per_client);
  // Local address of each TIME_WAIT socket: "[fd00::3]:40112" in the third column.
  std::set<std::string> local;
  std::ifstream listed(sockets);
  for (std::string line; std::getline(listed, line);) {
    std::istringstream fields(line);
    std::string recv_q, send_q, address;
    fields >> recv_q >> send_q >> address;
    if (address.rfind("[fd00::", 0) == 0) local.insert(address.substr(1, address.find(']') - 1));
  }
  EXPECT_EQ(local, (std::set<std::string>{"fd00::1", "fd00::2", "fd00::3", "fd00::4"}));
}

TEST(source_range_test, the_cli_takes_ranges_and_says_how_many_addresses_it_used) {
  const hostile::process_result r = hostile::run_process(
      hostile::cli, {"run", "--transport", "tcp", "--clients", "4", "--count", "200", "--source",
                     "127.6.0.0/24,127.7.0.1", "--source-mode", "per-client"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("source addresses        4, one per client"), std::string::npos) << r.out;
  // The built-in responder says whom it answered: the four, 50 answers each.
  EXPECT_NE(r.out.find("responder's clients     4 distinct addresses; answered most: 127.6.0.1 "
                       "50, 127.6.0.2 50, 127.6.0.3 50, 127.6.0.4 50"),
            std::string::npos)
      << r.out;
  hostile::expect_refused({"run", "--source-mode", "spread"}, "--source-mode");
  hostile::expect_refused({"run", "--source", "127.0.0.0/40"}, "--source: \"127.0.0.0/40\"");
}
#endif

}  // namespace
}  // namespace dnstransport
