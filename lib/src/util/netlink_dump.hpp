#pragma once
// Internal: one netlink dump (a request with NLM_F_DUMP, the kernel's answer in as many
// reads as it takes), for the kernel's tables read over netlink: the sockets (sock_diag, the
// monitor) and the neighbours (rtnetlink, AF_XDP's server address).

#include <linux/netlink.h>

#include <functional>
#include <span>

namespace dnstransport::detail {

// Sends `request` (a whole netlink message asking for a dump) on the netlink socket `fd` and
// calls `each` for every message of the answer up to NLMSG_DONE. False when the request
// cannot be sent, a read fails or the kernel answers NLMSG_ERROR.
bool netlink_dump(int fd, std::span<const std::byte> request,
                  const std::function<void(const nlmsghdr& message)>& each);

}  // namespace dnstransport::detail
