#pragma once
// Internal: the MAC address a frame to an address on the interface's link goes to, from the
// kernel's neighbour table (ARP for IPv4, neighbour discovery for IPv6), read over rtnetlink.

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>

#include <boost/asio/ip/address.hpp>

namespace dnstransport::detail {

// The link-layer address of `neighbour` on interface `ifindex` in the kernel's neighbour table
// (an entry the kernel has resolved, or a permanent one). Before it looks, one empty datagram
// to `neighbour`'s discard port from a kernel socket makes the kernel resolve the address
// when it has no entry (nothing answers it but, at most, an ICMP error); it then looks again
// until `wait` has passed: 3 s by default, the kernel's three solicitations a second apart
// (the first is lost now and then on a link that has just come up). Nothing when the kernel
// has no such entry by then.
std::optional<std::array<std::uint8_t, 6>> neighbour_mac(
    unsigned ifindex, const boost::asio::ip::address& neighbour,
    std::chrono::milliseconds wait = std::chrono::milliseconds(3000));

}  // namespace dnstransport::detail
