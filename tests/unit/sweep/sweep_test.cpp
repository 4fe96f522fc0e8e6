// The sweep planner, point summaries, percent of UDP, warnings, the JSON document (round trip
// and refusal of foreign files), CSV, tables and a report written without gnuplot.
#include <dnstransport/sweep.hpp>

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include <dnstransport/error.hpp>
#include <dnstransport/report.hpp>

#include "sweep_transports.hpp"

namespace dnstransport {
namespace {

namespace st = sweep_transports;

template <typename F>
std::string setup_error_of(F f) {
  try {
    f();
  } catch (const setup_error& e) {
    return e.what();
  }
  return "no setup_error";
}

run_result run(const sweep_point& p, double qps, double cpu_share = 0.5) {
  run_result r;
  r.server = "127.0.0.1";
  r.port = 5300;
  r.transport = p.transport.transport;
  if (p.transport.backend) r.tls_backend = std::string(tls_backend_name(*p.transport.backend));
  r.clients = p.clients;
  r.outstanding = 100;
  r.threads = 1;
  r.queries_per_connection = p.queries_per_connection;
  r.query_origin = "built-in default set";
  r.query_count_in_set = 300;
  r.elapsed_seconds = 1;
  r.qps = qps;
  r.queries_sent = static_cast<std::uint64_t>(qps) + 5;
  r.responses_received = static_cast<std::uint64_t>(qps);
  r.lost = 5;
  r.rcodes[0] = r.responses_received;
  r.client_cpu_seconds = cpu_share;
  r.max_thread_cpu_share = cpu_share;
  for (std::uint64_t i = 1; i <= 200; ++i) r.latency.record(i * 1000);
  if (p.transport.transport == transport_kind::udp) r.coalesce_us = 100;
  if (p.transport.transport != transport_kind::udp) {
    r.connections.opened = 10;
    r.connections.closed_by_client = 6;
    r.connections.closed_idle = 4;
    r.connections.concurrent_mean = 3.25;
    r.connections.concurrent_max = 5;
    r.idle_seconds = 0.5;
    r.connect_latency.record(50000);
    r.first_query_latency.record(90000);
    if (p.transport.transport == transport_kind::tls) {
      r.handshake_latency.record(800000);
      r.handshakes_full = 10;
    }
  }
  return r;
}

sweep_point_result measured(const sweep_point& p, std::vector<double> qps, double cpu_share = 0.5) {
  sweep_point_result result;
  result.point = p;
  for (const double q : qps) result.repeats.push_back(run(p, q, cpu_share));
  result.summary = summarize(result.repeats);
  return result;
}

// A small, complete sweep: udp/tcp/tls x 1, 4 clients x 1, 10, unlimited.
sweep_result synthetic_sweep() {
  sweep_result r;
  r.plan.transports = {st::udp, st::tcp, st::tls_openssl};
  r.plan.clients = {1, 4};
  r.plan.queries_per_connection = {1, 10, 0};
  r.plan.repeats = 3;
  r.plan.ports = {5300, 5300, 8853};
  r.plan.target_description = "test responder";
  r.plan.command_line = "dnstransport sweep --clients 1,4";
  r.plan.base.generator.coalesce_us = 100;
  r.query_origin = "built-in default set";
  r.query_count = 300;
  r.tool_version = "0.1.0";
  r.machine = {2, "Test CPU", "Linux 6.1.0 x86_64"};
  r.started_at = "2025-01-01T12:00:00Z";
  r.elapsed_seconds = 61.25;
  const auto points = expand(r.plan);
  r.planned_points = points.size();
  for (const auto& p : points) {
    const double t_inf = p.transport.transport == transport_kind::udp   ? 100000.0 * p.clients
                         : p.transport.transport == transport_kind::tcp ? 70000.0 * p.clients
                                                                        : 50000.0 * p.clients;
    const double h = p.transport.transport == transport_kind::tls ? 20 : 2;
    const double n = static_cast<double>(p.queries_per_connection);
    const double qps = p.queries_per_connection == 0 ? t_inf : t_inf * n / (n + h);
    r.points.push_back(
        measured(p, {qps * 0.97, qps, qps * 1.03 + 0.123456789}, p.clients == 4 ? 0.95 : 0.5));
  }
  derive_results(r);
  return r;
}

TEST(sweep_test, parses_transport_lists) {
  const auto t = parse_sweep_transports("udp,tcp,tls,tls-gnutls", tls_backend::openssl);
  EXPECT_EQ(t, (std::vector<sweep_transport>{st::udp, st::tcp, st::tls_openssl, st::tls_gnutls}));
  EXPECT_EQ(parse_sweep_transports("tls", tls_backend::gnutls).front(), st::tls_gnutls);
  EXPECT_EQ(sweep_transport_name(st::tls_gnutls), "tls-gnutls");
  EXPECT_EQ(sweep_transport_name(st::tcp), "tcp");
  EXPECT_NE(setup_error_of([] {
              parse_sweep_transports("tls,tls-openssl", tls_backend::openssl);
            }).find("appears twice"),
            std::string::npos);
  EXPECT_NE(setup_error_of([] {
              parse_sweep_transports("quic", tls_backend::openssl);
            }).find("sweep_plan::transports"),
            std::string::npos);
  EXPECT_NE(setup_error_of([] { parse_sweep_transports("udp-openssl", tls_backend::openssl); }),
            "no setup_error");
  // DNS over QUIC runs on GnuTLS whatever the default backend is, and says why OpenSSL cannot.
  EXPECT_EQ(parse_sweep_transports("doq", tls_backend::openssl),
            (std::vector<sweep_transport>{{transport_kind::doq, tls_backend::gnutls}}));
  EXPECT_EQ(parse_sweep_transports("doq-gnutls", tls_backend::openssl).front().backend,
            tls_backend::gnutls);
  EXPECT_NE(setup_error_of([] {
              parse_sweep_transports("doq-openssl", tls_backend::openssl);
            }).find("runs on GnuTLS only"),
            std::string::npos);
  EXPECT_NE(setup_error_of([] { parse_sweep_transports("tls-wolfssl", tls_backend::openssl); }),
            "no setup_error");
  EXPECT_NE(setup_error_of([] { parse_sweep_transports("udp,", tls_backend::openssl); }),
            "no setup_error");
}

TEST(sweep_test, parses_client_and_per_connection_lists) {
  EXPECT_EQ(parse_client_counts("1,2,4,8,16"), (std::vector<unsigned>{1, 2, 4, 8, 16}));
  EXPECT_EQ(parse_queries_per_connection_list("1,10,unlimited"),
            (std::vector<std::uint64_t>{1, 10, 0}));
  EXPECT_EQ(queries_per_connection_name(0), "unlimited");
  for (const char* bad : {"", "0", "1,,2", "x", "1,1", "-1", "2.5"}) {
    EXPECT_NE(setup_error_of([&] { parse_client_counts(bad); }).find("sweep_plan::clients"),
              std::string::npos)
        << bad;
  }
  EXPECT_NE(setup_error_of([] { parse_queries_per_connection_list("10,unlimited,0"); }),
            "no setup_error");
  EXPECT_NE(setup_error_of([] {
              parse_queries_per_connection_list("ten");
            }).find("load_spec::connections.queries_per_connection"),
            std::string::npos);
}

TEST(sweep_test, the_default_axis_is_every_transport_of_this_build) {
  const sweep_plan plan;
  std::vector<sweep_transport> expected{st::udp, st::tcp, st::tls_openssl, st::doh_openssl};
  if (traits_of(transport_kind::doq).compiled) {
    expected.push_back({transport_kind::doq, tls_backend::gnutls});  // GnuTLS whatever is asked
  }
  EXPECT_EQ(plan.transports, expected);
  EXPECT_EQ(plan.ports, default_ports());
}

TEST(sweep_test, expands_transports_then_clients_then_queries_per_connection) {
  sweep_plan plan;
  plan.transports = {st::udp, st::tcp, st::tls_openssl, st::doh_openssl};
  const auto points = expand(plan);
  // udp once per client count; tcp, tls and doh once per client count and per-connection
  // value.
  ASSERT_EQ(points.size(), 3u + 3 * 3 * 4);
  EXPECT_EQ(points[0], (sweep_point{st::udp, 1, 0}));
  EXPECT_EQ(points[2], (sweep_point{st::udp, 16, 0}));
  EXPECT_EQ(points[3], (sweep_point{st::tcp, 1, 1}));
  EXPECT_EQ(points[6], (sweep_point{st::tcp, 1, 0}));
  EXPECT_EQ(points[7], (sweep_point{st::tcp, 4, 1}));
  EXPECT_EQ(points[26], (sweep_point{st::tls_openssl, 16, 0}));
  EXPECT_EQ(points.back(), (sweep_point{st::doh_openssl, 16, 0}));
  EXPECT_EQ(describe(points[3]), "tcp, 1 client, 1 query/connection");
  EXPECT_EQ(describe(points[26]), "tls-openssl, 16 clients, persistent connections");
  EXPECT_EQ(describe(points.back()), "doh-openssl, 16 clients, persistent connections");
}

TEST(sweep_test, rejects_contradictions) {
  sweep_plan plan;
  plan.transports = {st::udp};
  plan.queries_per_connection = {1, 0};
  EXPECT_NE(setup_error_of([&] { expand(plan); })
                .find("sweep_plan::queries_per_connection: values other than 'unlimited' need a "
                      "transport with connections (tcp, tls, doh, doq) in sweep_plan::transports"),
            std::string::npos);
  plan.queries_per_connection = {0};
  EXPECT_EQ(expand(plan).size(), plan.clients.size());

  const auto error_with = [](auto change) {
    sweep_plan p;
    change(p);
    return setup_error_of([&] { expand(p); });
  };
  EXPECT_NE(error_with([](sweep_plan& p) { p.clients.clear(); }), "no setup_error");
  EXPECT_NE(error_with([](sweep_plan& p) { p.transports.clear(); }), "no setup_error");
  EXPECT_NE(error_with([](sweep_plan& p) { p.queries_per_connection.clear(); }), "no setup_error");
  EXPECT_NE(error_with([](sweep_plan& p) { p.clients = {4, 4}; }), "no setup_error");
  EXPECT_NE(error_with([](sweep_plan& p) { p.clients = {0}; }), "no setup_error");
  EXPECT_NE(error_with([](sweep_plan& p) { p.repeats = 0; }).find("sweep_plan::repeats"),
            std::string::npos);
  EXPECT_NE(error_with([](sweep_plan& p) {
              p.duration_seconds = 0;
            }).find("sweep_plan::duration_seconds"),
            std::string::npos);
  EXPECT_NE(
      error_with([](sweep_plan& p) { p.pause_seconds = -1; }).find("sweep_plan::pause_seconds"),
      std::string::npos);
  EXPECT_NE(error_with([](sweep_plan& p) {
              p.transports = {{transport_kind::tcp, tls_backend::openssl}};
            }),
            "no setup_error");
}

TEST(sweep_test, point_spec_carries_the_point_and_the_base_options) {
  sweep_plan plan;
  plan.base.traffic.outstanding = 7;
  plan.base.tls.resume = true;
  plan.ports = {5301, 5302, 8853};
  plan.duration_seconds = 1.5;
  const auto spec = point_spec(plan, {st::tls_gnutls, 4, 10});
  EXPECT_EQ(spec.target.transport, transport_kind::tls);
  EXPECT_EQ(spec.target.port, 8853);
  EXPECT_EQ(spec.tls.backend, tls_backend::gnutls);
  EXPECT_TRUE(spec.tls.resume);
  EXPECT_EQ(spec.traffic.clients, 4u);
  EXPECT_EQ(spec.connections.queries_per_connection, 10u);
  EXPECT_EQ(spec.traffic.outstanding, 7u);
  EXPECT_EQ(spec.traffic.duration_seconds, 1.5);
  EXPECT_EQ(point_spec(plan, {st::tcp, 1, 0}).target.port, 5302);
  EXPECT_EQ(point_spec(plan, {st::udp, 1, 0}).target.port, 5301);
  // Per-client rates follow each point's clients; --idle only where there are connections.
  plan.base.traffic.client_rate = 0.5;
  plan.base.connections.idle_seconds = 2;
  EXPECT_EQ(total_rate(point_spec(plan, {st::tcp, 8, 0})), 4.0);
  EXPECT_EQ(point_spec(plan, {st::tcp, 8, 0}).connections.idle_seconds, 2.0);
  EXPECT_EQ(point_spec(plan, {st::udp, 8, 0}).connections.idle_seconds, 0.0);
  // --coalesce-us for every transport.
  plan.base.generator.coalesce_us = 100;
  for (const sweep_transport& t : {st::udp, st::tcp, st::tls_gnutls, st::doh_gnutls, st::doq}) {
    EXPECT_EQ(point_spec(plan, {t, 8, 0}).generator.coalesce_us, 100u);
  }
  // --xdp for UDP's and TCP's points; the others go over kernel sockets.
  plan.base.generator.xdp_interface = "veth0";
  plan.base.generator.xdp_gateway_mac = "02:00:00:00:00:01";
  for (const sweep_transport& t : {st::udp, st::tcp}) {
    EXPECT_EQ(point_spec(plan, {t, 8, 0}).generator.xdp_interface, "veth0");
    EXPECT_EQ(point_spec(plan, {t, 8, 0}).generator.xdp_gateway_mac, "02:00:00:00:00:01");
  }
  for (const sweep_transport& t : {st::tls_gnutls, st::doh_gnutls, st::doq}) {
    EXPECT_EQ(point_spec(plan, {t, 8, 0}).generator.xdp_interface, "");
    EXPECT_EQ(point_spec(plan, {t, 8, 0}).generator.xdp_gateway_mac, "");
  }
}

TEST(sweep_test, presets_set_the_classic_studies) {
  sweep_plan plan;
  plan.base.tls.backend = tls_backend::gnutls;
  apply_preset(plan, "load");
  EXPECT_EQ(plan.clients, (std::vector<unsigned>{1, 2, 4, 8, 16}));
  EXPECT_EQ(plan.queries_per_connection, std::vector<std::uint64_t>{0});
  EXPECT_EQ(plan.transports, (std::vector<sweep_transport>{st::udp, st::tcp, st::tls_gnutls,
                                                           st::doh_gnutls, st::doq}));
  apply_preset(plan, "amortization");
  EXPECT_EQ(plan.transports,
            (std::vector<sweep_transport>{st::tcp, st::tls_gnutls, st::doh_gnutls, st::doq}));
  EXPECT_EQ(plan.queries_per_connection.size(), 15u);
  EXPECT_EQ(plan.queries_per_connection.back(), 0u);
  EXPECT_EQ(expand(plan).size(), 60u);
  EXPECT_NE(setup_error_of([&] { apply_preset(plan, "fast"); }).find("apply_preset::name"),
            std::string::npos);
}

TEST(sweep_test, summarizes_repeats) {
  const auto p = measured({st::tcp, 2, 0}, {90, 110, 100}, 0.95);
  const auto& q = p.summary.qps;
  EXPECT_DOUBLE_EQ(q.mean, 100);
  EXPECT_DOUBLE_EQ(q.median, 100);
  EXPECT_DOUBLE_EQ(q.min, 90);
  EXPECT_DOUBLE_EQ(q.max, 110);
  EXPECT_DOUBLE_EQ(q.stddev, 10);
  EXPECT_DOUBLE_EQ(q.spread, 0.2);
  EXPECT_EQ(p.summary.latency.count(), 600u);
  EXPECT_EQ(p.summary.connect_latency.count(), 3u);
  EXPECT_EQ(p.summary.connections_opened, 30u);
  EXPECT_EQ(p.summary.lost, 15u);
  EXPECT_TRUE(p.summary.client_bound);
  EXPECT_FALSE(measured({st::tcp, 2, 0}, {100}, 0.89).summary.client_bound);
  EXPECT_DOUBLE_EQ(measured({st::tcp, 2, 0}, {100, 120}).summary.qps.median, 110);
}

TEST(sweep_test, percent_of_udp_carries_the_spread) {
  std::vector<sweep_point_result> points{measured({st::udp, 2, 0}, {90000, 100000, 110000}),
                                         measured({st::tcp, 2, 0}, {45000, 50000, 55000}),
                                         measured({st::tcp, 4, 0}, {50000})};
  const auto percent = compute_percent_of_udp(points);
  ASSERT_EQ(percent.size(), 1u);  // no UDP with 4 clients
  EXPECT_EQ(percent[0].transport, st::tcp);
  EXPECT_DOUBLE_EQ(percent[0].percent, 50);
  EXPECT_NEAR(percent[0].percent_min, 100 * 45000.0 / 110000, 1e-9);
  EXPECT_NEAR(percent[0].percent_max, 100 * 55000.0 / 90000, 1e-9);
  EXPECT_FALSE(percent[0].client_bound);
}

// A sweep with a point whose repeats differ by 40 % and a client-bound one, derived.
sweep_result spread_and_client_bound() {
  sweep_result r;
  r.points = {measured({st::udp, 1, 0}, {80000, 100000, 120000}),
              measured({st::tcp, 1, 0}, {50000}, 0.97)};
  r.planned_points = 2;
  derive_results(r);
  return r;
}

TEST(sweep_test, warns_about_spread_and_client_bound_points) {
  const sweep_result r = spread_and_client_bound();
  ASSERT_EQ(r.warnings.size(), 2u);
  EXPECT_NE(r.warnings[0].find("udp, 1 client: the repeats differ by 40 %"), std::string::npos);
  EXPECT_NE(r.warnings[1].find("1 of 2 points were client-bound"), std::string::npos);
}

// The warnings mark the settings they mention; the tables name them as the caller does (the
// CLI: its flags), the JSON as the sweep's own plan does, and both by paths without a namer.
TEST(sweep_test, warnings_name_settings_as_the_caller_names_them) {
  sweep_result r = spread_and_client_bound();
  const auto flag = [](std::string_view path) {
    if (path == "sweep_plan::repeats") return std::string("--repeats");
    if (path == "sweep_plan::duration_seconds") return std::string("--duration");
    if (path == "load_spec::generator.threads") return std::string("--threads");
    return std::string(path);
  };
  const std::string named = format_tables(r, flag);
  EXPECT_NE(named.find("use more --repeats or a longer --duration"), std::string::npos) << named;
  EXPECT_NE(named.find("give it more --threads or CPUs"), std::string::npos) << named;
  EXPECT_EQ(named.find('\x1e'), std::string::npos);
  const std::string by_path = format_tables(r);
  EXPECT_NE(by_path.find("use more sweep_plan::repeats or a longer sweep_plan::duration_seconds"),
            std::string::npos)
      << by_path;
  EXPECT_EQ(to_json(r).find("--repeats"), std::string::npos);
  r.plan.base.output.setting_name = flag;
  const std::string json = to_json(r);
  EXPECT_NE(json.find("use more --repeats"), std::string::npos) << json;
  EXPECT_EQ(json.find("\\u001e"), std::string::npos);
}

TEST(sweep_test, spread_warnings_are_one_line_naming_the_points_widest_first) {
  sweep_result r;
  r.points = {measured({st::udp, 1, 0}, {80000, 100000, 120000}),    // 40 %
              measured({st::tcp, 1, 0}, {90000, 100000, 110000}),    // 20 %
              measured({st::tcp, 4, 0}, {50000, 100000, 150000}),    // 100 %
              measured({st::tcp, 8, 0}, {100000, 101000, 102000})};  // 2 %: no warning
  r.planned_points = 4;
  derive_results(r);
  ASSERT_EQ(r.warnings.size(), 1u);
  const std::string& w = r.warnings[0];
  EXPECT_NE(w.find("at 3 of 4 points the repeats differ by more than the 15 %"), std::string::npos)
      << w;
  const auto widest = w.find("tcp, 4 clients, persistent connections (100 %)");
  const auto next = w.find("udp, 1 client (40 %)");
  const auto last = w.find("tcp, 1 client, persistent connections (20 %)");
  ASSERT_NE(widest, std::string::npos) << w;
  ASSERT_NE(next, std::string::npos) << w;
  ASSERT_NE(last, std::string::npos) << w;
  EXPECT_LT(widest, next);
  EXPECT_LT(next, last);
  EXPECT_EQ(w.find("8 clients"), std::string::npos) << w;
}

TEST(sweep_test, no_percent_of_udp_is_a_finding_when_udp_measured_the_generator) {
  sweep_result r;
  r.points = {measured({st::udp, 1, 0}, {100000}, 0.99), measured({st::tcp, 1, 0}, {500000}),
              measured({st::udp, 4, 0}, {200000}), measured({st::tcp, 4, 0}, {100000})};
  r.planned_points = 4;
  derive_results(r);
  ASSERT_EQ(r.percent_of_udp.size(), 2u);
  EXPECT_TRUE(r.percent_of_udp[0].reference_client_bound);
  EXPECT_FALSE(r.percent_of_udp[0].measurable());
  EXPECT_DOUBLE_EQ(r.percent_of_udp[0].percent, 500);  // kept, raw, for scripts
  EXPECT_TRUE(r.percent_of_udp[1].measurable());
  const std::string tables = format_tables(r);
  EXPECT_EQ(tables.find("500.0 %"), std::string::npos) << tables;
  EXPECT_NE(tables.find("UDP client-bound"), std::string::npos) << tables;
  EXPECT_NE(tables.find("50.0 % (50-50)"), std::string::npos) << tables;
  EXPECT_NE(to_json(r).find("\"reference_client_bound\": true"), std::string::npos);
}

// The findings of a sweep over UDP and TCP whose short connections wait 43 ms.
sweep_result found(double udp_cpu_share) {
  sweep_result r;
  r.plan.transports = {st::udp, st::tcp};
  r.points = {measured({st::udp, 4, 0}, {100000}, udp_cpu_share),
              measured({st::tcp, 4, 1}, {10000}), measured({st::tcp, 4, 10}, {40000}),
              measured({st::tcp, 4, 0}, {80000})};
  auto& short_connections = r.points[1].summary.latency;
  short_connections = latency_histogram{};
  short_connections.record_n(43'000'000, 100);
  r.planned_points = r.points.size();
  derive_results(r);
  return r;
}

const sweep_finding* finding(const sweep_result& r, std::string_view kind) {
  const auto at = std::find_if(r.findings.begin(), r.findings.end(),
                               [kind](const sweep_finding& f) { return f.kind == kind; });
  return at == r.findings.end() ? nullptr : &*at;
}

TEST(sweep_test, findings_say_what_tcp_keeps_what_a_connection_needs_and_name_delayed_acks) {
  const sweep_result r = found(0.5);
  const auto* kept = finding(r, "throughput");
  ASSERT_NE(kept, nullptr);
  EXPECT_NE(kept->text.find("TCP 80 % (4 clients)"), std::string::npos) << kept->text;
  const auto* amortized = finding(r, "amortization");
  ASSERT_NE(amortized, nullptr);
  ASSERT_EQ(r.amortization.size(), 1u);
  EXPECT_NE(amortized->text.find(fmt::format("TCP {:.0f}", r.amortization[0].n90)),
            std::string::npos)
      << amortized->text;
  const auto* delayed = finding(r, "delayed_ack");
  ASSERT_NE(delayed, nullptr);
  EXPECT_NE(delayed->text.find("TCP at 1 query per connection: 43 ms at p50"), std::string::npos)
      << delayed->text;
  EXPECT_NE(delayed->text.find("TCP_NODELAY"), std::string::npos);
  EXPECT_EQ(finding(r, "distrust"), nullptr);     // one repeat each, nothing client-bound
  EXPECT_EQ(finding(r, "server_cost"), nullptr);  // the server was not monitored
  const std::string text = format_tables(r);
  EXPECT_NE(text.find("Findings: DNS over UDP and TCP"), std::string::npos) << text;
  EXPECT_NE(to_json(r).find("\"kind\": \"delayed_ack\""), std::string::npos);
}

TEST(sweep_test, findings_give_the_share_of_udp_where_the_repeats_agree) {
  sweep_result r;
  r.plan.transports = {st::udp, st::tcp};
  // 16 clients: UDP's repeats disagree (a disturbed run: 50,000 against 100,000 q/s).
  r.points = {
      measured({st::udp, 4, 0}, {100000, 101000}), measured({st::udp, 16, 0}, {50000, 100000}),
      measured({st::tcp, 4, 0}, {50000, 50500}), measured({st::tcp, 16, 0}, {60000, 60500})};
  r.planned_points = r.points.size();
  derive_results(r);
  const auto* kept = finding(r, "throughput");
  ASSERT_NE(kept, nullptr);
  EXPECT_NE(kept->text.find("TCP 50 % (4 clients)"), std::string::npos) << kept->text;
  // No client count with steady repeats: the most clients, with the range.
  r.points[0] = measured({st::udp, 4, 0}, {50000, 100000});
  derive_results(r);
  kept = finding(r, "throughput");
  ASSERT_NE(kept, nullptr);
  EXPECT_NE(kept->text.find("TCP 80 % (16 clients, repeats disagree: 60 to 121 %)"),
            std::string::npos)
      << kept->text;
  // One client: "1 client".
  r.points = {measured({st::udp, 1, 0}, {100000}), measured({st::tcp, 1, 0}, {50000})};
  derive_results(r);
  kept = finding(r, "throughput");
  ASSERT_NE(kept, nullptr);
  EXPECT_NE(kept->text.find("TCP 50 % (1 client)"), std::string::npos) << kept->text;
}

TEST(sweep_test, findings_give_no_share_of_udp_when_udp_measured_the_generator) {
  const sweep_result r = found(0.99);
  const auto* kept = finding(r, "throughput");
  ASSERT_NE(kept, nullptr);
  EXPECT_NE(kept->text.find("UDP measured the generator"), std::string::npos) << kept->text;
  EXPECT_EQ(kept->text.find("%"), std::string::npos) << kept->text;
  const auto* careful = finding(r, "distrust");
  ASSERT_NE(careful, nullptr);
  EXPECT_NE(careful->text.find("1 of 4 points measured the generator"), std::string::npos)
      << careful->text;
}

TEST(sweep_test, no_delayed_ack_finding_when_short_connections_answer_quickly) {
  sweep_result r = found(0.5);
  r.points[1].summary.latency = latency_histogram{};
  r.points[1].summary.latency.record_n(2'000'000, 100);
  derive_results(r);
  EXPECT_EQ(finding(r, "delayed_ack"), nullptr);
}

// A sweep over TCP (2 clients, persistent connections) whose 100 queued answers came
// `spaced` one at a time, `overtook` out of order, with the server's CPU `busy` (of one CPU;
// negative: not monitored).
sweep_result queued_answers(std::uint64_t spaced, std::uint64_t overtook, double busy) {
  sweep_result r;
  r.plan.transports = {st::tcp};
  r.points = {measured({st::tcp, 2, 0}, {1000})};
  run_result& run = r.points[0].repeats[0];
  run.queued_answers = 100;
  run.one_at_a_time_answers = spaced;
  run.out_of_order = overtook;
  if (busy >= 0) {
    run.server_usage.pids = {1234};
    run.server_usage.cpu_share = busy;
  }
  r.planned_points = r.points.size();
  derive_results(r);
  return r;
}

TEST(sweep_test, a_server_answering_one_query_at_a_time_with_cpu_to_spare_is_named) {
  const sweep_result r = queued_answers(95, 0, 0.1);
  const auto* serial = finding(r, "one_at_a_time");
  ASSERT_NE(serial, nullptr);
  EXPECT_NE(serial->text.find("TCP: 95 of 100 answers"), std::string::npos) << serial->text;
  EXPECT_NE(serial->text.find("at most 10 % busy"), std::string::npos) << serial->text;
  EXPECT_NE(serial->text.find("RFC 7766"), std::string::npos) << serial->text;
}

TEST(sweep_test, answers_one_at_a_time_are_not_named_without_evidence_against_the_cpu) {
  // A busy CPU spaces a pipelining server's answers out the same way; without the monitor
  // nothing says it was not busy.
  EXPECT_EQ(finding(queued_answers(100, 0, 0.9), "one_at_a_time"), nullptr);
  EXPECT_EQ(finding(queued_answers(100, 0, -1), "one_at_a_time"), nullptr);
  // Answers that overtook others were worked on together; most answers close behind others.
  EXPECT_EQ(finding(queued_answers(100, 1, 0.1), "one_at_a_time"), nullptr);
  EXPECT_EQ(finding(queued_answers(80, 0, 0.1), "one_at_a_time"), nullptr);
}

TEST(sweep_test, json_round_trip_renders_identical_tables) {
  const sweep_result original = synthetic_sweep();
  const std::string json = to_json(original);
  const sweep_result read = sweep_result_from_json(json, "sweep.json");
  EXPECT_EQ(format_tables(read), format_tables(original));
  EXPECT_EQ(to_csv(read), to_csv(original));
  EXPECT_EQ(read.plan.transports, original.plan.transports);
  EXPECT_EQ(read.plan.ports[transport_kind::tls], 8853);
  EXPECT_EQ(read.plan.base.generator.coalesce_us, 100u);
  EXPECT_EQ(read.points.size(), original.points.size());
  EXPECT_EQ(read.points[4].repeats.size(), 3u);
  for (std::size_t i = 0; i < read.points.size(); ++i) {
    const run_result& a = read.points[i].repeats.front();
    const run_result& b = original.points[i].repeats.front();
    EXPECT_EQ(a.connections.closed_idle, b.connections.closed_idle);
    EXPECT_EQ(a.connections.concurrent_mean, b.connections.concurrent_mean);
    EXPECT_EQ(a.connections.concurrent_max, b.connections.concurrent_max);
    EXPECT_EQ(a.idle_seconds, b.idle_seconds);
    EXPECT_EQ(a.coalesce_us, b.coalesce_us);
  }
}

TEST(sweep_test, json_has_the_names_scripts_rely_on) {
  const std::string json = to_json(synthetic_sweep());
  for (const char* key :
       {"\"schema\": \"dnstransport.sweep/1\"", "\"points\"", "\"percent_of_udp\"",
        "\"amortization\"", "\"t_inf\"", "\"h\"", "\"n50\"", "\"n90\"", "\"n99\"", "\"residual\"",
        "\"client_bound\"", "\"summary\"", "\"repeats\"", "\"machine\"", "\"kernel\"",
        "\"tool_version\"", "\"target\""}) {
    EXPECT_NE(json.find(key), std::string::npos) << key;
  }
}

TEST(sweep_test, foreign_and_old_files_get_a_clear_error) {
  const auto error_for = [](const std::string& text) {
    return setup_error_of([&] { sweep_result_from_json(text, "old.json"); });
  };
  EXPECT_NE(error_for("{not json").find("old.json: not valid JSON"), std::string::npos);
  EXPECT_NE(error_for("[1, 2]").find("not a dnstransport sweep result"), std::string::npos);
  EXPECT_NE(error_for(R"({"name": "x"})").find("not a dnstransport sweep result"),
            std::string::npos);
  EXPECT_NE(error_for(to_json(run({st::tcp, 1, 0}, 1000))).find("single run"), std::string::npos);
  std::string older = to_json(synthetic_sweep());
  older.replace(older.find("dnstransport.sweep/1"), 20, "dnstransport.sweep/0");
  EXPECT_NE(error_for(older).find("another version of the sweep format"), std::string::npos);
  EXPECT_NE(error_for(R"({"schema": "other.tool/3"})").find("not a dnstransport sweep"),
            std::string::npos);
  std::string broken = to_json(synthetic_sweep());
  broken.replace(broken.find("\"machine\""), 9, "\"hardware\"");
  EXPECT_NE(error_for(broken).find("old.json: missing key \"machine\""), std::string::npos);
}

TEST(sweep_test, csv_has_one_row_per_point) {
  const sweep_result r = synthetic_sweep();
  std::istringstream csv(to_csv(r));
  std::string line;
  std::getline(csv, line);
  EXPECT_EQ(line.rfind("transport,tls_backend,clients,queries_per_connection,repeats,qps_mean", 0),
            0u);
  std::size_t rows = 0;
  while (std::getline(csv, line)) ++rows;
  EXPECT_EQ(rows, r.points.size());
}

TEST(sweep_test, tables_show_points_percent_of_udp_and_fits) {
  const std::string tables = format_tables(synthetic_sweep());
  for (const char* text :
       {"Points (queries/s", "TCP, TLS and DoH throughput as % of UDP", "Handshake amortization",
        "measured against the models", "client-bound", "yes (95 %)", "70.0 %", "Warnings"}) {
    EXPECT_NE(tables.find(text), std::string::npos) << text;
  }
}

TEST(sweep_test, report_without_gnuplot_still_writes_tables_csv_and_scripts) {
  const auto directory =
      std::filesystem::path(::testing::TempDir()) / ("sweep-report-" + std::to_string(getpid()));
  std::filesystem::remove_all(directory);
  const std::string path = std::getenv("PATH") != nullptr ? std::getenv("PATH") : "";
  setenv("PATH", "/nonexistent", 1);
  const auto written = write_report(synthetic_sweep(), directory, "sweep.json");
  setenv("PATH", path.c_str(), 1);
  EXPECT_NE(written.plot_problem.find("apt-get install gnuplot-nox"), std::string::npos);
  for (const char* file :
       {"index.html", "tables.txt", "points.csv", "percent_of_udp.csv", "amortization.csv",
        "qps_vs_clients.gp", "percent_of_udp.gp", "amortization_tcp.gp",
        "amortization_tls-openssl.gp", "latency_1_clients.gp", "connection_setup.gp"}) {
    EXPECT_TRUE(std::filesystem::exists(directory / file)) << file;
  }
  EXPECT_FALSE(std::filesystem::exists(directory / "qps_vs_clients.png"));
  std::ifstream index(directory / "index.html");
  const std::string html{std::istreambuf_iterator<char>(index), {}};
  EXPECT_NE(html.find("gnuplot-nox"), std::string::npos);
  EXPECT_NE(html.find("<table>"), std::string::npos);
  std::filesystem::remove_all(directory);
}

}  // namespace
}  // namespace dnstransport

namespace dnstransport {
namespace {

TEST(sweep_target_test, parses_name_address_and_ports) {
  const auto a = parse_sweep_target("unbound=127.0.0.1:5300,tls=8853,doh=8443");
  EXPECT_EQ(a.name, "unbound");
  EXPECT_EQ(a.server, "127.0.0.1");
  EXPECT_EQ(a.ports[transport_kind::udp], 5300);
  EXPECT_EQ(a.ports[transport_kind::tcp], 5300);
  EXPECT_EQ(a.ports[transport_kind::tls], 8853);
  EXPECT_EQ(a.ports[transport_kind::doh], 8443);
  const auto b = parse_sweep_target("knot 3.2=192.0.2.1");
  EXPECT_EQ(b.name, "knot 3.2");
  EXPECT_EQ(b.ports[transport_kind::udp], 53);
  EXPECT_EQ(b.ports[transport_kind::tls], 853);
  EXPECT_EQ(b.ports[transport_kind::doh], 443);
  const auto c = parse_sweep_target("v6=[::1]:5353,doh=443");
  EXPECT_EQ(c.server, "::1");
  EXPECT_EQ(c.ports[transport_kind::tcp], 5353);
  const auto d = parse_sweep_target(
      "knot=127.0.0.1,pid=12,cgroup=system.slice/knot.service,cgroup=/sys/fs/cgroup/x,pid=13");
  EXPECT_EQ(d.monitor.pids, (std::vector<int>{12, 13}));
  EXPECT_EQ(d.monitor.cgroups,
            (std::vector<std::string>{"system.slice/knot.service", "/sys/fs/cgroup/x"}));
  // Any transport's name is a key, its aliases too; the DNS port stays for the others.
  const auto e = parse_sweep_target("e=127.0.0.1:5300,tcp=5301,dot=8853,doq=8854");
  EXPECT_EQ(e.ports[transport_kind::udp], 5300);
  EXPECT_EQ(e.ports[transport_kind::tcp], 5301);
  EXPECT_EQ(e.ports[transport_kind::tls], 8853);
  EXPECT_EQ(e.ports[transport_kind::doh], 443);
  EXPECT_EQ(e.ports[transport_kind::doq], 8854);
  for (const char* bad :
       {"127.0.0.1", "=127.0.0.1", "a=", "a=127.0.0.1,quic=853", "a=127.0.0.1,tls=70000",
        "a=127.0.0.1,tls=x", "a=127.0.0.1,,tls=1", "a=127.0.0.1:99999", "a=127.0.0.1,cgroup="}) {
    EXPECT_NE(setup_error_of([&] { parse_sweep_target(bad); }).find("sweep_plan::targets"),
              std::string::npos)
        << bad;
  }
}

TEST(sweep_target_test, every_point_runs_against_each_target_in_turn) {
  sweep_plan plan;
  plan.transports = {st::udp, st::tcp};
  plan.clients = {1, 4};
  plan.queries_per_connection = {0};
  plan.targets = {parse_sweep_target("a=127.0.0.1:5300,tls=8853"),
                  parse_sweep_target("b=127.0.0.2:5400")};
  const auto points = expand(plan);
  ASSERT_EQ(points.size(), 8u);
  EXPECT_EQ(points[0], (sweep_point{st::udp, 1, 0, "a"}));
  EXPECT_EQ(points[1], (sweep_point{st::udp, 1, 0, "b"}));
  EXPECT_EQ(points[2], (sweep_point{st::udp, 4, 0, "a"}));
  EXPECT_EQ(points[7], (sweep_point{st::tcp, 4, 0, "b"}));
  EXPECT_EQ(describe(points[7]), "b: tcp, 4 clients, persistent connections");
  const auto spec = point_spec(plan, points[7]);
  EXPECT_EQ(spec.target.server, "127.0.0.2");
  EXPECT_EQ(spec.target.port, 5400);
  EXPECT_EQ(point_spec(plan, points[0]).target.server, "127.0.0.1");
  EXPECT_EQ(point_spec(plan, {st::tls_openssl, 1, 0, "a"}).target.port, 8853);
  // Each target's monitoring goes with its points only.
  plan.targets[1].monitor.pids = {7};
  plan.targets[1].monitor.cgroups = {"b.service"};
  plan.targets[1].monitor.command = "ssh b dnstransport monitor --pid 7";
  EXPECT_EQ(point_spec(plan, points[7]).monitor.command, "ssh b dnstransport monitor --pid 7");
  EXPECT_EQ(point_spec(plan, points[7]).monitor.cgroups, std::vector<std::string>{"b.service"});
  EXPECT_TRUE(point_spec(plan, points[6]).monitor.command.empty());
  EXPECT_TRUE(point_spec(plan, points[6]).monitor.cgroups.empty());
  plan.targets.push_back(parse_sweep_target("a=127.0.0.3"));
  EXPECT_NE(
      setup_error_of([&] { expand(plan); }).find("sweep_plan::targets: the name a appears twice"),
      std::string::npos);
}

// The synthetic sweep measured against two targets: "fast" as it is, "slow" at half of it.
sweep_result two_target_sweep() {
  const sweep_result one = synthetic_sweep();
  sweep_result r = one;
  r.plan.targets = {parse_sweep_target("fast=127.0.0.1:5300,tls=8853"),
                    parse_sweep_target("slow=127.0.0.2:5300,tls=8853")};
  r.planned_points = 2 * one.planned_points;
  r.points.clear();
  for (const auto& p : one.points) {
    for (const char* target : {"fast", "slow"}) {
      sweep_point_result copy = p;
      copy.point.target = target;
      if (copy.point.target == "slow") {
        for (auto& run : copy.repeats) run.qps /= 2;
        copy.summary = summarize(copy.repeats);
      }
      r.points.push_back(std::move(copy));
    }
  }
  derive_results(r);
  return r;
}

TEST(sweep_target_test, percent_of_udp_and_fits_are_per_target) {
  const sweep_result one = synthetic_sweep();
  const sweep_result r = two_target_sweep();
  // Each target against its own UDP: both have the single sweep's percentages.
  ASSERT_EQ(r.percent_of_udp.size(), 2 * one.percent_of_udp.size());
  for (const auto& e : r.percent_of_udp) {
    const auto same = std::find_if(one.percent_of_udp.begin(), one.percent_of_udp.end(),
                                   [&e](const percent_of_udp_entry& o) {
                                     return o.transport == e.transport && o.clients == e.clients &&
                                            o.queries_per_connection == e.queries_per_connection;
                                   });
    ASSERT_NE(same, one.percent_of_udp.end());
    EXPECT_NEAR(e.percent, same->percent, 1e-6) << e.target;
  }
  ASSERT_EQ(r.amortization.size(), 2 * one.amortization.size());
  EXPECT_EQ(r.amortization[0].target, "fast");
  EXPECT_EQ(r.amortization[1].target, "slow");
  EXPECT_NEAR(r.amortization[1].model.t_inf, r.amortization[0].model.t_inf / 2,
              1e-6 * r.amortization[0].model.t_inf);
  EXPECT_NEAR(r.amortization[1].model.h, r.amortization[0].model.h, 1e-6);
}

TEST(sweep_target_test, json_names_each_points_target_and_reports_compare_the_targets) {
  sweep_result r = two_target_sweep();
  r.plan.targets[0].monitor.cgroups = {"fast.service"};
  r.plan.targets[1].monitor.command = "ssh slow dnstransport monitor --pid 1";
  r.plan.base.monitor.command = "kept too";
  const std::string json = to_json(r);
  EXPECT_NE(json.find("\"targets\""), std::string::npos);
  EXPECT_NE(json.find("\"target\": \"slow\""), std::string::npos);
  const sweep_result read = sweep_result_from_json(json, "two.json");
  EXPECT_EQ(read.plan.targets, r.plan.targets);
  EXPECT_EQ(read.plan.base.monitor.command, "kept too");
  ASSERT_EQ(read.points.size(), r.points.size());
  EXPECT_EQ(read.points[1].point.target, "slow");
  EXPECT_EQ(to_csv(read), to_csv(r));
  EXPECT_EQ(to_csv(r).rfind("target,transport,", 0), 0u);

  const auto sweeps = comparison_of({{"two.json", read}});
  ASSERT_EQ(sweeps.size(), 2u);
  EXPECT_EQ(sweeps[0].name, "fast");
  EXPECT_EQ(sweeps[1].name, "slow");
  EXPECT_EQ(sweeps[1].result.plan.base.target.server, "127.0.0.2");
  EXPECT_EQ(sweeps[1].result.points.size(), synthetic_sweep().points.size());
  EXPECT_EQ(sweeps[1].result.percent_of_udp.size(), synthetic_sweep().percent_of_udp.size());
  // Printed after the sweep and by `report`: the comparison of its targets.
  const std::string tables = format_tables(read);
  EXPECT_NE(tables.find("Comparison of 2 sweeps"), std::string::npos);
  EXPECT_NE(tables.find("fast:"), std::string::npos);
  EXPECT_NE(tables.find("slow:"), std::string::npos);
  // With several files, a target is named by file and target.
  EXPECT_EQ(comparison_of({{"x/two.json", read}, {"one.json", synthetic_sweep()}})[1].name,
            "two/slow");

  std::string unknown = json;
  unknown.replace(unknown.find("\"target\": \"slow\""), 16, "\"target\": \"else\"");
  EXPECT_NE(setup_error_of([&] {
              sweep_result_from_json(unknown, "two.json");
            }).find("names a target that is not in \"targets\""),
            std::string::npos);
}

}  // namespace
}  // namespace dnstransport
