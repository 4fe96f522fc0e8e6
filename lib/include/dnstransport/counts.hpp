#pragma once
/// \file
/// What a run counts per query, each count described once: its name (the key in the run's
/// JSON) and how the run's table shows it. Adding the counts of workers and processes, the
/// JSON written and read, and the table's lines follow from query_count_descriptions, so a
/// new count is a member here, its description beside it, and the code that counts it.

#include <cstdint>
#include <span>
#include <string_view>

namespace dnstransport {

/// Every query sent after the warm-up ends in exactly one of: responses_received,
/// truncated, oversized, lost, lost_on_close, malformed, mismatched, http_failed,
/// quic_failed, abandoned. Packets that match no query in flight are counted apart (late,
/// duplicates, unexpected).
struct query_counts {
  std::uint64_t queries_sent = 0;        ///< after the warm-up; each ends in one outcome
  std::uint64_t responses_received = 0;  ///< complete, well-formed answers to the query sent
  std::uint64_t lost = 0;                ///< no answer within the timeout
  std::uint64_t lost_on_close = 0;       ///< in flight when the connection closed or reset
  std::uint64_t malformed = 0;           ///< answer with the right id that does not parse
  std::uint64_t mismatched = 0;          ///< right id, wrong question/opcode, or QR clear
  /// Of mismatched: the question came back in another letter case than it was sent in, where
  /// a client tells queries of one question apart by letter case (a query list with fewer
  /// distinct questions than load_spec::traffic.outstanding; DNS 0x20, RFC 4343): the server
  /// does not echo the case, or answered with the id of another query of that question.
  std::uint64_t case_not_echoed = 0;
  /// Of the mismatched: answers whose EDNS Client Subnet option carried another family,
  /// source prefix or address than the query's (load_spec::traffic.client_subnet): RFC 7871,
  /// section 7.3, has a resolver drop them.
  std::uint64_t client_subnet_wrong = 0;
  std::uint64_t abandoned = 0;  ///< still in flight when the run was interrupted
  std::uint64_t truncated = 0;  ///< TC set: no complete answer (not retried over TCP)
  std::uint64_t oversized = 0;  ///< UDP answer larger than the query allowed (512 or EDNS)
  /// DoH: the HTTP exchange failed (a status other than 200, another content type, an empty
  /// body, the stream reset); by cause in run_result::http_failures.
  std::uint64_t http_failed = 0;
  /// DoQ: the query's stream failed above DNS; by cause in run_result::quic_failures.
  std::uint64_t quic_failed = 0;
  /// TC answers whose query was retried over TCP (tc_retry_tcp); each retry then ends in
  /// one of the buckets above, not in `truncated`.
  std::uint64_t tc_retried = 0;
  std::uint64_t tc_retry_answered = 0;  ///< of those, answered over TCP (in responses_received)
  /// Queries the server provably did not process, sent again on a new stream (of the same
  /// connection, or of the next): DoH streams the server refused (RST_STREAM REFUSED_STREAM)
  /// or left above a GOAWAY's last stream id (RFC 9113, section 8.7). Each counted once,
  /// however often it went again, and each still ends in one of the buckets above: a query
  /// the server never processes in 4 tries ends in http_failed (`refused_stream`,
  /// `goaway_unprocessed`).
  std::uint64_t unprocessed_retried = 0;
  std::uint64_t out_of_order = 0;  ///< stream answers that overtook an earlier query
  /// Answers (of responses_received) on a connection, TCP, TLS, DoH or DoQ, to a query sent
  /// a whole answer time (3/4 of the connection's shortest latency) or more before the
  /// previous answer on the connection came: queries that waited behind an earlier one,
  /// whose answers tell a server that works on a connection's queries together (RFC 7766,
  /// section 6.2.1.1) from one that takes them one at a time.
  std::uint64_t queued_answers = 0;
  /// Of queued_answers: answers that came after the answer to every earlier query of the
  /// connection and a whole answer time after the previous one, as from a server that
  /// starts on a connection's next query only when it has answered the one before. A server
  /// that works on them together sends such answers close behind each other, or out of
  /// order. (A server whose CPU is saturated spaces its answers out in the same way: only a
  /// server with CPU to spare tells the two apart.)
  std::uint64_t one_at_a_time_answers = 0;
  /// Answers (of responses_received) with the AD bit set (RFC 4035, section 3.2.3): the
  /// server says it validated their data with DNSSEC.
  std::uint64_t authenticated_answers = 0;

  // Open loop: queries scheduled but never sent (not in queries_sent). A query is scheduled
  // after the warm-up when its time comes; queries_sent + both of these were scheduled.
  /// Its time came while the client had `outstanding` queries in flight or waiting: the
  /// generator (or the server) fell behind the schedule.
  std::uint64_t not_sent_outstanding = 0;
  /// It waited longer than the timeout for its client to be able to send (no connection).
  std::uint64_t not_sent_timeout = 0;

  // Per packet that matched no query in flight.
  std::uint64_t late = 0;        ///< answer to a query already counted lost
  std::uint64_t unexpected = 0;  ///< unknown id, or too short to carry one
  std::uint64_t duplicates = 0;  ///< second answer to a query already answered
};

/// The queries that ended in one of the outcomes of a sent query: answered, truncated,
/// oversized, lost, lost on close, malformed, mismatched, abandoned, failed over HTTP or
/// QUIC. Each query sent after the warm-up ends in exactly one, so a finished run has
/// `queries_ended(r) == r.queries_sent`.
inline std::uint64_t queries_ended(const query_counts& c) noexcept {
  return c.responses_received + c.truncated + c.oversized + c.lost + c.lost_on_close + c.malformed +
         c.mismatched + c.abandoned + c.http_failed + c.quic_failed;
}

/// One count of a group of counts: which member it is and how it is shown.
template <typename Counts>
struct count_description {
  std::uint64_t Counts::*member;  ///< the count, as a pointer to its member
  std::string_view name;          ///< its key in the run's JSON
  /// Its line in the run's table, shown when the count is not zero; empty: the table shows
  /// it in a line of its own making (with the other stray packets, as a share, ...).
  std::string_view label = {};
  std::string_view note = {};  ///< after the figure on that line
};

/// Every member of query_counts, in the order the JSON lists them.
inline constexpr count_description<query_counts> query_count_descriptions[] = {
    {&query_counts::queries_sent, "queries_sent"},
    {&query_counts::not_sent_outstanding, "not_sent_outstanding"},
    {&query_counts::not_sent_timeout, "not_sent_timeout"},
    {&query_counts::responses_received, "responses_received"},
    {&query_counts::lost, "lost"},
    {&query_counts::lost_on_close, "lost_on_close"},
    {&query_counts::malformed, "malformed", "malformed answers"},
    {&query_counts::mismatched, "mismatched", "mismatched answers"},
    {&query_counts::case_not_echoed, "case_not_echoed", "case not echoed",
     " of them: the question came back in another letter case than sent (DNS 0x20)"},
    {&query_counts::client_subnet_wrong, "client_subnet_wrong", "client subnet wrong",
     " of them: the answer's EDNS Client Subnet was not the query's (RFC 7871)"},
    {&query_counts::abandoned, "abandoned", "abandoned at stop"},
    {&query_counts::truncated, "truncated"},
    {&query_counts::oversized, "oversized"},
    {&query_counts::http_failed, "http_failed"},
    {&query_counts::quic_failed, "quic_failed"},
    {&query_counts::tc_retried, "tc_retried"},
    {&query_counts::tc_retry_answered, "tc_retry_answered"},
    {&query_counts::unprocessed_retried, "unprocessed_retried", "retried, unprocessed",
     " queries the server refused or did not process (REFUSED_STREAM, GOAWAY), sent again"},
    {&query_counts::out_of_order, "out_of_order"},
    {&query_counts::queued_answers, "queued_answers"},
    {&query_counts::one_at_a_time_answers, "one_at_a_time_answers"},
    {&query_counts::authenticated_answers, "authenticated_answers", "authenticated (AD)",
     " answers the server says it validated with DNSSEC"},
    {&query_counts::late, "late"},
    {&query_counts::unexpected, "unexpected"},
    {&query_counts::duplicates, "duplicates"},
};

/// Connection life cycle counts (TCP, TLS, DoH; DoQ: `opened` counts completed QUIC
/// handshakes, how the server ended them is in quic_stats::closes), for connections whose
/// set-up began after the warm-up (their later events included, whenever they happen).
struct connection_counts {
  std::uint64_t opened = 0;            ///< connections established (TCP handshake done)
  std::uint64_t answered = 0;          ///< answers these connections carried
  std::uint64_t closed_by_client = 0;  ///< we closed after queries_per_connection or at the end
  /// We closed after the keepalive timeout the server advertised with nothing to do
  /// (load_spec::connections.honour_keepalive); like closed_idle, not counted in closed_by_client.
  std::uint64_t closed_idle_keepalive = 0;
  std::uint64_t closed_idle =
      0;  ///< we closed after load_spec::connections.idle_seconds with nothing to do
  std::uint64_t closed_by_server = 0;  ///< EOF from the server (FIN or TLS close_notify)
  std::uint64_t reset_by_server = 0;   ///< connection reset or other socket error while open
  /// We closed it because the server broke the protocol on it (DoH: an HTTP/2 error nghttp2
  /// found in what the server sent; DoQ: a QUIC error ngtcp2 found), counted under its cause
  /// in the connection failures too (`http2_error`, `quic_STREAM_LIMIT_ERROR`, ...).
  std::uint64_t closed_protocol_error = 0;
  std::uint64_t failed = 0;  ///< connect or TLS handshake did not complete
  /// Of the connections closed or reset by the server and of those whose TLS handshake it
  /// ended: the ones that began with a PROXY header (load_spec::connections.proxy) and that
  /// the server ended after it, before any answer. A server that does not accept headers
  /// from this machine does that (dnsdist without setProxyProtocolACL, unbound without
  /// proxy-protocol-port).
  std::uint64_t proxy_refused = 0;
  std::uint64_t fastopen_data_in_syn = 0;  ///< connections whose first query rode in the SYN
  std::uint64_t goaway = 0;                ///< DoH: connections the server ended with HTTP/2 GOAWAY
  /// --verify (DoT, DoH): server certificate chains verified in full; over the whole run,
  /// warm-up included.
  std::uint64_t certificates_verified = 0;
  /// --verify (DoT, DoH): handshakes that received a chain verified before and took its
  /// verdict instead (the same chain, octet for octet, verified less than a minute before);
  /// over the whole run, warm-up included.
  std::uint64_t certificates_reused = 0;
};

/// Every member of connection_counts (the table makes its own lines of the unlabelled ones).
inline constexpr count_description<connection_counts> connection_count_descriptions[] = {
    {&connection_counts::opened, "opened"},
    {&connection_counts::answered, "answered"},
    {&connection_counts::closed_by_client, "closed_by_client"},
    {&connection_counts::closed_idle_keepalive, "closed_idle_keepalive"},
    {&connection_counts::closed_idle, "closed_idle"},
    {&connection_counts::closed_by_server, "closed_by_server"},
    {&connection_counts::reset_by_server, "reset_by_server"},
    {&connection_counts::closed_protocol_error, "closed_protocol_error", "closed: protocol error",
     " connections we closed because the server broke the protocol on them"},
    {&connection_counts::failed, "failed"},
    {&connection_counts::proxy_refused, "proxy_refused", "PROXY header refused",
     " connections the server ended after their PROXY header, before any answer"},
    {&connection_counts::fastopen_data_in_syn, "fastopen_data_in_syn"},
    {&connection_counts::goaway, "goaway"},
    {&connection_counts::certificates_verified, "certificates_verified"},
    {&connection_counts::certificates_reused, "certificates_reused"},
};

/// TLS 1.3 early data (0-RTT) of resumed connections (DoT, DoH, DoQ with --early-data), for
/// connections whose set-up began after the warm-up.
struct early_data_stats {
  std::uint64_t offered = 0;   ///< connections that sent queries in 0-RTT
  std::uint64_t accepted = 0;  ///< ... whose 0-RTT the server accepted
  std::uint64_t rejected = 0;  ///< ... whose 0-RTT the server refused
  /// Queries sent in 0-RTT, whether the server then accepted them or not.
  std::uint64_t queries_in_early_data = 0;
  /// Queries of refused 0-RTT sent again once the handshake was done (each counted once).
  std::uint64_t queries_resent = 0;
};

/// Every member of early_data_stats.
inline constexpr count_description<early_data_stats> early_data_descriptions[] = {
    {&early_data_stats::offered, "offered"},
    {&early_data_stats::accepted, "accepted"},
    {&early_data_stats::rejected, "rejected"},
    {&early_data_stats::queries_in_early_data, "queries_in_early_data"},
    {&early_data_stats::queries_resent, "queries_resent"},
};

/// QUIC connection counts (DoQ), for connections whose set-up began after the warm-up.
struct quic_counts {
  std::uint64_t retries = 0;              ///< Retry packets (address validation) followed
  std::uint64_t version_negotiation = 0;  ///< Version Negotiation answers (no common version)
  std::uint64_t stateless_resets = 0;     ///< Stateless Resets received (RFC 9000 §10.3)
  /// Connections the client replaced because the server grants no streams beyond its first
  /// limit: never a MAX_STREAMS on the connection, every query answered, queries waiting, for
  /// 3 PTOs (Knot DNS 3.2 grants 100 streams per connection and no more).
  std::uint64_t streams_exhausted = 0;
  std::uint64_t stray_packets = 0;  ///< datagrams that belonged to no connection
  /// UDP datagrams the clients sent on their connections.
  std::uint64_t packets_sent = 0;
  /// UDP datagrams the clients received on their connections, stray_packets included.
  std::uint64_t packets_received = 0;
  /// ngtcp2's loss recovery: packets carrying query data declared lost (and sent again),
  /// summed over connections.
  std::uint64_t stream_packets_lost = 0;
  /// ngtcp2's count of successive probe timeouts (PTO) as each connection ended, summed
  /// over connections: the PTOs since its last acknowledgement, not every PTO of its life.
  std::uint64_t probe_timeouts = 0;
  /// Connections that had an RTT sample when they ended (quic_stats' path estimates are
  /// means over them).
  std::uint64_t rtt_samples = 0;
};

/// Every member of quic_counts.
inline constexpr count_description<quic_counts> quic_count_descriptions[] = {
    {&quic_counts::retries, "retries"},
    {&quic_counts::version_negotiation, "version_negotiation"},
    {&quic_counts::stateless_resets, "stateless_resets"},
    {&quic_counts::streams_exhausted, "streams_exhausted"},
    {&quic_counts::stray_packets, "stray_packets"},
    {&quic_counts::packets_sent, "packets_sent"},
    {&quic_counts::packets_received, "packets_received"},
    {&quic_counts::stream_packets_lost, "stream_packets_lost"},
    {&quic_counts::probe_timeouts, "probe_timeouts"},
    {&quic_counts::rtt_samples, "rtt_samples"},
};

/// What the generator itself spent on I/O, from its own counters: where one client machine's
/// limit comes from when the server answers one query per segment. Counted from the end of
/// the warm-up to the end of the run (answers to the window's last queries included), over
/// every worker thread.
struct generator_stats {
  /// Times a worker's event loop ran a handler because one of its sockets became ready (a
  /// client's readiness wait completed; cancelled waits are not counted) or one of its timers
  /// expired (the 10 ms tick, open-loop arrivals, QUIC timers). Not epoll_wait returns: one
  /// return can make several sockets ready, and Asio does not expose them.
  std::uint64_t wakeups = 0;
  /// System calls the generator made on its own sockets: sends and receives (sendmmsg,
  /// recvmmsg, sendmsg, recv; the TLS libraries' reads and writes), connection set-up and
  /// close (socket, setsockopt, getsockopt, bind, connect, close), each counted once, the
  /// ones that failed included. Not the event loop's readiness calls (epoll_wait, epoll_ctl,
  /// timerfd_settime).
  std::uint64_t syscalls = 0;
  /// Of syscalls: those that failed with EAGAIN (nothing left to read, no room to write).
  std::uint64_t syscalls_would_block = 0;
  /// Times a worker thread went to sleep (its voluntary context switches, from getrusage):
  /// waiting for its sockets and timers when there was nothing to do. A sleep and the
  /// wake-up after it cost microseconds of CPU (tens in some VMs); wake-ups near the sleeps
  /// mean the worker slept between nearly every handler.
  std::uint64_t sleeps = 0;
  /// Reads that coalesced receiving (generator_settings::coalesce_us) put off: after a
  /// wake-up that brought answers, the client read again after a short delay instead of
  /// waiting for its socket. 0 when coalescing is off or never engaged (too few queries in
  /// flight, latencies too short for a delay).
  std::uint64_t reads_delayed = 0;
};

/// Every member of generator_stats.
inline constexpr count_description<generator_stats> generator_descriptions[] = {
    {&generator_stats::wakeups, "wakeups"},
    {&generator_stats::syscalls, "syscalls"},
    {&generator_stats::syscalls_would_block, "syscalls_would_block"},
    {&generator_stats::sleeps, "sleeps"},
    {&generator_stats::reads_delayed, "reads_delayed"},
};

/// The descriptions of a group of counts, for code written once for every group; empty for
/// a type that is no group of counts.
template <typename Counts>
inline constexpr std::span<const count_description<Counts>> count_descriptions{};
/// The descriptions of query_counts: query_count_descriptions.
template <>
inline constexpr std::span<const count_description<query_counts>> count_descriptions<query_counts>{
    query_count_descriptions};
/// The descriptions of connection_counts: connection_count_descriptions.
template <>
inline constexpr std::span<const count_description<connection_counts>>
    count_descriptions<connection_counts>{connection_count_descriptions};
/// The descriptions of early_data_stats: early_data_descriptions.
template <>
inline constexpr std::span<const count_description<early_data_stats>>
    count_descriptions<early_data_stats>{early_data_descriptions};
/// The descriptions of quic_counts: quic_count_descriptions.
template <>
inline constexpr std::span<const count_description<quic_counts>> count_descriptions<quic_counts>{
    quic_count_descriptions};
/// The descriptions of generator_stats: generator_descriptions.
template <>
inline constexpr std::span<const count_description<generator_stats>>
    count_descriptions<generator_stats>{generator_descriptions};

// A member added without its description would be neither merged, written nor read.
static_assert(sizeof(query_counts) == count_descriptions<query_counts>.size() * 8);
static_assert(sizeof(connection_counts) == count_descriptions<connection_counts>.size() * 8);
static_assert(sizeof(early_data_stats) == count_descriptions<early_data_stats>.size() * 8);
static_assert(sizeof(quic_counts) == count_descriptions<quic_counts>.size() * 8);
static_assert(sizeof(generator_stats) == count_descriptions<generator_stats>.size() * 8);

/// Adds every count of `other` (another worker's, another process's) to `into`.
template <typename Counts>
requires(!count_descriptions<Counts>.empty()) Counts& add_counts(Counts& into,
                                                                 const Counts& other) noexcept {
  for (const auto& d : count_descriptions<Counts>) into.*d.member += other.*d.member;
  return into;
}

/// Adds every per-query count of `other` to `into`.
inline query_counts& operator+=(query_counts& into, const query_counts& other) noexcept {
  return add_counts(into, other);
}
/// Adds the connections of other clients: every count summed.
inline early_data_stats& operator+=(early_data_stats& into,
                                    const early_data_stats& other) noexcept {
  return add_counts(into, other);
}
/// Adds what other workers spent: every count summed.
inline generator_stats& operator+=(generator_stats& into, const generator_stats& other) noexcept {
  return add_counts(into, other);
}

}  // namespace dnstransport
