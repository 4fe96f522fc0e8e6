#pragma once
/// \file
/// Test support: connection scripts for the hostile responder, one per way a TCP or TLS
/// server can mistreat a connection (and two legitimate but unusual ways to answer).

#include <cstddef>
#include <cstdint>

#include "hostile_server.hpp"

namespace dnstransport::hostile {

/// Resets the connection as soon as it is accepted (after the handshake for TLS).
connection_script reset_on_accept();
/// Closes (FIN; TLS: close_notify first) as soon as the connection is set up.
connection_script close_at_once();
/// Answers the first query, then closes with the others still unanswered.
connection_script close_after_first_answer();
/// Accepts and never reads a byte; holds the connection until the client leaves.
connection_script never_read();
/// Answers the first query with a length prefix 100 octets longer than what follows, then
/// reads on without answering.
connection_script length_longer_than_data();
/// Sends a zero length prefix in place of the first answer.
connection_script zero_length_prefix();
/// Writes every answer one octet at a time, `gap` apart (slowloris).
connection_script one_byte_at_a_time(microseconds gap);
/// Collects up to `batch` queries (whatever arrives within a few ms), answers them last
/// first. Legitimate (RFC 7766 §6.2.1.1).
connection_script reverse_order(std::size_t batch);
/// Reads one query, thinks for `think`, answers it, then reads the next. Legitimate.
connection_script one_at_a_time(microseconds think);
/// Answers everything; closes when no query came for `idle`.
connection_script idle_close(milliseconds idle);
/// Answers `k` queries, then closes with the rest of the pipeline unanswered.
connection_script close_after(std::uint64_t k);
/// Answers `k` queries, then half-closes (FIN) and reads on without answering.
connection_script half_close_after(std::uint64_t k);
/// Sends `size`-octet messages nobody asked for, as fast as the client takes them, until the
/// client leaves.
connection_script flood(std::size_t size);
/// Plain DNS over TCP on a TLS port: answers the first bytes with a FORMERR message.
connection_script plain_dns_reply();
/// Reads the ClientHello and never answers it.
connection_script stall_handshake();
/// Reads the ClientHello and closes (FIN) without answering it.
connection_script close_after_client_hello();
/// TLS: answers `k` queries, then injects a fatal alert record in clear text and waits
/// for the client to give up.
connection_script alert_after(std::uint64_t k);

}  // namespace dnstransport::hostile
