#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <dnstransport/error.hpp>
#include <dnstransport/text.hpp>

#include "cli_common.hpp"
#include "commands.hpp"

namespace dnstransport::cli {

namespace {

struct serve_options {
  // Each listener's address and port, as given: UDP's (--listen) by default, 'off' for none;
  // the others only when asked for (--tcp, --tls, --doh, --doq).
  per_transport<std::string> listen;
  std::string doh_path = "/dns-query";
  unsigned doq_max_streams = 100;
  bool doq_no_0rtt = false;
  bool no_0rtt = false;
  bool doq_retry = false;
  std::string proxy_protocol;  // POLICY or LISTENER=POLICY,...; empty: off
  unsigned threads = 1;
  std::string cpus;
  std::string mode = "answer";
  std::string tls_backend = "openssl";
  std::string certificate;
  std::string key;
  std::string certificate_directory;
  std::uint64_t close_after = 0;
  double idle_timeout = 0;
  double keepalive_timeout = -1;
  unsigned padding_block = 468;
  std::string ecs_scope = "0";
  bool reverse_order = false;
  double rate_limit = 0;
  double rate_limit_per_client = 0;
  double cost_answer_us = 0;
  double cost_handshake_us = 0;
  bool no_ticket_renewal = false;
  int ready_fd = -1;
};

// An example address for a listener's flag: 5300 for port 53, 8853 for 853, 8443 for 443.
std::string example_address(const transport_traits& t) {
  return fmt::format("127.0.0.1:{}", t.default_port == 53 ? 5300 : 8000 + t.default_port);
}

// One flag per transport for its listener's address, made from the registry: UDP, the
// transport without connections, listens by default (--listen, also --udp; 'off' for none),
// the others when asked (--NAME).
void add_listener_flags(CLI::App& serve, serve_options& o) {
  for (const auto& t : all_transports()) {
    if (!t.has_connections) {
      o.listen[t.kind] = example_address(t);
      serve
          .add_option(fmt::format("--listen,--{}", t.name), o.listen[t.kind],
                      fmt::format("{} address and port ('off' for none)", t.long_name))
          ->capture_default_str();
      continue;
    }
    std::string help = fmt::format("{} address and port, e.g. {}", t.long_name, example_address(t));
    if (t.over_quic) help += " (UDP); always GnuTLS, a socket per thread";
    serve.add_option("--" + std::string(t.name), o.listen[t.kind], help);
  }
}

// The responder's settings from the flags; throws setup_error naming the flag.
// --proxy-protocol: POLICY for every listener but doq's, or LISTENER=POLICY,... (the others
// off); given without a value, required.
void set_proxy_policies(server_options& s, const std::string& text) {
  if (text.empty()) return;
  const auto policy_of = [&text](std::string_view name) {
    const auto policy = parse_proxy_policy(name);
    if (!policy) {
      throw setup_error(
          fmt::format("--proxy-protocol: \"{}\" in \"{}\" is not required, optional or off (or "
                      "LISTENER=POLICY, e.g. udp=required,tcp=optional)",
                      name, text));
    }
    return *policy;
  };
  if (text.find('=') == std::string::npos) return s.set_proxy_protocol(policy_of(text));
  std::string_view rest = text;
  while (!rest.empty()) {
    const std::string_view item = rest.substr(0, rest.find(','));
    rest.remove_prefix(std::min(rest.size(), item.size() + 1));
    const std::size_t equals = item.find('=');
    const auto transport = parse_transport(item.substr(0, equals));
    if (equals == std::string_view::npos || !transport) {
      throw setup_error(fmt::format(
          "--proxy-protocol: \"{}\" is not LISTENER=POLICY (udp, tcp, tls or doh; required, "
          "optional or off)",
          item));
    }
    s.proxy_protocol[*transport] = policy_of(item.substr(equals + 1));
  }
}

server_options server_options_of(const serve_options& o) {
  server_options s;
  for (const auto& t : all_transports()) {
    const std::string& where = o.listen[t.kind];
    if (where.empty() || (!t.has_connections && where == "off")) continue;
    const std::string flag = t.has_connections ? fmt::format("--{}", t.name) : "--listen";
    s.listen[t.kind] = parse_listen_endpoint(where, t.default_port, flag);
  }
  s.doh_path = o.doh_path;
  s.doq_max_streams = o.doq_max_streams;
  s.doq_early_data = !o.doq_no_0rtt;
  s.tls_options.early_data = !o.no_0rtt;
  s.doq_retry = o.doq_retry;
  set_proxy_policies(s, o.proxy_protocol);
  s.threads = o.threads;
  if (!o.cpus.empty()) s.cpus = parse_cpu_list(o.cpus, "--cpus");
  const auto mode = parse_answer_mode(o.mode);
  if (!mode) throw setup_error(fmt::format("--mode: \"{}\" is not answer or echo", o.mode));
  s.mode = *mode;
  const auto backend = parse_tls_backend(o.tls_backend);
  if (!backend) {
    throw setup_error(fmt::format("--tls-backend: \"{}\" is not openssl or gnutls", o.tls_backend));
  }
  s.tls_options.backend = *backend;
  s.tls_options.certificate_file = o.certificate;
  s.tls_options.key_file = o.key;
  s.tls_options.renew_tickets = !o.no_ticket_renewal;
  s.certificate_directory = o.certificate_directory;
  s.close_after_queries = o.close_after;
  s.idle_timeout_seconds = o.idle_timeout;
  if (o.keepalive_timeout < 0 && o.keepalive_timeout != -1) {
    throw setup_error(fmt::format(
        "--keepalive-timeout: {} is not an edns-tcp-keepalive timeout (0 to 6553.5 seconds)",
        o.keepalive_timeout));
  }
  s.keepalive_timeout_seconds = o.keepalive_timeout;
  if (o.padding_block > 65535) {
    throw setup_error(
        fmt::format("--padding-block: {} is not a block size (1 to 65535 octets, 0: never pad)",
                    o.padding_block));
  }
  s.padding_block = static_cast<std::uint16_t>(o.padding_block);
  if (o.ecs_scope == "none") {
    s.client_subnet_scope = -1;
  } else {
    const char* const end = o.ecs_scope.data() + o.ecs_scope.size();
    unsigned scope = 129;
    const auto read = std::from_chars(o.ecs_scope.data(), end, scope);
    if (read.ec != std::errc{} || read.ptr != end || scope > 128) {
      throw setup_error(fmt::format(
          "--ecs-scope: \"{}\" is not a scope prefix length (0 to 128) or none", o.ecs_scope));
    }
    s.client_subnet_scope = static_cast<int>(scope);
  }
  s.reverse_order = o.reverse_order;
  s.rate_limit = o.rate_limit;
  s.rate_limit_per_client = o.rate_limit_per_client;
  s.cost_answer_us = o.cost_answer_us;
  s.cost_handshake_us = o.cost_handshake_us;
  return s;
}

// What a listener with TLS runs: its library, whether it takes 0-RTT, its certificate.
std::string tls_details(const transport_traits& t, const server_options& s, const serve_options& o,
                        const certificate_files& certificate) {
  if (t.over_quic) {
    return fmt::format(" (gnutls, 0-RTT {}{}), certificate {}",
                       s.doq_early_data ? "accepted" : "refused",
                       s.doq_retry ? ", Retry first" : "", certificate.certificate_file.string());
  }
  return fmt::format(" ({}, 0-RTT {}), certificate {} (key {})", o.tls_backend,
                     s.tls_options.early_data ? "accepted" : "refused",
                     certificate.certificate_file.string(), certificate.key_file.string());
}

// One line per listener: where it is bound (DoH: its URL) and its TLS.
void print_listening(const server& responder, const server_options& s, const serve_options& o) {
  for (const auto& t : all_transports()) {
    if (!s.listen[t.kind]) continue;
    std::string where = to_string({s.listen[t.kind]->address, responder.port(t.kind)});
    // A DoH listener answers at a URL.
    if (!t.url_scheme.empty()) where = fmt::format("{}://{}{}", t.url_scheme, where, s.doh_path);
    fmt::print("{:<4} {}{}{}\n", t.name, where,
               t.has_tls ? tls_details(t, s, o, responder.certificate()) : "",
               s.proxy_protocol[t.kind] != proxy_policy::off
                   ? fmt::format(", PROXY headers {}", proxy_policy_name(s.proxy_protocol[t.kind]))
                   : "");
  }
  fmt::print("mode {}, {}{}{}{}; stop with Ctrl-C\n", o.mode, counted(s.threads, "thread"),
             s.rate_limit > 0 ? fmt::format(", at most {} answers/s", s.rate_limit) : "",
             s.rate_limit_per_client > 0
                 ? fmt::format(", at most {} answers/s per client address", s.rate_limit_per_client)
                 : "",
             s.cost_answer_us > 0 || s.cost_handshake_us > 0
                 ? fmt::format(", {} us of CPU spent per answer and {} us per set-up",
                               s.cost_answer_us, s.cost_handshake_us)
                 : "");
  std::fflush(stdout);
}

// The ports line run/sweep --server-process reads: "udp=5300 tcp=5300 tls=0 doh=0 doq=0".
void write_ports(const server& responder, int fd) {
  std::string line;
  for (const auto& traits : all_transports()) {
    line +=
        fmt::format("{}{}={}", line.empty() ? "" : " ", traits.name, responder.port(traits.kind));
  }
  line += '\n';
  if (write(fd, line.data(), line.size()) < 0) {
    fmt::print(stderr, "warning: --ready-fd {}: {}\n", fd, std::strerror(errno));
  }
  close(fd);
}

void print_answered(const server_stats& st, const server_options& s) {
  std::vector<std::string> answered;
  for (const auto& traits : all_transports()) {
    answered.push_back(fmt::format("{} {}", st.queries[traits.kind], traits.name));
  }
  fmt::print(
      "answered: {}; {} connections accepted; {} TLS handshakes failed, {} resumed, {} with "
      "0-RTT accepted; {} malformed queries dropped\n",
      fmt::join(answered, ", "), st.connections_accepted, st.tls_handshakes_failed, st.tls_resumed,
      st.tls_early_data, st.malformed_queries);
  if (s.reads_proxy_headers()) {
    fmt::print("PROXY protocol: {} headers read, {} datagrams or connections dropped without one\n",
               st.proxy_headers, st.proxy_refused);
  }
  if (st.client_addresses > 0) fmt::print("clients: {}\n", describe_clients(st));
  if (s.rate_limit > 0 || s.rate_limit_per_client > 0) {
    fmt::print("rate limit: {} UDP queries dropped, {} stream answers delayed\n",
               st.rate_limited_dropped, st.rate_limited_delayed);
  }
  for (const auto& t : all_transports()) {
    if (!t.over_quic || !s.listen[t.kind]) continue;
    fmt::print(
        "{}: {} connections with 0-RTT accepted, {} Retry sent, {} datagrams dropped ({} "
        "answered with a stateless reset)\n",
        t.name, st.doq_early_data, st.doq_retries, st.doq_packets_dropped, st.doq_stateless_resets);
  }
}

// Settings of one transport's listener: DoH's path, DoQ's streams, 0-RTT, Retry.
void add_transport_flags(CLI::App& serve, serve_options& o) {
  serve.add_option("--doh-path", o.doh_path, "DoH: the path requests go to")->capture_default_str();
  serve
      .add_option("--doq-max-streams", o.doq_max_streams,
                  "DoQ: queries (streams) a client may have open at once")
      ->capture_default_str();
  serve.add_flag("--no-0rtt", o.no_0rtt,
                 "TLS and DoH: refuse 0-RTT (tickets allow no early data; resumption still "
                 "works). Without it early data is accepted: with GnuTLS a replayed "
                 "ClientHello's is refused, the OpenSSL listener does not check for replays");
  serve.add_flag("--doq-no-0rtt", o.doq_no_0rtt,
                 "DoQ: refuse 0-RTT (tickets allow no early data; resumption still works)");
  serve.add_flag("--doq-retry", o.doq_retry,
                 "DoQ: validate every client's address with a Retry first (a round trip more "
                 "per connection, as a server under a flood of spoofed packets would)");
  serve
      .add_option("--proxy-protocol", o.proxy_protocol,
                  "Read a PROXY protocol header (v1 or v2) before each UDP query and at the start "
                  "of each tcp/tls/doh connection, before TLS, as a server behind a trusted "
                  "proxy does. required (the default when no value is given): queries and "
                  "connections without one are dropped (counted); optional: those without one "
                  "are the peer's own. Per listener: udp=required,tcp=optional (the others "
                  "read none). Not on doq")
      ->expected(0, 1);
}

// Threads, answers, TLS certificate, connection limits and the rate limit.
void add_responder_flags(CLI::App& serve, serve_options& o) {
  serve.add_option("--threads", o.threads, "Threads, each with its own SO_REUSEPORT sockets")
      ->capture_default_str();
  serve.add_option("--cpus", o.cpus, "Pin threads to these CPUs, e.g. 1 or 2-3");
  serve
      .add_option("--mode", o.mode,
                  "answer: synthetic A/AAAA answer for any name; echo: the query back with QR set")
      ->capture_default_str();
  serve.add_option("--tls-backend", o.tls_backend, "TLS library: openssl or gnutls")
      ->capture_default_str();
  serve.add_option("--cert", o.certificate, "PEM certificate chain (generated when absent)");
  serve.add_option("--key", o.key, "PEM private key (generated when absent)");
  serve.add_option("--cert-dir", o.certificate_directory,
                   "Where a generated certificate is written (default: a temporary directory)");
  serve.add_option("--close-after", o.close_after,
                   "Close a connection after this many answers (DoQ: CONNECTION_CLOSE with "
                   "DOQ_NO_ERROR; 0: never)");
  serve.add_option("--idle-timeout", o.idle_timeout,
                   "Close a TCP/TLS/DoH connection idle this many seconds (0: never); DoQ's "
                   "QUIC idle timeout (0: 30 s)");
  serve.add_option(
      "--keepalive-timeout", o.keepalive_timeout,
      "edns-tcp-keepalive (RFC 7828): the idle timeout, in seconds, advertised over TCP/TLS/DoH "
      "to queries that carry the option (sent in units of 100 ms, 0 to 6553.5). Default: "
      "--idle-timeout when given, otherwise 120 s. Only advertised: connections are closed by "
      "--idle-timeout");
  serve
      .add_option("--padding-block", o.padding_block,
                  "Padding (RFC 7830): answers to queries that carry a padding option are padded "
                  "over TLS/DoH/DoQ to a multiple of this many octets (RFC 8467 recommends "
                  "468); 0: never pad")
      ->capture_default_str();
  serve
      .add_option("--ecs-scope", o.ecs_scope,
                  "EDNS Client Subnet (RFC 7871): answers to queries that carry the option echo "
                  "it with this SCOPE PREFIX-LENGTH, 0 to 128 (0: the answer is good for any "
                  "client; longer: only for the query's subnet, as a server with per-subnet "
                  "answers says); none: not echoed, as a server that does not know ECS")
      ->capture_default_str();
  serve.add_flag("--reverse-order", o.reverse_order,
                 "Answer the queries of each read in reverse order (tests pipelining clients)");
  serve
      .add_option("--rate-limit", o.rate_limit,
                  "Answer at most N queries per second in total: UDP queries over the limit are "
                  "dropped, TCP/TLS/DoH/DoQ answers wait (in order, nothing dropped); a target "
                  "with a known capacity for `search` (0: no limit)")
      ->capture_default_str();
  serve
      .add_option("--rate-limit-per-client", o.rate_limit_per_client,
                  "Answer each client address at most N queries per second, as a server's "
                  "per-client limit does (the address a query came from, or the one its PROXY "
                  "header claims): UDP over the limit dropped, TCP/TLS/DoH/DoQ answers delayed; "
                  "with --rate-limit too, an answer waits for both (0: no limit)")
      ->capture_default_str();
  serve
      .add_option("--cost-answer-us", o.cost_answer_us,
                  "A known cost, to check a sweep's cost model against (not a realistic "
                  "server): microseconds of CPU spent per answer on top of the responder's own, "
                  "every transport, on the thread that answers (it spins until the thread's CPU "
                  "clock has advanced that much, so preemption does not count; 0: none)")
      ->capture_default_str();
  serve
      .add_option("--cost-handshake-us", o.cost_handshake_us,
                  "The same per connection set-up: per TCP connection accepted (the model's "
                  "per connection), per completed TLS handshake, full or resumed (DoT, DoH), per "
                  "completed QUIC handshake (DoQ); 0: none")
      ->capture_default_str();
  serve.add_flag("--no-ticket-renewal", o.no_ticket_renewal,
                 "TLS: send no new session ticket after a resumed handshake, so clients "
                 "resume from the ticket they have (like dnsdist; openssl backend only)");
  serve
      .add_option("--ready-fd", o.ready_fd,
                  "Once listening, write the ports (\"udp=P tcp=P tls=P doh=P doq=P\") to this "
                  "open descriptor and close it (used by run/sweep --server-process)")
      ->group("");
}

}  // namespace

action add_serve_command(CLI::App& app) {
  auto* serve = app.add_subcommand(
      "serve",
      "Run the built-in DNS responder until interrupted (UDP, and TCP/TLS/DoH/DoQ if asked)");
  auto o = std::make_shared<serve_options>();
  add_listener_flags(*serve, *o);
  add_transport_flags(*serve, *o);
  add_responder_flags(*serve, *o);
  serve->footer(
      "Example: dnstransport serve --listen 127.0.0.1:5300 --tcp 127.0.0.1:5300 "
      "--tls 127.0.0.1:8853 --doh 127.0.0.1:8443 --doq 127.0.0.1:8853 --threads 2 --cpus 1\n"
      "Exit status: 0 after SIGINT/SIGTERM; 2 for bad flags or an address that cannot be bound.");
  return [serve, o]() -> int {
    if (!serve->parsed()) return -1;
    // --proxy-protocol without a value: required on every listener that can read a header.
    if (serve->count("--proxy-protocol") > 0 && o->proxy_protocol.empty()) {
      o->proxy_protocol = "required";
    }
    const server_options s = server_options_of(*o);
    // SIGINT and SIGTERM blocked before the responder's threads start (they inherit the
    // mask), so they come to this thread, which sleeps in sigsuspend until one does: no
    // polling, whose wake-ups a monitored serve would spend on neither answers nor set-ups.
    sigset_t stops;
    sigset_t previous;
    sigemptyset(&stops);
    sigaddset(&stops, SIGINT);
    sigaddset(&stops, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stops, &previous);
    server responder(s);
    print_listening(responder, s, *o);
    if (o->ready_fd >= 0) write_ports(responder, o->ready_fd);
    while (!stop_requested.load()) sigsuspend(&previous);
    // A second Ctrl-C during the stop exits at once (cli_common's handler): the stop waits
    // for each thread's current work, which a slow answer (--cost-answer-us) can make long.
    // Said to a user who pressed Ctrl-C, not to a process manager's SIGTERM (nor when a run
    // or sweep stops the responder it started).
    if (stop_signal.load() == SIGINT) {
      fmt::print(stderr,
                 "stopping: the threads finish what they are doing (a second Ctrl-C exits at "
                 "once)\n");
      std::fflush(stderr);
    }
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    responder.stop();
    print_answered(responder.stats(), s);
    return exit_ok;
  };
}

}  // namespace dnstransport::cli
