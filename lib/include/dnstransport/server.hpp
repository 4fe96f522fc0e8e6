#pragma once
/// \file
/// The built-in DNS responder: the quickstart target and the calibration target. It answers
/// UDP, TCP, DNS over TLS, DNS over HTTPS (HTTP/2) and DNS over QUIC as fast as the kernel
/// allows, so a run against it shows the generator's own ceiling.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <dnstransport/endpoint.hpp>
#include <dnstransport/tls.hpp>
#include <dnstransport/transport.hpp>

namespace dnstransport {

/// What the responder sends back.
enum class answer_mode {
  echo,    ///< the query itself with QR set (the echo server of the reference study)
  answer,  ///< a synthetic answer: A 192.0.2.1 / AAAA 2001:db8::1 for any name, NODATA else
};

/// "echo" or "answer".
std::string_view answer_mode_name(answer_mode mode) noexcept;
/// Mode from its name; nothing for an unknown name.
std::optional<answer_mode> parse_answer_mode(std::string_view name) noexcept;

/// How a listener of the responder treats PROXY protocol headers (server_options::
/// proxy_protocol).
enum class proxy_policy {
  off,  ///< reads none: a header is taken for the query (and dropped as malformed)
  /// A datagram or connection that starts with a header (version 1 or 2) is read as from
  /// the address it claims; one that does not is the peer's own, as Knot Resolver's
  /// net.proxy_allowed does. One that begins as a header but breaks the specification is
  /// refused (server_stats::proxy_refused).
  optional,
  /// Every datagram and connection must start with a valid header: one without is dropped
  /// or closed (server_stats::proxy_refused), as unbound's proxy-protocol-port does.
  required,
};

/// "off", "optional" or "required".
std::string_view proxy_policy_name(proxy_policy policy) noexcept;
/// Policy from its name; nothing for an unknown name.
std::optional<proxy_policy> parse_proxy_policy(std::string_view name) noexcept;

/// The edns-tcp-keepalive timeout the responder advertises without idle timeout or
/// server_options::keepalive_timeout_seconds (unbound's default too).
inline constexpr double default_keepalive_seconds = 120;

/// Responder configuration. Port 0 picks a free port (see server::port).
struct server_options {
  /// Where each transport listens; none: that listener is off. Every listener has its own
  /// SO_REUSEPORT socket per thread. DoH is RFC 8484 (HTTP/2 over TLS); DoQ (RFC 9250) is a
  /// UDP socket, TLS 1.3 through GnuTLS whatever tls_options.backend says, ALPN "doq", and
  /// needs a build with GnuTLS.
  per_transport<std::optional<endpoint>> listen;
  std::string doh_path = "/dns-query";  ///< the path DoH requests go to; others get 404
  unsigned doh_max_streams = 100;       ///< SETTINGS_MAX_CONCURRENT_STREAMS announced
  unsigned doq_max_streams = 100;       ///< DoQ: queries (streams) a client may have open at once
  /// DoQ: accept queries sent in 0-RTT by clients resuming a session; false: tickets allow
  /// no early data and the client sends its queries after the handshake. (TLS and DoH:
  /// tls_options.early_data.)
  bool doq_early_data = true;
  /// DoQ: validate each client's address with a Retry before its connection starts (RFC
  /// 9000, section 8.1.2), as a server under a flood of spoofed Initials would: a round trip
  /// more per connection. Initials with a Retry token that does not check out are dropped.
  bool doq_retry = false;
  unsigned threads = 1;   ///< threads answering, each with its own socket per listener
  std::vector<int> cpus;  ///< pin thread i to cpus[i % size]; empty: no pinning
  answer_mode mode = answer_mode::answer;  ///< what it sends back
  /// PROXY protocol headers (version 1 or 2), per listener: read before each UDP query and
  /// at the start of each TCP, TLS and DoH connection (before TLS), as a server behind a
  /// proxy that it trusts does; the address a header claims is the client's
  /// (server_stats::client_addresses, rate_limit_per_client). Off on every listener by
  /// default; never on the DoQ listener (QUIC has no place for one). set_proxy_protocol
  /// sets every listener's.
  per_transport<proxy_policy> proxy_protocol{};
  /// Every listener's proxy_protocol but DoQ's set to `policy`.
  void set_proxy_protocol(proxy_policy policy) noexcept;
  /// Whether any listener reads PROXY headers.
  bool reads_proxy_headers() const noexcept;
  /// TLS settings of the TLS listener, of the DoH listener (which selects ALPN "h2" instead
  /// of tls_options.alpn) and of the DoQ listener (ALPN "doq", GnuTLS, TLS 1.3); all use the
  /// same certificate.
  tls_server_options tls_options;
  /// Where a generated certificate is written when tls_options has none.
  std::string certificate_directory;

  // Stream behaviour, to exercise clients.
  /// Close a connection after K answers (DoH: GOAWAY, then close once they are sent; DoQ:
  /// CONNECTION_CLOSE with doq_close_code once the K-th answer is sent, queries still open
  /// left unanswered); 0: never.
  std::uint64_t close_after_queries = 0;
  /// DoQ: the application error code of the CONNECTION_CLOSE after close_after_queries
  /// (RFC 9250, section 4.3: 0 DOQ_NO_ERROR, 1 DOQ_INTERNAL_ERROR, 2 DOQ_PROTOCOL_ERROR,
  /// 4 DOQ_EXCESSIVE_LOAD).
  std::uint64_t doq_close_code = 0;
  /// DoQ, breaking the protocol on purpose to test clients (counted per connection; 0:
  /// never): reset the stream of every N-th query with DOQ_INTERNAL_ERROR instead of
  /// answering it,
  std::uint64_t doq_reset_every = 0;
  /// send every N-th query's answer with a 2-octet length one more than the message that
  /// follows,
  std::uint64_t doq_lie_every = 0;
  /// after N answers, forget the connection without a word, so that its next packets
  /// get stateless resets (RFC 9000, section 10.3),
  std::uint64_t doq_stateless_reset_after = 0;
  /// after N answers, open a bidirectional stream of its own and send on it, though the
  /// client granted the server no streams (RFC 9250, section 4.2: only clients open
  /// streams); the responder raises the limit in its copy of the client's transport
  /// parameters to be able to,
  std::uint64_t doq_open_stream_after = 0;
  /// and grant no streams beyond doq_max_streams per connection (no MAX_STREAMS), as Knot
  /// DNS 3.2 does.
  bool doq_fixed_streams = false;
  /// Close a connection idle this long; 0: never for TCP/TLS/DoH, 30 s for DoQ (QUIC's
  /// max_idle_timeout, which the client sees).
  double idle_timeout_seconds = 0;
  /// edns-tcp-keepalive (RFC 7828): the idle timeout advertised over TCP, TLS and DoH in
  /// answers to queries that carry the option, in seconds (sent in units of 100 ms, at most
  /// 6553.5 s). Negative: idle_timeout_seconds when that is set, default_keepalive_seconds
  /// otherwise. Never over UDP, nor over DoQ (RFC 9250, section 5.5.2). The responder does
  /// not close connections for it; idle_timeout_seconds does.
  double keepalive_timeout_seconds = -1;
  /// Padding (RFC 7830): answers to queries that carry a padding option are padded, over
  /// TLS, DoH and DoQ, to a multiple of this many octets (RFC 8467, section 4.1: 468); 0:
  /// never. Over UDP and plain TCP, never.
  std::uint16_t padding_block = 468;
  /// EDNS Client Subnet (RFC 7871): an answer to a query that carries the option echoes it
  /// (family, source prefix and address) with this SCOPE PREFIX-LENGTH, every transport: 0
  /// says the answer is good for any client (the responder's answers do not depend on it); a
  /// prefix says it is good for that subnet only (a cache in front would keep one per
  /// subnet). Negative: not echoed, as by a server that does not know the option.
  int client_subnet_scope = 0;
  bool reverse_order = false;  ///< answer each batch read from a TCP/TLS connection last-first

  /// A known capacity, for tests of a maximum-rate search: answer at most this many queries
  /// per second in total, over every thread and listener (a token bucket refilled from
  /// CLOCK_MONOTONIC, with a burst of 5 ms' worth, at least 16 queries). A UDP query over
  /// the limit is dropped (server_stats::rate_limited_dropped); a TCP, TLS, DoH or DoQ query
  /// waits for its turn and is answered late, in order, never dropped
  /// (server_stats::rate_limited_delayed): a TCP/TLS connection stops reading meanwhile.
  /// Malformed queries and DoH requests answered with an HTTP error do not count. 0: no
  /// limit.
  double rate_limit = 0;
  /// A limit per client, as a server's per-client rate limit (or a load balancer's) works:
  /// answer each client address at most this many queries per second, over every thread
  /// and listener, in the same way as rate_limit (UDP queries over it dropped, stream
  /// answers delayed; the same counts). The client's address is the one a query came from,
  /// or the one its PROXY header claimed (proxy_protocol). With rate_limit as well, an
  /// answer waits for both. Each address's bucket is made when it is first seen and kept
  /// until the responder is gone (about 100 octets each). 0: no limit.
  double rate_limit_per_client = 0;
  /// The burst rate_limit and rate_limit_per_client allow, in seconds' worth of queries at
  /// the limit (at least 16 queries): queries held a few milliseconds by a stalled generator
  /// or responder thread arrive together and are not dropped for it. Over any window of W
  /// seconds at most rate_limit * (W + rate_limit_burst_seconds) queries are answered (and as
  /// many per client under rate_limit_per_client). 0 to 1.
  double rate_limit_burst_seconds = 0.005;

  /// A known cost, for tests of a sweep's cost model (cost_model.hpp); not a realistic
  /// server. Microseconds of CPU the responder spends on top of its own for each answer it
  /// sends (every transport, UDP too), on the thread that answers: it spins until that
  /// thread's CPU clock (CLOCK_THREAD_CPUTIME_ID) has advanced by this much, so time the
  /// thread spends preempted does not count. 0: none (at most 1,000,000).
  double cost_answer_us = 0;
  /// The same, once per connection set-up completed: a TCP connection accepted (plain TCP,
  /// the cost model's per_connection), a TLS handshake completed, full or resumed (TLS and
  /// DoH, its per_full_handshake or per_resumed_handshake), a QUIC handshake completed
  /// (DoQ, the same). 0: none (at most 1,000,000).
  double cost_handshake_us = 0;
};

/// A client of the responder and the answers it got.
struct client_answers {
  std::string address;        ///< the address the client sent from, or its PROXY header claimed
  std::uint64_t answers = 0;  ///< answers sent to it, every transport

  /// Equal when both members are.
  friend bool operator==(const client_answers&, const client_answers&) = default;
};

/// Counters the responder keeps (approximate while running, exact after stop()).
struct server_stats {
  /// Queries answered per transport (DoH: requests answered with 200 and a DNS message;
  /// DoQ: streams answered).
  per_transport<std::uint64_t> queries;
  std::uint64_t connections_accepted = 0;   ///< TCP, TLS and DoH connections, QUIC connections
  std::uint64_t tls_handshakes_failed = 0;  ///< DoQ too: connections that never completed one
  std::uint64_t tls_resumed = 0;            ///< handshakes that resumed a session, DoQ too
  /// TLS and DoH connections whose early data (0-RTT) was accepted and answered.
  std::uint64_t tls_early_data = 0;
  /// Dropped, or for DoH: answered 400, or for DoQ: the stream reset with
  /// DOQ_PROTOCOL_ERROR (a length that does not match the data, or no query).
  std::uint64_t malformed_queries = 0;
  std::uint64_t doq_early_data = 0;  ///< DoQ connections whose 0-RTT data was accepted
  /// Datagrams on the DoQ port that are no QUIC packet, or belong to no connection and do
  /// not open one.
  std::uint64_t doq_packets_dropped = 0;
  /// Of those: short-header packets for a connection it does not know (one that ended, or one
  /// of another server), answered with a stateless reset (RFC 9000, section 10.3).
  std::uint64_t doq_stateless_resets = 0;
  std::uint64_t doq_retries = 0;  ///< Retry packets sent (server_options::doq_retry)
  /// DoQ connections the responder has forgotten: closed and drained, or idle past the
  /// timeout. A packet for one of them is then answered with a stateless reset.
  std::uint64_t doq_connections_ended = 0;
  /// server_options::rate_limit and rate_limit_per_client: UDP queries left unanswered
  /// because a limit was reached.
  /// The UDP queries received are udp_queries (answered) + rate_limited_dropped +
  /// the malformed ones.
  std::uint64_t rate_limited_dropped = 0;
  /// server_options::rate_limit and rate_limit_per_client: TCP, TLS, DoH and DoQ queries
  /// whose answer waited for a limit (each counted once, however long it waited); they are answered
  /// all the same.
  std::uint64_t rate_limited_delayed = 0;
  /// server_options::proxy_protocol: PROXY headers read (one per UDP query, one per
  /// connection).
  std::uint64_t proxy_headers = 0;
  /// server_options::proxy_protocol: datagrams dropped and connections closed for lacking a
  /// valid PROXY header.
  std::uint64_t proxy_refused = 0;
  /// Distinct client addresses answered, every transport: the address each query came from,
  /// or the one its PROXY header claimed (server_options::proxy_protocol). Counted once the
  /// responder has stopped (0 before).
  std::uint64_t client_addresses = 0;
  /// The clients answered most, most first, at most top_client_count of them (ties in
  /// address order); once the responder has stopped.
  std::vector<client_answers> top_clients;
  /// How many clients top_clients lists at most.
  static constexpr std::size_t top_client_count = 10;
};

/// A running responder. Sockets are bound in the constructor (so a port in use is reported
/// at once, as setup_error); threads start in the constructor and stop in stop() or the
/// destructor.
class server {
 public:
  /// Binds the listeners `options` asks for and starts the threads. Throws setup_error when
  /// it cannot (a port in use, a certificate that does not load, ...).
  explicit server(server_options options);
  ~server();
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  /// The port of the listener for `transport` (port 0 resolved); 0 when it is off.
  std::uint16_t port(transport_kind transport) const noexcept;
  /// Every listener's port, as port() gives them.
  const per_transport<std::uint16_t>& ports() const noexcept;

  /// Certificate in use by the TLS, DoH and DoQ listeners (generated or given); empty
  /// without any of them.
  const certificate_files& certificate() const noexcept;

  /// Stops all threads and closes every socket. Idempotent.
  void stop();

  /// The counters so far: approximate while running, exact after stop().
  server_stats stats() const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace dnstransport
