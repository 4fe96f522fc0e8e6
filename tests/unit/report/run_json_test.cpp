// A run's JSON read back: the 0-RTT figures of every TLS transport, and those of DoQ results
// written before DoT and DoH had 0-RTT (under "quic"); the generator's own wake-ups and
// system calls, and results written before it counted them.
#include <dnstransport/report.hpp>

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <string_view>
#include <type_traits>

#include <fmt/format.h>
#include <boost/json.hpp>

#include <dnstransport/error.hpp>
#include <dnstransport/load.hpp>

#include "report/run_json_parts.hpp"

namespace dnstransport {
namespace {

run_result tls_run(transport_kind transport) {
  run_result r;
  r.server = "127.0.0.1";
  r.port = 853;
  r.transport = transport;
  r.tls_backend = "gnutls";
  r.clients = 2;
  r.queries_sent = r.responses_received = 60;
  r.early_data = {58, 50, 8, 58, 8};
  return r;
}

TEST(run_json_test, early_data_figures_survive_json_for_every_tls_transport) {
  for (const transport_kind t : {transport_kind::tls, transport_kind::doh, transport_kind::doq}) {
    const run_result back = run_result_from_json(to_json(tls_run(t)), "run.json");
    EXPECT_EQ(back.early_data.offered, 58u) << transport_name(t);
    EXPECT_EQ(back.early_data.accepted, 50u);
    EXPECT_EQ(back.early_data.rejected, 8u);
    EXPECT_EQ(back.early_data.queries_in_early_data, 58u);
    EXPECT_EQ(back.early_data.queries_resent, 8u);
  }
  // The table names them once the run offered any.
  EXPECT_NE(format_table(tls_run(transport_kind::tls))
                .find("58 connections offered, 50 accepted, 8 refused; 58 queries sent early, 8 "
                      "sent again after a refusal"),
            std::string::npos);
}

TEST(run_json_test, doq_early_data_of_older_results_is_read_from_quic) {
  boost::json::object o = boost::json::parse(to_json(tls_run(transport_kind::doq))).as_object();
  // What results written before kept: the figures under "quic", with a prefix.
  ASSERT_TRUE(o.erase("early_data"));
  boost::json::object& quic = o.at("quic").as_object();
  quic["early_data_offered"] = 7;
  quic["early_data_accepted"] = 6;
  quic["early_data_rejected"] = 1;
  quic["queries_in_early_data"] = 7;
  quic["queries_resent"] = 1;
  const std::string json = boost::json::serialize(o);
  const run_result back = run_result_from_json(json, "old.json");
  EXPECT_EQ(back.early_data.offered, 7u);
  EXPECT_EQ(back.early_data.accepted, 6u);
  EXPECT_EQ(back.early_data.rejected, 1u);
  EXPECT_EQ(back.early_data.queries_in_early_data, 7u);
  EXPECT_EQ(back.early_data.queries_resent, 1u);
}

run_result udp_run_with_generator_figures() {
  run_result r;
  r.server = "127.0.0.1";
  r.port = 53;
  r.clients = 1;
  r.queries_sent = r.responses_received = 1000;
  r.generator = {1020, 2050, 30, 980, 250};
  r.coalesce_us = 1000;
  return r;
}

TEST(run_json_test, generator_figures_survive_json_and_show_per_answer) {
  const run_result r = udp_run_with_generator_figures();
  EXPECT_DOUBLE_EQ(r.wakeups_per_answer(), 1.02);
  EXPECT_DOUBLE_EQ(r.syscalls_per_answer(), 2.05);
  EXPECT_DOUBLE_EQ(r.sleeps_per_answer(), 0.98);
  const std::string json = to_json(r);
  const boost::json::value parsed = boost::json::parse(json);
  const boost::json::object& g = parsed.as_object().at("generator").as_object();
  EXPECT_EQ(g.at("wakeups").as_int64(), 1020);
  EXPECT_EQ(g.at("syscalls").as_int64(), 2050);
  EXPECT_EQ(g.at("syscalls_would_block").as_int64(), 30);
  EXPECT_DOUBLE_EQ(g.at("wakeups_per_answer").as_double(), 1.02);
  EXPECT_DOUBLE_EQ(g.at("syscalls_per_answer").as_double(), 2.05);
  EXPECT_EQ(g.at("sleeps").as_int64(), 980);
  EXPECT_DOUBLE_EQ(g.at("sleeps_per_answer").as_double(), 0.98);

  const run_result back = run_result_from_json(json, "run.json");
  EXPECT_EQ(back.generator.wakeups, 1020u);
  EXPECT_EQ(back.generator.syscalls, 2050u);
  EXPECT_EQ(back.generator.syscalls_would_block, 30u);
  EXPECT_EQ(back.generator.sleeps, 980u);
  EXPECT_EQ(back.generator.reads_delayed, 250u);
  EXPECT_EQ(back.coalesce_us, 1000u);
  EXPECT_NE(format_table(back).find("  generator               1.02 wake-ups, 0.98 sleeps and 2.05 "
                                    "system calls per answer (1 % of the calls returned "
                                    "EAGAIN); 0.25 reads per answer delayed by coalescing (up "
                                    "to 1000 us and 1/20 of the latency)\n"),
            std::string::npos)
      << format_table(back);
  // Which mode ran, also when coalescing delayed nothing or was off.
  run_result idle = back;
  idle.generator.reads_delayed = 0;
  EXPECT_NE(format_table(idle).find("; coalescing on, no read delayed (too few queries in flight "
                                    "or answers too fast)\n"),
            std::string::npos)
      << format_table(idle);
  idle.coalesce_us = 0;
  idle.arrivals = arrival_mode::closed;
  EXPECT_NE(format_table(idle).find(
                "EAGAIN); coalescing off (a closed loop reads each answer as it comes)\n"),
            std::string::npos)
      << format_table(idle);
  idle.arrivals = arrival_mode::poisson;
  idle.rate = 1000;
  EXPECT_NE(format_table(idle).find("EAGAIN); coalescing off\n"), std::string::npos)
      << format_table(idle);
}

// A number beyond a double's range reads as infinite: refused, naming the key, rather than
// read and written back as JSON no reader takes ("Infinity"; found by fuzz_json_results).
TEST(run_json_test, a_number_out_of_range_is_refused_naming_its_key) {
  boost::json::object o = boost::json::parse(to_json(udp_run_with_generator_figures())).as_object();
  std::string text = boost::json::serialize(o);
  const std::string key = "\"elapsed_seconds\":";
  const auto at = text.find(key);
  ASSERT_NE(at, std::string::npos) << text;
  const auto end = text.find_first_of(",}", at);
  text.replace(at + key.size(), end - at - key.size(), "7.19E483");
  try {
    (void)run_result_from_json(text, "huge.json");
    ADD_FAILURE() << "read";
  } catch (const setup_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("huge.json"), std::string::npos) << what;
    EXPECT_NE(what.find("\"elapsed_seconds\" is out of range"), std::string::npos) << what;
  }
}

TEST(run_json_test, results_from_before_the_generator_counts_read_as_zero) {
  boost::json::object o = boost::json::parse(to_json(udp_run_with_generator_figures())).as_object();
  ASSERT_TRUE(o.erase("generator"));
  const run_result back = run_result_from_json(boost::json::serialize(o), "old.json");
  EXPECT_EQ(back.generator.wakeups, 0u);
  EXPECT_EQ(back.generator.syscalls, 0u);
  EXPECT_EQ(back.generator.syscalls_would_block, 0u);
  EXPECT_EQ(back.wakeups_per_answer(), 0);
  EXPECT_EQ(back.syscalls_per_answer(), 0);
  EXPECT_EQ(back.generator.sleeps, 0u);
  EXPECT_EQ(back.generator.reads_delayed, 0u);
  // Nothing counted: the table says nothing rather than "0.00 per answer".
  EXPECT_EQ(format_table(back).find("wake-ups"), std::string::npos);
}

// --verify's certificate counts: kept in the JSON and shown in the table; results written
// before they were counted read as zero and show no line.
TEST(run_json_test, certificate_chain_counts_survive_json_and_old_results_read_as_zero) {
  run_result r = tls_run(transport_kind::tls);
  r.connections.certificates_verified = 2;
  r.connections.certificates_reused = 58;
  const std::string json = to_json(r);
  const boost::json::value parsed = boost::json::parse(json);
  const boost::json::object& c = parsed.as_object().at("connections").as_object();
  EXPECT_EQ(c.at("certificates_verified").as_int64(), 2);
  EXPECT_EQ(c.at("certificates_reused").as_int64(), 58);
  const run_result back = run_result_from_json(json, "run.json");
  EXPECT_EQ(back.connections.certificates_verified, 2u);
  EXPECT_EQ(back.connections.certificates_reused, 58u);
  EXPECT_NE(format_table(back).find("certificate chains      2 verified in full, 58 handshakes "
                                    "reused a verdict"),
            std::string::npos)
      << format_table(back);

  boost::json::object o = boost::json::parse(json).as_object();
  boost::json::object& old_connections = o.at("connections").as_object();
  old_connections.erase("certificates_verified");
  old_connections.erase("certificates_reused");
  const run_result old = run_result_from_json(boost::json::serialize(o), "old.json");
  EXPECT_EQ(old.connections.certificates_verified, 0u);
  EXPECT_EQ(old.connections.certificates_reused, 0u);
  EXPECT_EQ(format_table(old).find("certificate chains"), std::string::npos);
}

// Every per-query count is written under its name, read back, and added over members; one
// the file does not have (written before it was counted) reads as zero.
TEST(run_json_test, every_query_count_survives_json_and_old_results_read_as_zero) {
  run_result r = tls_run(transport_kind::tls);
  std::uint64_t value = 1000;
  for (const auto& d : query_count_descriptions) r.*d.member = value++;
  const std::string json = to_json(r);
  const run_result back = run_result_from_json(json, "run.json");
  const boost::json::object o = boost::json::parse(json).as_object();
  for (const auto& d : query_count_descriptions) {
    EXPECT_EQ(back.*d.member, r.*d.member) << d.name;
    EXPECT_EQ(o.at(d.name).to_number<std::uint64_t>(), r.*d.member) << d.name;
  }
  query_counts twice = r;
  twice += r;
  for (const auto& d : query_count_descriptions) EXPECT_EQ(twice.*d.member, 2 * r.*d.member);
  // Counts with a label have their line in the table.
  EXPECT_NE(format_table(r).find("authenticated (AD)"), std::string::npos);

  boost::json::object old = o;
  ASSERT_TRUE(old.erase("authenticated_answers"));
  const run_result before = run_result_from_json(boost::json::serialize(old), "old.json");
  EXPECT_EQ(before.authenticated_answers, 0u);
  EXPECT_EQ(before.lost, r.lost);
  EXPECT_EQ(format_table(before).find("authenticated (AD)"), std::string::npos);
}

// The same for the connection, 0-RTT, QUIC and generator counts, each in its own object.
TEST(run_json_test, every_count_of_every_group_survives_json_and_adds) {
  run_result r = tls_run(transport_kind::doq);
  std::uint64_t value = 2000;
  const auto fill = [&value](auto& counts) {
    using counts_type = std::remove_cvref_t<decltype(counts)>;
    for (const auto& d : count_descriptions<counts_type>) counts.*d.member = value++;
  };
  fill(static_cast<connection_counts&>(r.connections));
  fill(r.early_data);
  fill(static_cast<quic_counts&>(r.quic));
  fill(r.generator);
  const run_result back = run_result_from_json(to_json(r), "run.json");
  const auto expect_same = [](const auto& got, const auto& want, const auto& descriptions) {
    for (const auto& d : descriptions) EXPECT_EQ(got.*d.member, want.*d.member) << d.name;
  };
  expect_same(back.connections, r.connections, connection_count_descriptions);
  expect_same(back.early_data, r.early_data, early_data_descriptions);
  expect_same(back.quic, r.quic, quic_count_descriptions);
  expect_same(back.generator, r.generator, generator_descriptions);

  run_result twice = r;
  twice.connections += r.connections;
  twice.early_data += r.early_data;
  twice.quic += r.quic;
  twice.generator += r.generator;
  const auto expect_doubled = [](const auto& got, const auto& once, const auto& descriptions) {
    for (const auto& d : descriptions) EXPECT_EQ(got.*d.member, 2 * once.*d.member) << d.name;
  };
  expect_doubled(twice.connections, r.connections, connection_count_descriptions);
  expect_doubled(twice.early_data, r.early_data, early_data_descriptions);
  expect_doubled(twice.quic, r.quic, quic_count_descriptions);
  expect_doubled(twice.generator, r.generator, generator_descriptions);
}

TEST(run_json_test, every_query_count_is_described_once_under_its_own_name) {
  std::set<std::string_view> names;
  for (const auto& d : query_count_descriptions) {
    EXPECT_TRUE(names.insert(d.name).second) << d.name;
    std::size_t same_member = 0;
    for (const auto& e : query_count_descriptions) same_member += e.member == d.member ? 1 : 0;
    EXPECT_EQ(same_member, 1u) << d.name;
  }
}

// Gives every described field of `s` a value of its own (the n-th field: n + 1, or "n"),
// so that a field written under one key and read from another shows.
template <typename S>
void set_distinct(S& s, std::span<const detail::field_description<S>> fields, int& n) {
  for (const auto& f : fields) {
    ++n;
    std::visit(
        [&](auto member) {
          using value = std::remove_cvref_t<decltype(s.*member)>;
          if constexpr (std::is_same_v<value, std::string>) {
            s.*member = fmt::format("v{}", n);
          } else if constexpr (std::is_same_v<value, bool>) {
            s.*member = !(s.*member);
          } else {
            s.*member = static_cast<value>(n);
          }
        },
        f.member);
  }
}

template <typename S>
void expect_same_fields(const S& got, const S& want,
                        std::span<const detail::field_description<S>> fields) {
  for (const auto& f : fields) {
    std::visit([&](auto member) { EXPECT_EQ(got.*member, want.*member) << f.key; }, f.member);
  }
}

TEST(run_json_test, every_described_setting_figure_and_rank_field_survives_json) {
  run_result r = tls_run(transport_kind::tls);
  int n = 0;
  set_distinct(r, detail::run_setting_fields, n);
  set_distinct(r, detail::run_figure_fields, n);
  rank_result rank;
  set_distinct(rank, detail::rank_fields, n);
  r.ranks = {rank, rank};
  r.ranks[1].rank = 7;
  const run_result back = run_result_from_json(to_json(r), "run.json");
  expect_same_fields(back, r, detail::run_setting_fields);
  expect_same_fields(back, r, detail::run_figure_fields);
  ASSERT_EQ(back.ranks.size(), 2u);
  expect_same_fields(back.ranks[0], r.ranks[0], detail::rank_fields);
  EXPECT_EQ(back.ranks[1].rank, 7u);
}

TEST(run_json_test, fields_that_came_later_read_as_their_defaults_from_older_files) {
  run_result r = tls_run(transport_kind::tls);
  r.label = "unbound";
  r.rate = 5000;
  r.coalesce_us = 1000;
  r.client_rss_bytes = 1 << 20;
  boost::json::object o = boost::json::parse(to_json(r)).as_object();
  for (const auto* fields : {&detail::run_setting_fields, &detail::run_figure_fields}) {
    for (const auto& f : *fields) {
      if (f.since_later) {
        EXPECT_TRUE(o.erase(f.key)) << f.key;
      }
    }
  }
  const run_result old = run_result_from_json(boost::json::serialize(o), "old.json");
  EXPECT_EQ(old.label, "");
  EXPECT_EQ(old.rate, 0.0);
  EXPECT_EQ(old.coalesce_us, 0u);
  EXPECT_EQ(old.client_rss_bytes, 0u);
  EXPECT_EQ(old.clients, 2u);  // a field every file has is still read
  // One that every file has is required.
  o.erase("clients");
  EXPECT_THROW(run_result_from_json(boost::json::serialize(o), "bad.json"), setup_error);
}

}  // namespace
}  // namespace dnstransport
