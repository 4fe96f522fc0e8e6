// The XDP program of an AF_XDP run (xdp_program.hpp), through libbpf.
#include "transport/xdp/xdp_program.hpp"

#include <arpa/inet.h>
#include <linux/if_link.h>
#include <netinet/in.h>

#include <array>
#include <cerrno>
#include <cstring>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>

#include <dnstransport/error.hpp>

namespace dnstransport::detail {

namespace {

// As xdp_answers.bpf.c has it.
struct server_entry {
  std::uint32_t family = 0;
  std::array<std::uint32_t, 4> address{};
  std::uint32_t port = 0;
  std::uint32_t protocol = 0;  // IPPROTO_UDP or IPPROTO_TCP
};

// libbpf's own messages stay quiet: a failure is this library's error, with its reason.
int quiet(enum libbpf_print_level, const char*, va_list) {
  return 0;
}

std::string why(int error) {
  if (error == EPERM || error == EACCES) return "needs root (CAP_BPF and CAP_NET_ADMIN)";
  return std::strerror(error);
}

}  // namespace

xdp_program::xdp_program(const std::string& named, int ifindex,
                         const boost::asio::ip::udp::endpoint& server, bool tcp)
    : ifindex_(ifindex) {
  libbpf_set_print(quiet);
  object_ = bpf_object__open_mem(xdp_answers_object.data(), xdp_answers_object.size(), nullptr);
  if (object_ == nullptr) {
    throw setup_error(fmt::format("{}: the XDP program does not open: {}", named, why(errno)));
  }
  if (const int error = bpf_object__load(object_); error != 0) {
    bpf_object__close(object_);
    throw setup_error(fmt::format("{}: the XDP program does not load: {}", named, why(-error)));
  }
  server_entry entry;
  if (server.address().is_v4()) {
    entry.family = 4;
    const auto bytes = server.address().to_v4().to_bytes();
    std::memcpy(entry.address.data(), bytes.data(), 4);
  } else {
    entry.family = 6;
    const auto bytes = server.address().to_v6().to_bytes();
    std::memcpy(entry.address.data(), bytes.data(), 16);
  }
  const std::uint16_t port = htons(server.port());
  entry.port = port;
  entry.protocol = tcp ? IPPROTO_TCP : IPPROTO_UDP;
  const std::uint32_t key = 0;
  const int target = bpf_object__find_map_fd_by_name(object_, "dnstransport_target");
  sockets_map_ = bpf_object__find_map_fd_by_name(object_, "dnstransport_xsks");
  bpf_program* program = bpf_object__find_program_by_name(object_, "dnstransport_answers");
  if (target < 0 || sockets_map_ < 0 || program == nullptr ||
      bpf_map_update_elem(target, &key, &entry, BPF_ANY) != 0) {
    bpf_object__close(object_);
    throw setup_error(fmt::format("{}: the XDP program's maps cannot be set", named));
  }
  // Never over a program already there (another tool's, or another run's).
  flags_ = XDP_FLAGS_UPDATE_IF_NOEXIST | XDP_FLAGS_DRV_MODE;
  int error = bpf_xdp_attach(ifindex, bpf_program__fd(program), flags_, nullptr);
  native_ = error == 0;
  if (error != 0 && error != -EBUSY && error != -EEXIST && error != -EPERM) {
    flags_ = XDP_FLAGS_UPDATE_IF_NOEXIST | XDP_FLAGS_SKB_MODE;
    error = bpf_xdp_attach(ifindex, bpf_program__fd(program), flags_, nullptr);
  }
  if (error != 0) {
    bpf_object__close(object_);
    throw setup_error(fmt::format("{}: the XDP program cannot be attached: {}", named,
                                  error == -EBUSY || error == -EEXIST
                                      ? "the interface has an XDP program already"
                                      : why(-error)));
  }
}

xdp_program::~xdp_program() {
  bpf_xdp_detach(ifindex_, flags_ & ~XDP_FLAGS_UPDATE_IF_NOEXIST, nullptr);
  bpf_object__close(object_);
}

}  // namespace dnstransport::detail
