#pragma once
/// \file
/// Addresses and ports as users write them on a command line: for a listener of the
/// built-in responder, or for the server a load is sent to.

#include <cstdint>
#include <string>
#include <string_view>

namespace dnstransport {

/// An address and port to listen on or send to.
struct endpoint {
  std::string address;     ///< IPv4 or IPv6 address (no brackets), or a host name
  std::uint16_t port = 0;  ///< for a listener, 0 picks a free port
};

/// Parses "ADDR:PORT", "[v6]:PORT", "ADDR" (uses default_port) or a bare v6 address.
/// Throws setup_error naming `what` (e.g. "--listen") for a malformed value.
endpoint parse_endpoint(std::string_view text, std::uint16_t default_port, std::string_view what);

/// parse_endpoint for a listener: its address must be an IP address (a listener binds an
/// address, not a host name). Throws setup_error naming `what` (e.g. "--tcp").
endpoint parse_listen_endpoint(std::string_view text, std::uint16_t default_port,
                               std::string_view what);

/// "127.0.0.1:53" or "[::1]:53".
std::string to_string(const endpoint& where);

}  // namespace dnstransport
