#pragma once
// Internal: what the built-in responder answers to one query. Pure functions over buffers so
// they are tested without sockets and shared by the UDP and stream listeners.

#include <cstddef>
#include <cstdint>
#include <span>

#include <dnstransport/server.hpp>

namespace dnstransport::detail {

// Writes the answer to `query` into `out` and returns its size, or 0 when the query must be
// dropped (shorter than a header, or itself a response). A query whose question cannot be
// parsed gets FORMERR. `out` must hold at least query.size() + 64 octets.
std::size_t build_answer(std::span<const std::uint8_t> query, answer_mode mode,
                         std::span<std::uint8_t> out) noexcept;

// Room build_answer needs beyond the query's size.
inline constexpr std::size_t answer_overhead = 64;

}  // namespace dnstransport::detail
