// EDNS Client Subnet (traffic_settings::client_subnet, --ecs): every query of every transport
// carries its client's subnet (or one drawn per query), the built-in responder echoes it with
// the scope it is told, the run counts the echoes by scope, and an answer that echoes
// another subnet is mismatched, never an answer.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <dnstransport/load.hpp>
#include <dnstransport/message.hpp>
#include <dnstransport/report.hpp>
#include <dnstransport/server.hpp>

#include "cli_runs.hpp"
#include "hostile_server.hpp"
#include "scratch_dir.hpp"

namespace dnstransport {
namespace {

using hostile::bytes;
using hostile::hostile_server;
using hostile::query_log;

std::string transport_param_name(const ::testing::TestParamInfo<transport_kind>& param) {
  return std::string(transport_name(param.param));
}

load_spec subnet_load(transport_kind t, std::uint16_t port, unsigned clients, std::uint64_t count) {
  load_spec spec;
  spec.target.transport = t;
  spec.target.port = port;
  if (t == transport_kind::doq) spec.tls.backend = tls_backend::gnutls;
  spec.traffic.clients = clients;
  spec.traffic.outstanding = 5;
  spec.traffic.count = count;
  // Every query is answered: a long timeout costs nothing and no busy machine makes a loss.
  spec.traffic.timeout_seconds = 20;
  spec.traffic.client_subnet.range = "10.20.0.0/16";
  return spec;
}

// The client subnet option's data (family, prefixes, address) in a query the generator
// sent; nothing when it has none.
std::optional<bytes> subnet_of(const bytes& query) {
  std::size_t pos = dns_header_size;
  for (unsigned i = (query[4] << 8) | query[5]; i > 0; --i) pos = *skip_name(query, pos) + 4;
  const unsigned records =
      (query[6] << 8 | query[7]) + (query[8] << 8 | query[9]) + (query[10] << 8 | query[11]);
  for (unsigned i = 0; i < records; ++i) {
    const std::size_t end = *skip_name(query, pos);
    const std::size_t data = end + 10;
    const std::size_t length = query[end + 8] << 8 | query[end + 9];
    if ((query[end] << 8 | query[end + 1]) == rr_type::opt) {
      for (std::size_t at = data; at + 4 <= data + length;) {
        const std::size_t option_length = query[at + 2] << 8 | query[at + 3];
        if ((query[at] << 8 | query[at + 1]) == edns_option_code::client_subnet) {
          return bytes(query.begin() + static_cast<std::ptrdiff_t>(at + 4),
                       query.begin() + static_cast<std::ptrdiff_t>(at + 4 + option_length));
        }
        at += 4 + option_length;
      }
    }
    pos = data + length;
  }
  return std::nullopt;
}

// Answers each query with itself, QR set: its OPT record, client subnet and all, echoed;
// with `wrong`, the subnet's last address octet changed.
hostile::message_script echo(bool wrong = false) {
  return [wrong](std::span<const std::uint8_t> query, std::uint64_t) {
    bytes answer(query.begin(), query.end());
    answer[2] |= 0x80;
    if (wrong) answer.back() ^= 0x01;  // the option is the query's last
    return std::vector<hostile::reply>{{answer}};
  };
}

class client_subnet_test : public ::testing::TestWithParam<transport_kind> {};

TEST_P(client_subnet_test, every_answer_echoes_its_clients_subnet) {
  const transport_kind t = GetParam();
  server_options options;
  options.listen[t] = endpoint{"127.0.0.1", 0};
  options.certificate_directory = hostile::scratch_directory("client_subnet_test");
  server responder(options);
  const run_result r = run_load(subnet_load(t, responder.port(t), 4, 200));
  ASSERT_EQ(r.responses_received, 200u);
  EXPECT_EQ(r.mismatched, 0u);
  // The echo is checked against the subnet the query carried: a query sent with the
  // option's placeholder (10.20.0.0 is no client's but the first's) would not match.
  EXPECT_EQ(r.client_subnet_wrong, 0u);
  const client_subnet_stats& c = r.client_subnet;
  EXPECT_EQ(c.range, "10.20.0.0/16");
  EXPECT_EQ(c.source_prefix, 24u);
  EXPECT_EQ(c.mode, "per-client");
  EXPECT_EQ(c.range_subnets, 256u);
  EXPECT_EQ(c.subnets, 4u);
  EXPECT_EQ(c.echoed, 200u);
  EXPECT_EQ(c.scope_prefixes, (std::map<unsigned, std::uint64_t>{{0, 200}}));
  const run_result read = run_result_from_json(to_json(r), "run");
  EXPECT_EQ(read.client_subnet.echoed, 200u);
  EXPECT_EQ(read.client_subnet.scope_prefixes, c.scope_prefixes);
  EXPECT_EQ(read.client_subnet.range_subnets, 256u);
  EXPECT_NE(format_table(r).find("client subnet (ECS)     4 subnets of /24 from 10.20.0.0/16, "
                                 "per-client"),
            std::string::npos)
      << format_table(r);
}

INSTANTIATE_TEST_SUITE_P(every_transport, client_subnet_test,
                         ::testing::Values(transport_kind::udp, transport_kind::tcp,
                                           transport_kind::tls, transport_kind::doh,
                                           transport_kind::doq),
                         transport_param_name);

TEST(client_subnet_test, each_client_carries_its_own_subnet_in_every_query) {
  for (const transport_kind t : {transport_kind::udp, transport_kind::tcp}) {
    SCOPED_TRACE(transport_name(t));
    hostile::hostile_options options;
    options.transport = t;
    auto log = std::make_shared<query_log>();
    hostile_server server(options, hostile::recorded(log, echo()));
    const run_result r = run_load(subnet_load(t, server.port(), 4, 200));
    EXPECT_EQ(r.responses_received, 200u);
    EXPECT_EQ(r.client_subnet.echoed, 200u);
    // Keyed by the option's octets as a string (GCC 12 warns wrongly on a map of vectors).
    std::map<std::string, unsigned> by_subnet;
    for (const bytes& query : log->queries()) {
      const auto subnet = subnet_of(query);
      ASSERT_TRUE(subnet);
      ++by_subnet[std::string(subnet->begin(), subnet->end())];
    }
    ASSERT_EQ(by_subnet.size(), 4u);
    unsigned third_octet = 0;
    for (const auto& [subnet, n] : by_subnet) {
      // FAMILY 1, /24, scope 0, then 10.20.i.
      EXPECT_EQ(bytes(subnet.begin(), subnet.end()),
                (bytes{0, 1, 24, 0, 10, 20, static_cast<std::uint8_t>(third_octet++)}));
      EXPECT_EQ(n, 50u);
    }
  }
}

TEST(client_subnet_test, per_query_subnets_are_drawn_from_the_range) {
  hostile::hostile_options options;
  auto log = std::make_shared<query_log>();
  hostile_server server(options, hostile::recorded(log, echo()));
  load_spec spec = subnet_load(transport_kind::udp, server.port(), 2, 400);
  spec.traffic.client_subnet.range = "2001:db8::/32";
  spec.traffic.client_subnet.mode = client_subnet_mode::per_query;
  const run_result r = run_load(spec);
  EXPECT_EQ(r.responses_received, 400u);
  EXPECT_EQ(r.client_subnet.echoed, 400u);
  EXPECT_EQ(r.client_subnet.subnets, std::uint64_t{1} << 24);
  std::set<std::string> subnets;
  for (const bytes& query : log->queries()) {
    const auto subnet = subnet_of(query);
    ASSERT_TRUE(subnet);
    ASSERT_EQ(subnet->size(), 4u + 7u);  // a /56: 7 octets of address
    EXPECT_EQ(bytes(subnet->begin(), subnet->begin() + 8),
              (bytes{0, 2, 56, 0, 0x20, 0x01, 0x0d, 0xb8}));
    subnets.insert(std::string(subnet->begin(), subnet->end()));
  }
  EXPECT_GT(subnets.size(), 390u);  // 400 draws among 2^24
}

TEST(client_subnet_test, an_echo_of_another_subnet_is_mismatched_not_answered) {
  for (const transport_kind t : {transport_kind::udp, transport_kind::tcp}) {
    SCOPED_TRACE(transport_name(t));
    hostile::hostile_options options;
    options.transport = t;
    hostile_server server(options, echo(true));
    const run_result r = run_load(subnet_load(t, server.port(), 2, 40));
    EXPECT_EQ(r.responses_received, 0u);
    EXPECT_EQ(r.mismatched, 40u);
    EXPECT_EQ(r.client_subnet_wrong, 40u);
    EXPECT_EQ(r.client_subnet.echoed, 0u);
    EXPECT_NE(format_table(r).find("client subnet wrong"), std::string::npos);
  }
}

TEST(client_subnet_test, the_scope_is_the_servers_and_a_server_may_not_echo_at_all) {
  server_options options;
  options.listen[transport_kind::udp] = endpoint{"127.0.0.1", 0};
  options.client_subnet_scope = 20;
  {
    server responder(options);
    const run_result r =
        run_load(subnet_load(transport_kind::udp, responder.port(transport_kind::udp), 2, 60));
    EXPECT_EQ(r.client_subnet.scope_prefixes, (std::map<unsigned, std::uint64_t>{{20, 60}}));
  }
  options.client_subnet_scope = -1;
  server responder(options);
  const run_result r =
      run_load(subnet_load(transport_kind::udp, responder.port(transport_kind::udp), 2, 60));
  EXPECT_EQ(r.responses_received, 60u);
  EXPECT_EQ(r.client_subnet.echoed, 0u);
  EXPECT_TRUE(r.client_subnet.scope_prefixes.empty());
  EXPECT_NE(format_table(r).find("client subnet echoed    0 answers"), std::string::npos)
      << format_table(r);
}

#ifdef DNSTRANSPORT_CLI_PATH
TEST(client_subnet_test, the_cli_sends_subnets_and_refuses_what_does_not_read) {
  const hostile::process_result r =
      hostile::run_process(hostile::cli, {"run", "--ecs", "10.0.0.0/8/20", "--ecs-mode",
                                          "per-query", "--clients", "2", "--count", "100"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("client subnet (ECS)     4,096 subnets of /20 from 10.0.0.0/8, per-query"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("client subnet echoed    100 answers  (100.00 %), scopes /0 100"),
            std::string::npos)
      << r.out;
  const auto refused = [](std::vector<std::string> flags, const std::string& mentions) {
    std::vector<std::string> arguments{"run", "--server", "127.0.0.1:9"};
    arguments.insert(arguments.end(), flags.begin(), flags.end());
    hostile::expect_refused(arguments, mentions);
  };
  refused({"--ecs", "10.0.0.0/8/40"}, "--ecs: a source prefix of 40 is longer than an IPv4");
  refused({"--ecs", "10.0.0.0/8/x"}, "--ecs: \"10.0.0.0/8/x\" has a source prefix \"x\"");
  refused({"--ecs", "10.0.0.0/16/8"}, "shorter than the range's /16");
  refused({"--ecs", "ten/8"}, "--ecs: \"ten/8\" is not an IPv4 or IPv6 network");
  refused({"--ecs", "10.0.0.0/8", "--ecs-mode", "sometimes"}, "--ecs-mode: \"sometimes\"");
  hostile::expect_refused({"serve", "--ecs-scope", "129"}, "--ecs-scope: \"129\"");
}
#endif

}  // namespace
}  // namespace dnstransport
