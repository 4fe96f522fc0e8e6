#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include <dnstransport/error.hpp>

#include "cli_common.hpp"
#include "commands.hpp"

namespace dnstransport::cli {

namespace {

struct serve_options {
  std::string listen = "127.0.0.1:5300";
  std::string tcp;
  std::string tls;
  std::string doh;
  std::string doh_path = "/dns-query";
  std::string doq;
  unsigned doq_max_streams = 100;
  bool doq_no_0rtt = false;
  bool no_0rtt = false;
  bool doq_retry = false;
  unsigned threads = 1;
  std::string cpus;
  std::string mode = "answer";
  std::string tls_backend = "openssl";
  std::string certificate;
  std::string key;
  std::string certificate_directory;
  std::uint64_t close_after = 0;
  double idle_timeout = 0;
  bool reverse_order = false;
  double rate_limit = 0;
  bool no_ticket_renewal = false;
  int ready_fd = -1;
};

}  // namespace

action add_serve_command(CLI::App& app) {
  auto* serve = app.add_subcommand(
      "serve",
      "Run the built-in DNS responder until interrupted (UDP, and TCP/TLS/DoH/DoQ if asked)");
  auto o = std::make_shared<serve_options>();
  serve->add_option("--listen", o->listen, "UDP address and port ('off' for no UDP)")
      ->capture_default_str();
  serve->add_option("--tcp", o->tcp, "DNS-over-TCP address and port, e.g. 127.0.0.1:5300");
  serve->add_option("--tls", o->tls, "DNS-over-TLS address and port, e.g. 127.0.0.1:8853");
  serve->add_option("--doh", o->doh,
                    "DNS-over-HTTPS (HTTP/2) address and port, e.g. 127.0.0.1:8443");
  serve->add_option("--doh-path", o->doh_path, "DoH: the path requests go to")
      ->capture_default_str();
  serve->add_option("--doq", o->doq,
                    "DNS-over-QUIC (RFC 9250) UDP address and port, e.g. 127.0.0.1:8853; always "
                    "GnuTLS, a socket per thread");
  serve
      ->add_option("--doq-max-streams", o->doq_max_streams,
                   "DoQ: queries (streams) a client may have open at once")
      ->capture_default_str();
  serve->add_flag("--no-0rtt", o->no_0rtt,
                  "TLS and DoH: refuse 0-RTT (tickets allow no early data; resumption still "
                  "works). Without it early data is accepted: with GnuTLS a replayed "
                  "ClientHello's is refused, the OpenSSL listener does not check for replays");
  serve->add_flag("--doq-no-0rtt", o->doq_no_0rtt,
                  "DoQ: refuse 0-RTT (tickets allow no early data; resumption still works)");
  serve->add_flag("--doq-retry", o->doq_retry,
                  "DoQ: validate every client's address with a Retry first (a round trip more "
                  "per connection, as a server under a flood of spoofed packets would)");
  serve->add_option("--threads", o->threads, "Threads, each with its own SO_REUSEPORT sockets")
      ->capture_default_str();
  serve->add_option("--cpus", o->cpus, "Pin threads to these CPUs, e.g. 1 or 2-3");
  serve
      ->add_option("--mode", o->mode,
                   "answer: synthetic A/AAAA answer for any name; echo: the query back with QR set")
      ->capture_default_str();
  serve->add_option("--tls-backend", o->tls_backend, "TLS library: openssl or gnutls")
      ->capture_default_str();
  serve->add_option("--cert", o->certificate, "PEM certificate chain (generated when absent)");
  serve->add_option("--key", o->key, "PEM private key (generated when absent)");
  serve->add_option("--cert-dir", o->certificate_directory,
                    "Where a generated certificate is written (default: a temporary directory)");
  serve->add_option("--close-after", o->close_after,
                    "Close a connection after this many answers (DoQ: CONNECTION_CLOSE with "
                    "DOQ_NO_ERROR; 0: never)");
  serve->add_option("--idle-timeout", o->idle_timeout,
                    "Close a TCP/TLS/DoH connection idle this many seconds (0: never); DoQ's "
                    "QUIC idle timeout (0: 30 s)");
  serve->add_flag("--reverse-order", o->reverse_order,
                  "Answer the queries of each read in reverse order (tests pipelining clients)");
  serve
      ->add_option("--rate-limit", o->rate_limit,
                   "Answer at most N queries per second in total: UDP queries over the limit are "
                   "dropped, TCP/TLS/DoH/DoQ answers wait (in order, nothing dropped); a target "
                   "with a known capacity for `search` (0: no limit)")
      ->capture_default_str();
  serve->add_flag("--no-ticket-renewal", o->no_ticket_renewal,
                  "TLS: send no new session ticket after a resumed handshake, so clients "
                  "resume from the ticket they have (like dnsdist; openssl backend only)");
  serve
      ->add_option("--ready-fd", o->ready_fd,
                   "Once listening, write the ports (\"udp=P tcp=P tls=P doh=P doq=P\") to this "
                   "open descriptor and close it (used by run/sweep --server-process)")
      ->group("");
  serve->footer(
      "Example: dnstransport serve --listen 127.0.0.1:5300 --tcp 127.0.0.1:5300 "
      "--tls 127.0.0.1:8853 --doh 127.0.0.1:8443 --doq 127.0.0.1:8853 --threads 2 --cpus 1\n"
      "Exit status: 0 after SIGINT/SIGTERM; 2 for bad flags or an address that cannot be bound.");
  return [serve, o]() -> int {
    if (!serve->parsed()) return -1;
    server_options s;
    if (o->listen != "off") s.udp = parse_endpoint(o->listen, 53, "--listen");
    if (!o->tcp.empty()) s.tcp = parse_endpoint(o->tcp, 53, "--tcp");
    if (!o->tls.empty()) s.tls = parse_endpoint(o->tls, 853, "--tls");
    if (!o->doh.empty()) s.doh = parse_endpoint(o->doh, 443, "--doh");
    s.doh_path = o->doh_path;
    if (!o->doq.empty()) s.doq = parse_endpoint(o->doq, 853, "--doq");
    s.doq_max_streams = o->doq_max_streams;
    s.doq_early_data = !o->doq_no_0rtt;
    s.tls_options.early_data = !o->no_0rtt;
    s.doq_retry = o->doq_retry;
    s.threads = o->threads;
    if (!o->cpus.empty()) s.cpus = parse_cpu_list(o->cpus, "--cpus");
    const auto mode = parse_answer_mode(o->mode);
    if (!mode) throw setup_error(fmt::format("--mode: \"{}\" is not answer or echo", o->mode));
    s.mode = *mode;
    const auto backend = parse_tls_backend(o->tls_backend);
    if (!backend) {
      throw setup_error(
          fmt::format("--tls-backend: \"{}\" is not openssl or gnutls", o->tls_backend));
    }
    s.tls_options.backend = *backend;
    s.tls_options.certificate_file = o->certificate;
    s.tls_options.key_file = o->key;
    s.tls_options.renew_tickets = !o->no_ticket_renewal;
    s.certificate_directory = o->certificate_directory;
    s.close_after_queries = o->close_after;
    s.idle_timeout_seconds = o->idle_timeout;
    s.reverse_order = o->reverse_order;
    s.rate_limit = o->rate_limit;

    server responder(s);
    if (s.udp) fmt::print("udp  {}\n", to_string({s.udp->address, responder.udp_port()}));
    if (s.tcp) fmt::print("tcp  {}\n", to_string({s.tcp->address, responder.tcp_port()}));
    if (s.tls) {
      fmt::print("tls  {} ({}, 0-RTT {}), certificate {}, key {}\n",
                 to_string({s.tls->address, responder.tls_port()}), o->tls_backend,
                 s.tls_options.early_data ? "accepted" : "refused",
                 responder.certificate().certificate_file.string(),
                 responder.certificate().key_file.string());
    }
    if (s.doh) {
      fmt::print("doh  https://{}{} ({}, 0-RTT {}), certificate {}\n",
                 to_string({s.doh->address, responder.doh_port()}), s.doh_path, o->tls_backend,
                 s.tls_options.early_data ? "accepted" : "refused",
                 responder.certificate().certificate_file.string());
    }
    if (s.doq) {
      fmt::print("doq  {} (gnutls, 0-RTT {}{}), certificate {}\n",
                 to_string({s.doq->address, responder.doq_port()}),
                 s.doq_early_data ? "accepted" : "refused", s.doq_retry ? ", Retry first" : "",
                 responder.certificate().certificate_file.string());
    }
    fmt::print("mode {}, {} thread{}{}; stop with Ctrl-C\n", o->mode, s.threads,
               s.threads == 1 ? "" : "s",
               s.rate_limit > 0 ? fmt::format(", at most {} answers/s", s.rate_limit) : "");
    std::fflush(stdout);
    if (o->ready_fd >= 0) {
      const std::string ports = fmt::format(
          "udp={} tcp={} tls={} doh={} doq={}\n", responder.udp_port(), responder.tcp_port(),
          responder.tls_port(), responder.doh_port(), responder.doq_port());
      if (write(o->ready_fd, ports.data(), ports.size()) < 0) {
        fmt::print(stderr, "warning: --ready-fd {}: {}\n", o->ready_fd, std::strerror(errno));
      }
      close(o->ready_fd);
    }
    while (!stop_requested.load()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    responder.stop();
    const auto st = responder.stats();
    fmt::print(
        "answered: {} udp, {} tcp, {} tls, {} doh, {} doq; {} connections accepted; {} TLS "
        "handshakes failed, {} resumed, {} with 0-RTT accepted; {} malformed queries dropped\n",
        st.udp_queries, st.tcp_queries, st.tls_queries, st.doh_queries, st.doq_queries,
        st.connections_accepted, st.tls_handshakes_failed, st.tls_resumed, st.tls_early_data,
        st.malformed_queries);
    if (s.rate_limit > 0) {
      fmt::print("rate limit: {} UDP queries dropped, {} stream answers delayed\n",
                 st.rate_limited_dropped, st.rate_limited_delayed);
    }
    if (s.doq) {
      fmt::print(
          "doq: {} connections with 0-RTT accepted, {} Retry sent, {} datagrams dropped ({} "
          "answered with a stateless reset)\n",
          st.doq_early_data, st.doq_retries, st.doq_packets_dropped, st.doq_stateless_resets);
    }
    return exit_ok;
  };
}

}  // namespace dnstransport::cli
