#include "util/udp_gso.hpp"

#include <netinet/in.h>
#include <netinet/udp.h>
#include <unistd.h>

#include <cstring>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103  // linux/udp.h, Linux 4.18
#endif

namespace dnstransport::detail {

bool udp_gso_available() noexcept {
  static const bool available = [] {
    const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    int segment = 1200;
    const bool ok = ::setsockopt(fd, SOL_UDP, UDP_SEGMENT, &segment, sizeof segment) == 0;
    ::close(fd);
    return ok;
  }();
  return available;
}

std::size_t gso_run(std::span<const iovec> packets, std::size_t from) noexcept {
  const std::size_t segment = packets[from].iov_len;
  std::size_t total = segment;
  std::size_t n = 1;
  while (from + n < packets.size() && n < gso_max_segments) {
    const iovec& previous = packets[from + n - 1];
    const iovec& next = packets[from + n];
    // The previous packet must be a full segment for another to follow it.
    if (previous.iov_len != segment || next.iov_len > segment || next.iov_len == 0 ||
        static_cast<const std::uint8_t*>(previous.iov_base) + previous.iov_len != next.iov_base ||
        total + next.iov_len > 65000) {
      break;
    }
    total += next.iov_len;
    ++n;
  }
  return n;
}

std::size_t put_gso_control(void* where, std::uint16_t segment) noexcept {
  msghdr m{};
  m.msg_control = where;
  m.msg_controllen = gso_control_size;
  cmsghdr* c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_UDP;
  c->cmsg_type = UDP_SEGMENT;
  c->cmsg_len = CMSG_LEN(sizeof segment);
  std::memcpy(CMSG_DATA(c), &segment, sizeof segment);
  return gso_control_size;
}

}  // namespace dnstransport::detail
