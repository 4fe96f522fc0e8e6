#pragma once
/// \file
/// What a run counts per query, each count described once: its name (the key in the run's
/// JSON) and how the run's table shows it. Adding the counts of workers and processes, the
/// JSON written and read, and the table's lines follow from query_count_descriptions, so a
/// new count is a member here, its description beside it, and the code that counts it.

#include <cstdint>
#include <iterator>
#include <string_view>

namespace dnstransport {

/// Every query sent after the warm-up ends in exactly one of: responses_received,
/// truncated, oversized, lost, lost_on_close, malformed, mismatched, http_failed,
/// quic_failed, abandoned. Packets that match no query in flight are counted apart (late,
/// duplicates, unexpected).
struct query_counts {
  std::uint64_t queries_sent = 0;
  std::uint64_t responses_received = 0;  ///< complete, well-formed answers to the query sent
  std::uint64_t lost = 0;                ///< no answer within the timeout
  std::uint64_t lost_on_close = 0;       ///< in flight when the connection closed or reset
  std::uint64_t malformed = 0;           ///< answer with the right id that does not parse
  std::uint64_t mismatched = 0;          ///< right id, wrong question/opcode, or QR clear
  std::uint64_t abandoned = 0;           ///< still in flight when the run was interrupted
  std::uint64_t truncated = 0;           ///< TC set: no complete answer (not retried over TCP)
  std::uint64_t oversized = 0;           ///< UDP answer larger than the query allowed (512 or EDNS)
  /// DoH: the HTTP exchange failed (a status other than 200, another content type, an empty
  /// body, the stream reset); by cause in run_result::http_failures.
  std::uint64_t http_failed = 0;
  /// DoQ: the query's stream failed above DNS; by cause in run_result::quic_failures.
  std::uint64_t quic_failed = 0;
  /// TC answers whose query was retried over TCP (tc_retry_tcp); each retry then ends in
  /// one of the buckets above, not in `truncated`.
  std::uint64_t tc_retried = 0;
  std::uint64_t tc_retry_answered = 0;  ///< of those, answered over TCP (in responses_received)
  std::uint64_t out_of_order = 0;       ///< stream answers that overtook an earlier query
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

/// One count of a group of counts: which member it is and how it is shown.
template <typename Counts>
struct count_description {
  std::uint64_t Counts::*member;
  std::string_view name;  ///< its key in the run's JSON
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
    {&query_counts::abandoned, "abandoned", "abandoned at stop"},
    {&query_counts::truncated, "truncated"},
    {&query_counts::oversized, "oversized"},
    {&query_counts::http_failed, "http_failed"},
    {&query_counts::quic_failed, "quic_failed"},
    {&query_counts::tc_retried, "tc_retried"},
    {&query_counts::tc_retry_answered, "tc_retry_answered"},
    {&query_counts::out_of_order, "out_of_order"},
    {&query_counts::authenticated_answers, "authenticated_answers", "authenticated (AD)",
     " answers the server says it validated with DNSSEC"},
    {&query_counts::late, "late"},
    {&query_counts::unexpected, "unexpected"},
    {&query_counts::duplicates, "duplicates"},
};

// A member added without its description would be neither merged, written nor read.
static_assert(sizeof(query_counts) == std::size(query_count_descriptions) * sizeof(std::uint64_t),
              "every member of query_counts has its description");

/// Adds every count of `other` (another worker's, another process's) to `into`.
inline query_counts& operator+=(query_counts& into, const query_counts& other) noexcept {
  for (const auto& d : query_count_descriptions) into.*d.member += other.*d.member;
  return into;
}

}  // namespace dnstransport
