// One netlink dump (netlink_dump.hpp).
#include "util/netlink_dump.hpp"

#include <sys/socket.h>

namespace dnstransport::detail {

bool netlink_dump(int fd, std::span<const std::byte> request,
                  const std::function<void(const nlmsghdr& message)>& each) {
  if (send(fd, request.data(), request.size(), 0) != static_cast<ssize_t>(request.size())) {
    return false;
  }
  alignas(nlmsghdr) char buffer[32768];
  for (;;) {
    const ssize_t n = recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) return false;
    int left = static_cast<int>(n);
    // NLMSG_OK compares the header's unsigned length with `left` (an int, as NLMSG_NEXT
    // needs): clang warns inside the macro, GCC does not.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-compare"
    for (auto* h = reinterpret_cast<nlmsghdr*>(buffer); NLMSG_OK(h, left);
         h = NLMSG_NEXT(h, left)) {
#pragma GCC diagnostic pop
      if (h->nlmsg_type == NLMSG_DONE) return true;
      if (h->nlmsg_type == NLMSG_ERROR) return false;
      each(*h);
    }
  }
}

}  // namespace dnstransport::detail
