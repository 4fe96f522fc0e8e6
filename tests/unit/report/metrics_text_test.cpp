// metrics_text: the live figures as Prometheus's text format and OpenMetrics.
#include <dnstransport/metrics.hpp>

#include <gtest/gtest.h>

#include <dnstransport/error.hpp>
#include <dnstransport/sweep_plan.hpp>

namespace dnstransport {
namespace {

bool has_line(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

live_figures some_figures() {
  live_figures f;
  f.seconds = 2.5;
  f.queries.queries_sent = 1000;
  f.queries.responses_received = 950;
  f.queries.lost = 20;
  f.queries.lost_on_close = 5;
  f.queries.malformed = 3;
  f.queries.http_failed = 2;
  f.queries.late = 7;
  f.connections_open = 4;
  f.connections_opened = 40;
  f.handshakes_full = 30;
  f.handshakes_resumed = 10;
  f.generator_cpu_seconds = 0.75;
  // 900 answers at 200 us, 50 at 3 ms.
  f.latency.record_n(200'000, 900);
  f.latency.record_n(3'000'000, 50);
  return f;
}

TEST(metrics_text_test, prometheus_text_counts_every_outcome_under_its_cause) {
  const std::string text = metrics_text(
      some_figures(), {{"server", "192.0.2.1"}, {"transport", "doh"}}, metrics_format::prometheus);
  const std::string l = R"(server="192.0.2.1",transport="doh")";
  EXPECT_TRUE(has_line(text, "# TYPE dnstransport_queries_sent_total counter")) << text;
  EXPECT_TRUE(has_line(text, "dnstransport_queries_sent_total{" + l + "} 1000")) << text;
  EXPECT_TRUE(has_line(text, "dnstransport_answers_total{" + l + "} 950"));
  EXPECT_TRUE(has_line(text, "dnstransport_lost_total{" + l + ",cause=\"timeout\"} 20"));
  EXPECT_TRUE(has_line(text, "dnstransport_lost_total{" + l + ",cause=\"connection_closed\"} 5"));
  EXPECT_TRUE(has_line(text, "dnstransport_failed_total{" + l + ",cause=\"malformed\"} 3"));
  EXPECT_TRUE(has_line(text, "dnstransport_failed_total{" + l + ",cause=\"http_failed\"} 2"));
  EXPECT_TRUE(has_line(text, "dnstransport_stray_packets_total{" + l + ",kind=\"late\"} 7"));
  // 1000 sent, 950 + 25 + 5 ended.
  EXPECT_TRUE(has_line(text, "dnstransport_in_flight{" + l + "} 20"));
  EXPECT_TRUE(has_line(text, "dnstransport_connections_open{" + l + "} 4"));
  EXPECT_TRUE(has_line(text, "dnstransport_handshakes_total{" + l + ",kind=\"resumed\"} 10"));
  EXPECT_TRUE(has_line(text, "dnstransport_generator_cpu_seconds_total{" + l + "} 0.75"));
  EXPECT_TRUE(has_line(text, "dnstransport_measured_seconds{" + l + "} 2.5"));
  EXPECT_TRUE(has_line(text, "dnstransport_finished{" + l + "} 0"));
  // Not monitored: no server figures.
  EXPECT_EQ(text.find("dnstransport_server_"), std::string::npos);
  EXPECT_EQ(text.find("# EOF"), std::string::npos);
  EXPECT_EQ(text.find("# UNIT"), std::string::npos);
}

TEST(metrics_text_test, latency_buckets_count_the_answers_at_or_below_each_bound) {
  const std::string text = metrics_text(some_figures(), {}, metrics_format::prometheus);
  EXPECT_TRUE(has_line(text, "dnstransport_latency_seconds_bucket{le=\"0.0001\"} 0")) << text;
  EXPECT_TRUE(has_line(text, "dnstransport_latency_seconds_bucket{le=\"0.00025\"} 900"));
  EXPECT_TRUE(has_line(text, "dnstransport_latency_seconds_bucket{le=\"0.0025\"} 900"));
  EXPECT_TRUE(has_line(text, "dnstransport_latency_seconds_bucket{le=\"0.005\"} 950"));
  EXPECT_TRUE(has_line(text, "dnstransport_latency_seconds_bucket{le=\"+Inf\"} 950"));
  EXPECT_TRUE(has_line(text, "dnstransport_latency_seconds_count 950"));
  // 900 x 0.0002 + 50 x 0.003 = 0.33 s.
  EXPECT_TRUE(has_line(text, "dnstransport_latency_seconds_sum 0.33")) << text;
}

TEST(metrics_text_test, a_bucket_that_straddles_a_bound_is_counted_above_it) {
  // 1 ms falls inside one of the histogram's buckets (they are powers of two split in
  // 128): answers recorded at exactly 1 ms may be up to 1/128 above it, so they are not
  // counted as certainly at or below 1 ms.
  live_figures f;
  f.latency.record_n(1'000'000, 5);
  const std::string text = metrics_text(f, {}, metrics_format::prometheus);
  const auto highest =
      latency_histogram::bucket_highest(latency_histogram::bucket_index(1'000'000));
  EXPECT_TRUE(has_line(text, fmt::format("dnstransport_latency_seconds_bucket{{le=\"0.001\"}} {}",
                                         highest <= 1'000'000 ? 5 : 0)))
      << text;
  EXPECT_TRUE(has_line(text, "dnstransport_latency_seconds_bucket{le=\"0.0025\"} 5"));
}

TEST(metrics_text_test, openmetrics_names_counter_families_without_total_and_ends_in_eof) {
  live_figures f = some_figures();
  f.server_cpu_seconds = 1.25;
  f.server_rss_bytes = 1 << 20;
  f.finished = true;
  const std::string text = metrics_text(f, {}, metrics_format::openmetrics);
  EXPECT_TRUE(has_line(text, "# TYPE dnstransport_answers counter")) << text;
  EXPECT_TRUE(has_line(text, "dnstransport_answers_total 950"));
  EXPECT_TRUE(has_line(text, "# TYPE dnstransport_latency_seconds histogram"));
  EXPECT_TRUE(has_line(text, "# UNIT dnstransport_latency_seconds seconds"));
  EXPECT_TRUE(has_line(text, "# UNIT dnstransport_server_cpu_seconds seconds"));
  EXPECT_TRUE(has_line(text, "dnstransport_server_cpu_seconds_total 1.25"));
  EXPECT_TRUE(has_line(text, "dnstransport_server_resident_memory_bytes 1048576"));
  EXPECT_TRUE(has_line(text, "dnstransport_finished 1"));
  EXPECT_TRUE(text.ends_with("\n# EOF\n"));
}

TEST(metrics_text_test, label_values_are_escaped_and_bad_label_names_refused) {
  const std::string text =
      metrics_text(live_figures{}, {{"label", "a \"b\" \\ c\nd"}}, metrics_format::prometheus);
  EXPECT_TRUE(has_line(text, R"(dnstransport_answers_total{label="a \"b\" \\ c\nd"} 0)")) << text;
  EXPECT_THROW(metrics_text(live_figures{}, {{"bad-name", "x"}}, metrics_format::prometheus),
               setup_error);
  EXPECT_THROW(metrics_text(live_figures{}, {{"1st", "x"}}, metrics_format::prometheus),
               setup_error);
}

TEST(metrics_text_test, a_loads_labels_are_its_server_transport_and_label) {
  load_spec spec;
  spec.target.server = "[::1]:853";
  spec.target.transport = transport_kind::tls;
  EXPECT_EQ(metrics_labels_of(spec),
            (metrics_labels{{"server", "[::1]:853"}, {"transport", "tls"}}));
  spec.output.label = "unbound 1.17";
  EXPECT_EQ(metrics_labels_of(spec).back(),
            (std::pair<std::string, std::string>{"label", "unbound 1.17"}));
}

TEST(metrics_text_test, a_sweep_points_labels_name_its_cell_of_the_grid) {
  sweep_plan plan;
  plan.base.target.server = "192.0.2.1";
  const sweep_point tls{{transport_kind::tls, tls_backend::gnutls}, 8, 100};
  EXPECT_EQ(metrics_labels_of(plan, tls), (metrics_labels{{"server", "192.0.2.1"},
                                                          {"transport", "tls-gnutls"},
                                                          {"clients", "8"},
                                                          {"queries_per_connection", "100"}}));
  // Persistent connections; the distinct-sources axis, a target of its own and a label.
  plan.distinct_sources = {1, 1000};
  sweep_target unbound = parse_sweep_target("unbound=192.0.2.53");
  plan.targets = {unbound};
  plan.base.output.label = "study";
  sweep_point point{{transport_kind::tcp, std::nullopt}, 2, 0, "unbound", 1000};
  EXPECT_EQ(metrics_labels_of(plan, point), (metrics_labels{{"server", "192.0.2.53"},
                                                            {"transport", "tcp"},
                                                            {"clients", "2"},
                                                            {"queries_per_connection", "unlimited"},
                                                            {"distinct_sources", "1000"},
                                                            {"target", "unbound"},
                                                            {"label", "study"}}));
}

TEST(metrics_text_test, a_study_follows_the_loads_figures_under_its_own_labels) {
  metrics_study sweep;
  sweep.labels = {{"label", "grid"}};
  sweep.loads_done = 3;
  sweep.loads_planned = 12;
  sweep.eta_seconds = 4.5;
  const std::string text =
      metrics_text(some_figures(), {{"transport", "tcp"}}, sweep, metrics_format::openmetrics);
  EXPECT_TRUE(has_line(text, "dnstransport_answers_total{transport=\"tcp\"} 950")) << text;
  EXPECT_TRUE(has_line(text, "# TYPE dnstransport_sweep_runs counter"));
  EXPECT_TRUE(has_line(text, "dnstransport_sweep_runs_total{label=\"grid\"} 3"));
  EXPECT_TRUE(has_line(text, "dnstransport_sweep_runs_planned{label=\"grid\"} 12"));
  EXPECT_TRUE(has_line(text, "dnstransport_sweep_eta_seconds{label=\"grid\"} 4.5"));
  EXPECT_TRUE(text.ends_with("\n# EOF\n"));
  EXPECT_EQ(text.find("dnstransport_search_"), std::string::npos);

  metrics_study search;
  search.study = metrics_study::kind::search;
  search.loads_done = 5;
  search.offered_rate = 12000;
  search.passed_rate = 8000;
  const std::string searched = metrics_text(some_figures(), {}, search, metrics_format::prometheus);
  EXPECT_TRUE(has_line(searched, "# TYPE dnstransport_search_steps_total counter")) << searched;
  EXPECT_TRUE(has_line(searched, "dnstransport_search_steps_total 5"));
  EXPECT_TRUE(has_line(searched, "dnstransport_search_offered_rate 12000"));
  EXPECT_TRUE(has_line(searched, "dnstransport_search_passed_rate 8000"));
  EXPECT_EQ(searched.find("dnstransport_sweep_"), std::string::npos);
}

}  // namespace
}  // namespace dnstransport
