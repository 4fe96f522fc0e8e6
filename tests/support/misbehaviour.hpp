#pragma once
/// \file
/// Test support: message scripts for the hostile responder, one per way a server can answer
/// a query wrongly (or rightly, for comparison). They work over UDP, TCP and TLS alike.

#include <cstddef>
#include <cstdint>
#include <span>

#include "hostile_server.hpp"

namespace dnstransport::hostile {

/// A correct answer to `query`: the built-in responder's (A/AAAA records for any name).
bytes answer_to(std::span<const std::uint8_t> query);

/// Answers every query correctly, after `delay`.
message_script answer_all(microseconds delay = microseconds::zero());
/// Answers every query correctly, after `delay` plus a part of `spread` that varies from
/// query to query (evenly over [0, spread), by the query's number), so that answers to a
/// burst of queries come spread out, as from a server with many queries in its queues.
message_script answer_all_spread(microseconds delay, microseconds spread);
/// Answers the even-numbered queries and drops the others.
message_script answer_every_other();
/// Answers with an id no query in flight has.
message_script wrong_id();
/// Answers correctly but with the query's id plus `offset` (mod 2^16): a neighbour's id.
message_script id_offset(std::uint16_t offset);
/// Sends the query back without setting QR.
message_script qr_not_set();
/// Answers a question with another name in it.
message_script wrong_question();
/// Answers correctly but with the question's name in lower case: a server that does not echo
/// the letter case of the question (DNS 0x20, RFC 4343).
message_script lower_case_question();
/// Answers with TC set and no records, as a server whose answer did not fit.
message_script truncated_answers();
/// Every other query (the odd-numbered ones) answered with TC set and no records, the
/// others answered correctly.
message_script truncated_every_other();
/// Per query: stray junk and too-short packets first (an empty datagram too when
/// `datagrams`), then the answer cut inside its header.
message_script garbage_and_short(bool datagrams);
/// Every other query (the odd-numbered ones) answered with the AD bit set (RFC 4035: the
/// server validated the data), the others without it.
message_script authenticated_every_other();
/// Answers every query twice.
message_script duplicate_answers();
/// An answer record whose owner name points back into itself.
message_script compression_loop();
/// An answer record whose owner name points past the end of the message.
message_script pointer_past_end();
/// Valid answers padded with a TXT record to exactly `size` octets (at most 65535).
message_script oversized_answers(std::size_t size);
/// `size` octets (at least 12) of junk carrying the query's id and QR set.
message_script junk_frames(std::size_t size);

}  // namespace dnstransport::hostile
