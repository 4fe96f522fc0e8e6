#pragma once
// Internal: UDP generic segmentation offload (UDP_SEGMENT, Linux 4.18): several QUIC packets
// that lie back to back in memory, go to the same place and have the same size (the last may
// be shorter) leave in one send, and the kernel cuts them apart below the IP layer. The DoQ
// client and the responder use it where the kernel has it, sendmmsg alone where it does not.

#include <sys/socket.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <span>

namespace dnstransport::detail {

// Whether this kernel segments UDP sends (probed once, on a socket of its own).
bool udp_gso_available() noexcept;

// The kernel's limit: segments per send (UDP_MAX_SEGMENTS).
inline constexpr std::size_t gso_max_segments = 64;

// How many packets from `from` one send can carry: back to back in memory, each the size of
// the first but the last (which may be shorter), at most gso_max_segments and 64 KiB. At
// least 1.
std::size_t gso_run(std::span<const iovec> packets, std::size_t from) noexcept;

// Room for a UDP_SEGMENT control message.
inline constexpr std::size_t gso_control_size = CMSG_SPACE(sizeof(std::uint16_t));

// Writes a UDP_SEGMENT control message for segments of `segment` octets at `where` (which
// has gso_control_size octets, aligned for cmsghdr); returns its length for msg_controllen.
std::size_t put_gso_control(void* where, std::uint16_t segment) noexcept;

}  // namespace dnstransport::detail
