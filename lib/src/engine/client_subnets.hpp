#pragma once
// Internal: EDNS Client Subnet (RFC 7871) as the clients send it. Every query of the set
// carries one option of a fixed size (added when the run is set up, its address zero); a
// client writes the subnet a query carries into its copy of the query as it sends it, and
// checks that the answer echoes it. The subnets of a range are numbered from 0: subnet i is
// the range's network with i in the bits between the range's prefix and the source prefix.

#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

namespace dnstransport::detail {

struct client_subnets {
  std::uint16_t family = 0;  // 1: IPv4, 2: IPv6; 0: the queries carry no option
  unsigned source_prefix = 0;
  unsigned address_size = 0;  // octets of ADDRESS: the source prefix's, rounded up
  // The range's network, big-endian, an IPv4 one in the first 4 octets.
  std::array<std::uint8_t, 16> network{};
  std::uint64_t count = 1;  // subnets in the range: 2^(source prefix - range prefix), at most 2^63
  bool per_query = false;   // a subnet drawn per query (else one per client)
  std::uint64_t seed = 0;   // of the draws
  std::uint64_t first = 0;  // per client: client i carries subnet first + i
  // Per query of the set: the offset of its option's ADDRESS (0: it has none).
  std::vector<std::uint16_t> address_at;

  bool on() const noexcept { return family != 0; }

  // The subnet the query `sequence` of client `client` carries: the client's own, or a draw
  // (SplitMix64 of the seed, client and sequence: the same for a query sent again).
  std::uint64_t subnet_of(unsigned client, std::uint64_t sequence) const noexcept {
    if (!per_query) return (first + client) & (count - 1);
    std::uint64_t z = seed + (std::uint64_t{client} << 40) + sequence * 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return (z ^ (z >> 31)) & (count - 1);
  }

  // Writes subnet `subnet`'s ADDRESS (address_size octets) to `out`.
  void write_address(std::uint64_t subnet, std::uint8_t* out) const noexcept {
    std::array<std::uint8_t, 16> address = network;
    // The subnet's number ends at bit source_prefix (counted from the most significant).
    const unsigned shift = 128 - source_prefix;
    std::uint64_t high = 0;
    std::uint64_t low = 0;
    if (count > 1) {
      if (shift >= 64) {
        high = subnet << (shift - 64);
      } else {
        low = subnet << shift;
        high = shift == 0 ? 0 : subnet >> (64 - shift);
      }
    }
    for (unsigned k = 0; k < 8; ++k) {
      address[k] = static_cast<std::uint8_t>(address[k] | (high >> (56 - 8 * k)));
      address[8 + k] = static_cast<std::uint8_t>(address[8 + k] | (low >> (56 - 8 * k)));
    }
    std::memcpy(out, address.data(), address_size);
  }
};

}  // namespace dnstransport::detail
