#include "responder/listener.hpp"

#include <fmt/format.h>

namespace dnstransport::detail {

std::string describe_endpoint(const boost::asio::ip::address& address, std::uint16_t port) {
  const auto text = address.to_string();
  return address.is_v6() ? fmt::format("[{}]:{}", text, port) : fmt::format("{}:{}", text, port);
}

}  // namespace dnstransport::detail
