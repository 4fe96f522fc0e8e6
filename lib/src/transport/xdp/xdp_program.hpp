#pragma once
// Internal: the XDP program of an AF_XDP run (xdp_answers.bpf.c), loaded from the bytes the
// build keeps in the library, told the server's address, port and protocol (UDP or TCP: the
// other stays the kernel's, as UDP's retries over TCP need), and attached to the
// interface for the run (driver mode where the driver has it, else generic); detached when
// the run ends.

#include <cstdint>
#include <span>
#include <string>

#include <boost/asio/ip/udp.hpp>

struct bpf_object;

namespace dnstransport::detail {

// The compiled program (cmake/embed_bytes.cmake).
extern const std::span<const unsigned char> xdp_answers_object;

class xdp_program {
 public:
  // Throws setup_error starting with `named` (the setting and the interface) when the
  // program cannot be loaded or attached (not root, another XDP program already there).
  xdp_program(const std::string& named, int ifindex, const boost::asio::ip::udp::endpoint& server,
              bool tcp);
  ~xdp_program();
  xdp_program(const xdp_program&) = delete;
  xdp_program& operator=(const xdp_program&) = delete;

  // The XSKMAP the AF_XDP sockets are put in, by queue.
  int sockets_map() const noexcept { return sockets_map_; }
  // Attached in the driver (false: generic XDP, after the kernel's receive path began).
  bool native() const noexcept { return native_; }

 private:
  bpf_object* object_ = nullptr;
  int ifindex_ = 0;
  std::uint32_t flags_ = 0;
  int sockets_map_ = -1;
  bool native_ = false;
};

}  // namespace dnstransport::detail
