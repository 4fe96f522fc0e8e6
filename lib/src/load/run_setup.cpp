// What one process's load needs before its first query, made from its spec: the server
// resolved, the source addresses, the descriptors and ports it will hold, the queries (with
// the run's EDNS options), the transport, and the plan the workers follow.
#include <sys/resource.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <random>
#include <set>
#include <unordered_map>

#include <fmt/format.h>
#include <boost/asio/ip/tcp.hpp>

#include <dnstransport/error.hpp>
#include <dnstransport/text.hpp>

#include "engine/letter_case.hpp"
#include "engine/query_feed.hpp"
#include "load/client_subnet_setup.hpp"
#include "load/load_steps.hpp"
#include "load/source_ranges.hpp"
#include "message/proxy_header.hpp"
#include "registry/transports.hpp"
#include "util/clock.hpp"

namespace dnstransport::detail {

namespace {

// Each client holds one socket; leave room for the responder and files.
constexpr rlim_t descriptor_reserve = 64;

void ensure_descriptors(unsigned clients) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  const rlim_t wanted = clients + descriptor_reserve;
  if (limit.rlim_cur >= wanted) return;
  rlimit raised = limit;
  raised.rlim_cur = std::min(wanted, limit.rlim_max);
  setrlimit(RLIMIT_NOFILE, &raised);
  if (raised.rlim_cur < wanted) {
    throw setup_error(
        fmt::format("{} {} needs about {} file descriptors but the limit is {} (hard limit {}); "
                    "raise it with `ulimit -n {}` (as root, or in /etc/security/limits.conf)",
                    setting("load_spec::traffic.clients"), clients, wanted, limit.rlim_cur,
                    limit.rlim_max, wanted));
  }
}

// Every client holds one socket, so one local port per source address, at a time (TCP
// connections to one server share ports across source addresses with
// IP_BIND_ADDRESS_NO_PORT; UDP sockets each take a port of their address). More clients than
// that cannot all get a socket: say so now, not as EADDRNOTAVAIL halfway through the run.
void ensure_ports(unsigned clients, std::size_t source_count) {
  std::ifstream range_file("/proc/sys/net/ipv4/ip_local_port_range");
  std::uint64_t low = 0;
  std::uint64_t high = 0;
  if (!(range_file >> low >> high) || high < low) return;
  const std::uint64_t ports = high - low + 1;
  const std::uint64_t sources = std::max<std::size_t>(source_count, 1);
  if (clients <= ports * sources) return;
  throw setup_error(fmt::format(
      "{} {}: every client holds a local port, but the ephemeral port range "
      "(net.ipv4.ip_local_port_range = {} {}) gives {} ports x {} = {}; widen "
      "it (e.g. sysctl -w net.ipv4.ip_local_port_range=\"1024 65535\") or give more source "
      "addresses ({})",
      setting("load_spec::traffic.clients"), clients, low, high, ports,
      counted(sources, "source address", "source addresses"), ports * sources,
      setting("load_spec::connections.sources")));
}

boost::asio::ip::address resolve(const std::string& host) {
  boost::system::error_code ec;
  auto address = boost::asio::ip::make_address(host, ec);
  if (!ec) return address;
  boost::asio::io_context io;
  boost::asio::ip::tcp::resolver resolver(io);
  auto results = resolver.resolve(host, "", ec);
  if (ec || results.empty()) {
    throw setup_error(fmt::format("{}: cannot resolve \"{}\": {}",
                                  setting("load_spec::target.server"), host,
                                  ec ? ec.message() : "no address"));
  }
  return results.begin()->endpoint().address();
}

std::vector<boost::asio::ip::address> source_addresses(const load_spec& spec,
                                                       const boost::asio::ip::address& server) {
  const std::string named = setting("load_spec::connections.sources");
  const auto expanded =
      expand_sources(spec.connections.sources, sources_wanted(spec), server.is_v4(), named);
  if (spec.connections.source_mode == source_mode::per_client &&
      expanded.available < spec.traffic.clients) {
    throw setup_error(fmt::format(
        "{} {}: {} per-client gives each client a source address of its own, but {} {} {} "
        "{}; give a wider range, or {} round-robin",
        setting("load_spec::traffic.clients"), spec.traffic.clients,
        setting("load_spec::connections.source_mode"), named,
        fmt::join(spec.connections.sources, ","),
        spec.connections.sources.size() == 1 ? "holds" : "hold", expanded.available,
        setting("load_spec::connections.source_mode")));
  }
  std::vector<boost::asio::ip::address> sources = expanded.addresses;
  check_sources_local(sources, named);
  // Towards IPv4 loopback, 16 source addresses give 16 times the ephemeral ports, so a run
  // at one query per connection does not stall on TIME_WAIT. With Fast Open, 4: the kernel
  // keeps its cookies in tcp_metrics, whose hash is of the destination only and keeps 5
  // entries a bucket, so 16 sources taken in turn find their cookie evicted and most
  // connections ask for a new one instead of sending their query in the SYN.
  if (sources.empty() && traits_of(spec.target.transport).has_connections && server.is_v4() &&
      server.is_loopback()) {
    const unsigned count = spec.connections.tcp_fastopen ? 4 : 16;
    for (unsigned i = 1; i <= count; ++i) {
      sources.push_back(boost::asio::ip::address_v4(0x7f000000u + i));
    }
  }
  return sources;
}

// Numbers the questions of the query set: queries asking the same name (ASCII
// case-insensitively), type and class share a number. A query with no question to check
// gets a number of its own, since no answer could fail to echo it anyway.
std::uint32_t number_questions(const query_set& queries, std::vector<std::uint32_t>& question_of) {
  std::unordered_map<std::string, std::uint32_t> numbers;
  std::uint32_t next = 0;
  question_of.resize(queries.size());
  for (std::size_t i = 0; i < queries.size(); ++i) {
    const auto query = queries[i];
    std::optional<std::size_t> name_end;
    if (query.size() >= dns_header_size && ((query[4] << 8) | query[5]) >= 1) {
      name_end = skip_name(query, dns_header_size);
    }
    if (!name_end || query.size() - *name_end < 4) {
      question_of[i] = next++;
      continue;
    }
    std::string key(query.begin() + dns_header_size,
                    query.begin() + static_cast<std::ptrdiff_t>(*name_end + 4));
    for (std::size_t k = 0; k + 4 < key.size(); ++k) {
      if (key[k] >= 'A' && key[k] <= 'Z') key[k] = static_cast<char>(key[k] - 'A' + 'a');
    }
    const auto [it, added] = numbers.try_emplace(std::move(key), next);
    if (added) ++next;
    question_of[i] = it->second;
  }
  return next;
}

// The query set with the run's EDNS options (keepalive, client subnet, padding) added to
// every query.
std::shared_ptr<const query_set> with_edns_options(const query_set& queries, const load_spec& spec,
                                                   const client_subnets& subnets) {
  edns_config edns;
  edns.enabled = true;
  edns.padding_block = spec.traffic.edns_padding_block;
  if (spec.traffic.edns_keepalive) edns.options.push_back({edns_option_code::tcp_keepalive, {}});
  if (subnets.on()) edns.options.push_back(client_subnet_option(subnets));
  auto out = std::make_shared<query_set>();
  for (std::size_t i = 0; i < queries.size(); ++i) {
    try {
      out->add(add_edns_options(queries[i], edns));
    } catch (const std::invalid_argument& e) {
      throw setup_error(fmt::format(
          "{}: query {} of {} cannot take the option: {}",
          setting(spec.traffic.edns_padding_block != 0 ? "load_spec::traffic.edns_padding_block"
                  : spec.traffic.edns_keepalive        ? "load_spec::traffic.edns_keepalive"
                                                       : "load_spec::traffic.client_subnet.range"),
          i + 1, queries.origin(), e.what()));
    }
  }
  out->set_origin(queries.origin());
  return out;
}

// The capture's queries per client (its source address), in capture time order, with their
// offsets from the capture's first query divided by the speed.
void plan_replay(const pcap_capture& capture, double speed, detail::run_plan& plan) {
  const std::size_t n = capture.queries.size();
  std::vector<std::uint32_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = static_cast<std::uint32_t>(i);
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    return std::pair(capture.clients[a], capture.times_ns[a]) <
           std::pair(capture.clients[b], capture.times_ns[b]);
  });
  const std::uint64_t first = *std::min_element(capture.times_ns.begin(), capture.times_ns.end());
  plan.replay_first.assign(capture.sources.size() + 1, 0);
  for (const std::uint32_t c : capture.clients) ++plan.replay_first[c + 1];
  for (std::size_t c = 1; c < plan.replay_first.size(); ++c) {
    plan.replay_first[c] += plan.replay_first[c - 1];
  }
  plan.replay_query = order;
  plan.replay_offset_ns.reserve(n);
  for (const std::uint32_t i : order) {
    plan.replay_offset_ns.push_back(
        static_cast<std::uint64_t>(static_cast<double>(capture.times_ns[i] - first) / speed));
  }
}

capture_summary summarize(const load_spec& spec) {
  const pcap_capture& c = *spec.traffic.capture;
  capture_summary s;
  s.counts = c.counts;
  s.clients = c.sources.size();
  if (!c.times_ns.empty()) {
    const auto [first, last] = std::minmax_element(c.times_ns.begin(), c.times_ns.end());
    s.span_seconds = static_cast<double>(*last - *first) / 1e9;
  }
  s.replay = spec.traffic.replay;
  s.speed = spec.traffic.replay == replay_mode::timing ? spec.traffic.replay_speed : 1;
  return s;
}

}  // namespace

namespace {

// What was run, as the result says it: the settings, the query set, and the set-up's warnings.
void describe_run(run_result& result, const load_spec& spec, const query_set& queries) {
  result.label = spec.output.label;
  result.server = spec.target.server;
  result.port = spec.target.port;
  result.transport = spec.target.transport;
  if (traits_of(spec.target.transport).has_tls) {
    result.tls_backend = std::string(tls_backend_name(spec.tls.backend));
  }
  result.clients = spec.traffic.clients;
  result.outstanding = spec.traffic.outstanding;
  result.queries_per_connection = spec.connections.queries_per_connection;
  result.idle_seconds = spec.connections.idle_seconds;
  result.query_origin = queries.origin();
  result.query_count_in_set = queries.size();
  if (spec.traffic.capture) result.capture = summarize(spec);
  result.edns.keepalive_sent = spec.traffic.edns_keepalive;
  result.edns.padding_block = spec.traffic.edns_padding_block;
  result.interval_seconds = spec.output.interval_seconds;
  if (spec.traffic.edns_padding_block != 0 && !traits_of(spec.target.transport).has_tls) {
    add_warning(result, spec,
                fmt::format("{} over {}: the queries travel in clear, so padding hides nothing "
                            "(RFC 8467 pads encrypted messages), and servers need not pad their "
                            "answers",
                            setting("load_spec::traffic.edns_padding_block"),
                            traits_of(spec.target.transport).name));
  }
}

// When queries are sent: closed loop, on a schedule at a rate, or on a capture's clock.
void plan_arrivals(run_plan& plan, run_result& result, const load_spec& spec) {
  const double rate = total_rate(spec);
  plan.rate_per_client =
      spec.traffic.rate > 0 ? spec.traffic.rate / spec.traffic.clients : spec.traffic.client_rate;
  if (rate > 0) {
    plan.arrivals = spec.traffic.arrivals == arrival_mode::constant  ? run_plan::schedule::constant
                    : spec.traffic.arrivals == arrival_mode::poisson ? run_plan::schedule::poisson
                                                                     : run_plan::schedule::closed;
    result.rate = rate;
    result.client_rate = spec.traffic.client_rate;
    result.arrivals = spec.traffic.arrivals;
  }
  if (spec.traffic.capture && spec.traffic.replay == replay_mode::timing) {
    plan.arrivals = run_plan::schedule::replay;
    result.arrivals = arrival_mode::replay;
    plan_replay(*spec.traffic.capture, spec.traffic.replay_speed, plan);
  }
  // Coalesced receiving by default only where queries leave on a schedule: in a closed loop
  // it would bunch the queries that replace a delayed read's answers (load.hpp).
  const unsigned coalesce_us = spec.generator.coalesce_us.value_or(
      plan.arrivals == run_plan::schedule::closed ? 0 : generator_settings::default_coalesce_us);
  plan.coalesce_ns = std::uint64_t{coalesce_us} * 1000;
  result.coalesce_us = coalesce_us;
}

// How the clients tell apart their queries in flight (in_flight_questions.hpp): by the stream
// each answer comes on; one of each question, when the list has enough of them (or a capture
// is replayed: a client sends what its source sent, and waits for a question's answer before
// asking it again); otherwise by the letter case of the name (DNS 0x20), as many of a question
// at once as its name has letter-case patterns.
void plan_questions(run_plan& plan, run_result& result, const load_spec& spec,
                    const query_set& queries) {
  plan.distinct_questions = number_questions(queries, plan.question_of);
  if (traits_of(spec.target.transport).answers_on_own_stream) {
    plan.questions_apart = in_flight_questions::mode::unlimited;
    return;
  }
  if (plan.distinct_questions >= spec.traffic.outstanding ||
      plan.arrivals == run_plan::schedule::replay) {
    return;
  }
  plan.questions_apart = in_flight_questions::mode::letter_case;
  plan.question_patterns.assign(plan.distinct_questions, 0);
  plan.query_case.resize(queries.size());
  for (std::size_t i = 0; i < queries.size(); ++i) {
    plan.question_patterns[plan.question_of[i]] = letter_case_patterns(queries[i]);
    plan.query_case[i] = letter_case_pattern(queries[i]);
  }
  const std::uint32_t room = plan.in_flight_limit();
  if (room < spec.traffic.outstanding) {
    add_warning(
        result, spec,
        fmt::format("at most {} queries in flight per client, not {} {}: the query list "
                    "has {} whose names give {} in all (two queries of a client in flight "
                    "at once never look the same, so that an answer carrying another "
                    "query's id cannot pass the question check; a name has 2^letters "
                    "letter-case forms); give a query list with more questions or longer "
                    "names",
                    room, setting("load_spec::traffic.outstanding"), spec.traffic.outstanding,
                    counted(plan.distinct_questions, "distinct question"),
                    counted(room, "letter-case form")));
  }
}

// What the clients know of the queries: their questions and, over UDP, the largest answer
// each allows.
void plan_queries(run_plan& plan, run_result& result, const load_spec& spec,
                  const query_set& queries) {
  plan_questions(plan, result, spec, queries);
  plan.read_edns_options = result.edns.requested();
  if (!traits_of(spec.target.transport).has_connections) {
    plan.udp_answer_limits.reserve(queries.size());
    for (std::size_t i = 0; i < queries.size(); ++i) {
      plan.udp_answer_limits.push_back(udp_answer_limit(queries[i]));
    }
  }
}

// PROXY protocol: each client's header, made once (the client address it claims, a source
// port, the server as destination); with more distinct sources than clients, one per
// address, which the clients take in turn (run_plan::proxy_header).
void plan_proxy(run_plan& plan, run_result& result, const load_spec& spec,
                const boost::asio::ip::address& server) {
  const proxy_settings& p = spec.connections.proxy;
  if (p.version == proxy_protocol::none) return;
  const std::uint64_t distinct = spec.connections.distinct_sources;
  const auto addresses = proxy_addresses(p, distinct != 0 ? distinct : spec.traffic.clients,
                                         setting("load_spec::connections.proxy.sources"));
  const bool stream = traits_of(spec.target.transport).over_tcp;
  // Source ports: 1024 up, header by header, or drawn with the addresses.
  std::mt19937_64 draw(p.seed ^ 0x9e3779b97f4a7c15ULL);
  std::uniform_int_distribution<unsigned> port(1024, 65535);
  const std::uint64_t headers = std::max<std::uint64_t>(spec.traffic.clients, distinct);
  plan.proxy_headers.reserve(headers);
  for (std::uint64_t i = 0; i < headers; ++i) {
    const proxied_connection c{addresses[i % addresses.size()],
                               static_cast<std::uint16_t>(p.random ? port(draw) : 1024 + i % 64512),
                               server, spec.target.port, stream};
    if (p.version == proxy_protocol::v2) {
      plan.proxy_headers.push_back(proxy_v2_header(c, p.tlvs));
    } else {
      const std::string line = proxy_v1_header(c);
      plan.proxy_headers.emplace_back(line.begin(), line.end());
    }
  }
  plan.proxy_inside_tls = p.inside_tls;
  result.proxy_protocol = proxy_protocol_name(p.version);
  const std::set<boost::asio::ip::address> claimed(addresses.begin(), addresses.end());
  result.proxy_addresses = claimed.size();
}

}  // namespace

// Fed queries (run_plan::feed): each is its own question, kept one of a question in flight by
// the feed, and its UDP answer limit is the feed's.
void plan_fed_queries(run_plan& plan, run_result& result, query_feed& feed) {
  plan.feed = &feed;
  plan.questions_apart = in_flight_questions::mode::unlimited;
  plan.question_of.assign(feed.cells(), 0);
  plan.distinct_questions = 1;
  plan.read_edns_options = result.edns.requested();
}

std::unique_ptr<prepared_load> make_run_plan(const load_spec& spec, query_feed* feed) {
  validate(spec);
  const auto server_address = resolve(spec.target.server);
  const auto sources = source_addresses(spec, server_address);
  ensure_ports(spec.traffic.clients, sources.size());
  ensure_descriptors(spec.traffic.clients);
  auto prepared = std::make_unique<prepared_load>();
  run_result& result = prepared->result;
  std::shared_ptr<const query_set>& queries = prepared->queries;
  queries = spec.traffic.queries;
  if (!queries) queries = std::make_shared<const query_set>(default_queries());
  client_subnets subnets;
  if (spec.traffic.client_subnet.enabled()) {
    subnets = read_client_subnets(spec.traffic.client_subnet,
                                  setting("load_spec::traffic.client_subnet.range"));
  }
  if (spec.traffic.edns_keepalive || spec.traffic.edns_padding_block != 0 || subnets.on()) {
    queries = with_edns_options(*queries, spec, subnets);
  }
  describe_run(result, spec, *queries);

  const unsigned threads = std::min(spec.generator.threads, spec.traffic.clients);
  if (threads < spec.generator.threads) {
    add_warning(
        result, spec,
        fmt::format("{} {} reduced to {}: a thread needs at least one client",
                    setting("load_spec::generator.threads"), spec.generator.threads, threads));
  }
  result.threads = threads;
  prepared->threads = threads;

  prepared->transport = registered_transport(spec.target.transport).make(spec);

  run_plan& plan = prepared->plan;
  plan.transport = prepared->transport.get();
  plan.queries = queries.get();
  plan.clients = spec.traffic.clients;
  plan.outstanding = spec.traffic.outstanding;
  plan.gather_writes = spec.generator.gather_writes;
  plan.server_address = server_address;
  plan.server_port = spec.target.port;
  plan.sources = sources;
  // Each client keeps one address when the user's addresses are enough for all of them (or
  // asked for it): a server sees one address per client. Otherwise, and for the loopback
  // addresses taken by default, connections take them in turn.
  plan.sources_per_client = !spec.connections.sources.empty() &&
                            sources.size() >= spec.traffic.clients &&
                            spec.connections.source_mode != source_mode::round_robin &&
                            (spec.connections.distinct_sources == 0 ||
                             spec.connections.distinct_sources <= spec.traffic.clients);
  // Over UDP and DoQ each client keeps its one socket: the first `clients` addresses.
  result.source_addresses = plan.sources_per_client || traits_of(spec.target.transport).over_tcp
                                ? sources.size()
                                : std::min<std::size_t>(sources.size(), spec.traffic.clients);
  result.sources_per_client = plan.sources_per_client;
  plan_proxy(plan, result, spec, server_address);
  plan.timeout_ns = seconds_to_ns(spec.traffic.timeout_seconds);
  plan.interval_ns = seconds_to_ns(spec.output.interval_seconds);
  plan.connections_gauge = &prepared->connections_gauge;
  if (spec.output.on_answer) {
    prepared->on_answer = std::make_unique<answer_callback>(spec.output.on_answer);
    plan.on_answer = prepared->on_answer.get();
  }
  plan_arrivals(plan, result, spec);
  // What the run is planned to last, for progress and the monitor's readings: a timing
  // replay without a duration lasts as long as its capture, at its speed.
  prepared->duration_seconds =
      spec.traffic.duration_seconds > 0 || !result.capture
          ? spec.traffic.duration_seconds
          : result.capture->span_seconds / spec.traffic.replay_speed + spec.traffic.timeout_seconds;
  if (feed != nullptr) {
    plan_fed_queries(plan, result, *feed);
  } else {
    plan_queries(plan, result, spec, *queries);
  }
  plan_client_subnets(plan, result, spec, std::move(subnets), *queries);
  return prepared;
}

std::vector<std::unique_ptr<worker>> make_workers(const load_spec& spec, run_plan& plan,
                                                  unsigned threads) {
  std::vector<std::unique_ptr<worker>> workers;
  for (unsigned w = 0; w < threads; ++w) {
    std::vector<unsigned> indices;
    std::vector<std::uint64_t> quotas;
    for (unsigned c = w; c < spec.traffic.clients; c += threads) {
      indices.push_back(c);
      quotas.push_back(spec.traffic.count == 0
                           ? UINT64_MAX
                           : spec.traffic.count / spec.traffic.clients +
                                 (c < spec.traffic.count % spec.traffic.clients ? 1 : 0));
    }
    workers.push_back(std::make_unique<worker>(plan, std::move(indices), std::move(quotas)));
  }
  return workers;
}

}  // namespace dnstransport::detail
