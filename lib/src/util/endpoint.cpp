#include <dnstransport/endpoint.hpp>

#include <algorithm>
#include <charconv>

#include <fmt/format.h>
#include <boost/asio/ip/address.hpp>

#include <dnstransport/error.hpp>

namespace dnstransport {

namespace {

std::uint16_t parse_port(std::string_view text, std::string_view whole, std::string_view what) {
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || value > 65535 || text.empty()) {
    throw setup_error(fmt::format("{}: bad port in \"{}\" (expected 0-65535)", what, whole));
  }
  return static_cast<std::uint16_t>(value);
}

}  // namespace

endpoint parse_endpoint(std::string_view text, std::uint16_t default_port, std::string_view what) {
  endpoint result;
  result.port = default_port;
  if (text.empty()) throw setup_error(fmt::format("{}: empty address", what));
  if (text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos) {
      throw setup_error(fmt::format("{}: missing ']' in \"{}\"", what, text));
    }
    result.address = std::string(text.substr(1, close - 1));
    const auto rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') throw setup_error(fmt::format("{}: bad address \"{}\"", what, text));
      result.port = parse_port(rest.substr(1), text, what);
    }
  } else if (std::count(text.begin(), text.end(), ':') == 1) {
    const auto colon = text.find(':');
    result.address = std::string(text.substr(0, colon));
    result.port = parse_port(text.substr(colon + 1), text, what);
  } else {
    result.address = std::string(text);  // bare IPv4, IPv6 or host name
  }
  return result;
}

endpoint parse_listen_endpoint(std::string_view text, std::uint16_t default_port,
                               std::string_view what) {
  endpoint result = parse_endpoint(text, default_port, what);
  boost::system::error_code ec;
  boost::asio::ip::make_address(result.address, ec);
  if (ec) {
    throw setup_error(
        fmt::format("{}: \"{}\" is not an IP address (expected ADDR:PORT)", what, text));
  }
  return result;
}

std::string to_string(const endpoint& where) {
  if (where.address.find(':') != std::string::npos) {
    return fmt::format("[{}]:{}", where.address, where.port);
  }
  return fmt::format("{}:{}", where.address, where.port);
}

}  // namespace dnstransport
