#pragma once
// Internal: what the built-in responder answers to one query. Pure functions over buffers so
// they are tested without sockets and shared by the UDP and stream listeners.

#include <cstddef>
#include <cstdint>
#include <span>

#include <dnstransport/server.hpp>

namespace dnstransport::detail {

// What an answer's OPT record carries in reply to the EDNS options of its query, for one
// transport: the default (nothing) is UDP's.
struct answer_edns {
  // edns-tcp-keepalive (RFC 7828): the TIMEOUT (units of 100 ms) given to a query that
  // carries the option; false: never (UDP, and DoQ by RFC 9250 section 5.5.2).
  bool keepalive = false;
  std::uint16_t keepalive_timeout = 0;
  // Padding (RFC 7830): an answer to a query that carries a padding option is padded to a
  // multiple of this many octets; 0: never (the unencrypted transports).
  std::uint16_t padding_block = 0;
  // EDNS Client Subnet (RFC 7871): a query's option echoed with this SCOPE PREFIX-LENGTH
  // (server_options::client_subnet_scope); negative: not echoed. Needs no room of its own:
  // the echo is no longer than the query's option.
  int client_subnet_scope = -1;
};

// The answers' EDNS behaviour of the responder's listener for `transport`: keepalive over
// TCP, TLS and DoH, padding over TLS, DoH and DoQ.
answer_edns answer_edns_for(const server_options& options, transport_kind transport) noexcept;

// Writes the answer to `query` into `out` and returns its size, or 0 when the query must be
// dropped (shorter than a header, or itself a response). A query whose question cannot be
// parsed gets FORMERR. `out` must hold at least query.size() + answer_room(edns) octets. A
// padded answer longer than `out` or 65535 octets is sent unpadded. Echo mode sends the
// query back, its options as they were.
std::size_t build_answer(std::span<const std::uint8_t> query, answer_mode mode,
                         std::span<std::uint8_t> out, const answer_edns& edns = {}) noexcept;

// Room build_answer needs beyond the query's size without EDNS options.
inline constexpr std::size_t answer_overhead = 64;

// Room build_answer needs beyond the query's size with `edns`.
constexpr std::size_t answer_room(const answer_edns& edns) noexcept {
  return answer_overhead + (edns.keepalive ? 6 : 0) +
         (edns.padding_block != 0 ? 4 + std::size_t{edns.padding_block} : 0);
}

}  // namespace dnstransport::detail
