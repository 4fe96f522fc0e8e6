// The kernel's neighbour table over rtnetlink (xdp_neighbours.hpp): one RTM_GETNEIGH dump of
// the address's family (util/netlink_dump.hpp), its entries' attributes read with the
// kernel's rtattr macros.
#include "transport/xdp/xdp_neighbours.hpp"

#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <span>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>

#include "util/netlink_dump.hpp"

namespace dnstransport::detail {

namespace {

using mac = std::array<std::uint8_t, 6>;

// States of an entry whose link-layer address is known (NUD_INCOMPLETE and NUD_FAILED have
// none).
constexpr std::uint16_t known_states =
    NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE | NUD_PERMANENT | NUD_NOARP;

struct netlink_socket {
  netlink_socket() : fd(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE)) {}
  ~netlink_socket() {
    if (fd >= 0) ::close(fd);
  }
  netlink_socket(const netlink_socket&) = delete;
  netlink_socket& operator=(const netlink_socket&) = delete;
  int fd;
};

// The address of `wanted` (its octets, in network order) on `ifindex` in one dump of the
// family's neighbour table.
std::optional<mac> find_neighbour(int family, unsigned ifindex,
                                  std::span<const std::uint8_t> wanted) {
  const netlink_socket s;
  if (s.fd < 0) return std::nullopt;
  struct {
    nlmsghdr header;
    ndmsg body;
  } request{};
  request.header.nlmsg_len = sizeof request;
  request.header.nlmsg_type = RTM_GETNEIGH;
  request.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  request.body.ndm_family = static_cast<std::uint8_t>(family);
  std::optional<mac> found;
  const bool done =
      netlink_dump(s.fd, std::as_bytes(std::span(&request, 1)), [&](const nlmsghdr& h) {
        if (h.nlmsg_type != RTM_NEWNEIGH || found) return;
        const auto* entry = static_cast<const ndmsg*>(NLMSG_DATA(&h));
        if (entry->ndm_ifindex != static_cast<int>(ifindex) ||
            (entry->ndm_state & known_states) == 0) {
          return;
        }
        bool matches = false;
        std::optional<mac> address;
        int attributes = static_cast<int>(h.nlmsg_len - NLMSG_LENGTH(sizeof(ndmsg)));
    // RTA_OK compares an unsigned length with an int (as RTA_NEXT needs): clang warns
    // inside the macro, GCC does not.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-compare"
        for (auto* a = reinterpret_cast<const rtattr*>(reinterpret_cast<const char*>(entry) +
                                                       NLMSG_ALIGN(sizeof(ndmsg)));
             RTA_OK(a, attributes); a = RTA_NEXT(a, attributes)) {
#pragma GCC diagnostic pop
          const auto length = RTA_PAYLOAD(a);
          if (a->rta_type == NDA_DST && length == wanted.size()) {
            matches = std::memcmp(RTA_DATA(a), wanted.data(), wanted.size()) == 0;
          } else if (a->rta_type == NDA_LLADDR && length == 6) {
            address.emplace();
            std::memcpy(address->data(), RTA_DATA(a), 6);
          }
        }
        if (matches && address) found = address;
      });
  return done ? found : std::nullopt;
}

}  // namespace

std::optional<mac> neighbour_mac(unsigned ifindex, const boost::asio::ip::address& neighbour,
                                 std::chrono::milliseconds wait) {
  const int family = neighbour.is_v4() ? AF_INET : AF_INET6;
  std::array<std::uint8_t, 16> octets{};
  std::span<const std::uint8_t> wanted;
  if (neighbour.is_v4()) {
    const auto v4 = neighbour.to_v4().to_bytes();
    std::memcpy(octets.data(), v4.data(), v4.size());
    wanted = std::span<const std::uint8_t>(octets.data(), v4.size());
  } else {
    octets = neighbour.to_v6().to_bytes();
    wanted = octets;
  }
  if (auto known = find_neighbour(family, ifindex, wanted)) return known;
  {
    boost::asio::io_context io;
    boost::system::error_code ec;
    boost::asio::ip::udp::socket nudge(io);
    nudge.open(neighbour.is_v4() ? boost::asio::ip::udp::v4() : boost::asio::ip::udp::v6(), ec);
    if (!ec) nudge.send_to(boost::asio::buffer("", 0), {neighbour, 9}, 0, ec);
  }
  const auto until = std::chrono::steady_clock::now() + wait;
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (auto resolved = find_neighbour(family, ifindex, wanted)) return resolved;
  } while (std::chrono::steady_clock::now() < until);
  return std::nullopt;
}

}  // namespace dnstransport::detail
