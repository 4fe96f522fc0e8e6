// Source addresses from addresses and CIDR ranges: a range is read lazily, as many of its
// hosts as there are clients to bind them, so that fd00::/64 costs no more than /120.
#include "load/source_ranges.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>

#include <fmt/format.h>
#include <boost/asio/ip/network_v4.hpp>
#include <boost/asio/ip/network_v6.hpp>
#include <boost/asio/ip/udp.hpp>

#include <dnstransport/error.hpp>
#include <dnstransport/transport.hpp>

namespace dnstransport::detail {

namespace {

namespace ip = boost::asio::ip;

constexpr std::uint64_t most = std::uint64_t{1} << 63;

// The hosts of a range: the first one and how many. A /31 or /32 (/127, /128) is all its
// addresses; a wider IPv4 range leaves out its network and broadcast addresses, a wider IPv6
// one its Subnet-Router anycast address (host part 0, RFC 4291 section 2.6.1).
struct host_range {
  ip::address first;
  std::uint64_t count = 0;
};

host_range hosts_of(const ip::network_v4& net) {
  const unsigned host_bits = 32 - net.prefix_length();
  const std::uint32_t base = net.network().to_uint();
  if (host_bits <= 1) return {ip::address_v4(base), std::uint64_t{1} << host_bits};
  return {ip::address_v4(base + 1), (std::uint64_t{1} << host_bits) - 2};
}

host_range hosts_of(const ip::network_v6& net) {
  const unsigned host_bits = 128 - net.prefix_length();
  auto bytes = net.network().to_bytes();
  if (host_bits <= 1) {
    return {ip::address_v6(bytes), std::uint64_t{1} << host_bits};
  }
  // base + 1
  for (auto b = bytes.rbegin(); b != bytes.rend() && ++*b == 0; ++b) {
  }
  const std::uint64_t count = host_bits >= 63 ? most : (std::uint64_t{1} << host_bits) - 1;
  return {ip::address_v6(bytes), count};
}

// The i-th address from `first` (i below the range's count).
ip::address nth(const ip::address& first, std::uint64_t i) {
  if (first.is_v4()) {
    return ip::address_v4(first.to_v4().to_uint() + static_cast<std::uint32_t>(i));
  }
  auto bytes = first.to_v6().to_bytes();
  unsigned carry = 0;
  for (int k = 15; k >= 0; --k) {
    const unsigned add = k >= 8 ? static_cast<unsigned>((i >> (8 * (15 - k))) & 0xff) : 0;
    const unsigned sum = bytes[static_cast<std::size_t>(k)] + add + carry;
    bytes[static_cast<std::size_t>(k)] = static_cast<unsigned char>(sum & 0xff);
    carry = sum >> 8;
  }
  return ip::address_v6(bytes);
}

host_range parse_entry(const std::string& text, const std::string& setting) {
  boost::system::error_code ec;
  if (text.find('/') == std::string::npos) {
    const ip::address address = ip::make_address(text, ec);
    if (ec) {
      throw setup_error(
          fmt::format("{}: \"{}\" is neither an IP address nor a range "
                      "(ADDRESS/PREFIX, e.g. 127.0.0.0/16 or fd00::/112)",
                      setting, text));
    }
    return {address, 1};
  }
  if (text.find(':') == std::string::npos) {
    const ip::network_v4 net = ip::make_network_v4(text, ec);
    if (!ec) return hosts_of(net);
  } else {
    const ip::network_v6 net = ip::make_network_v6(text, ec);
    if (!ec) return hosts_of(net);
  }
  throw setup_error(fmt::format(
      "{}: \"{}\" is not a range (ADDRESS/PREFIX: an IPv4 address and 0 to 32, or an IPv6 "
      "address and 0 to 128)",
      setting, text));
}

}  // namespace

source_list expand_sources(const std::vector<std::string>& entries, std::uint64_t wanted,
                           bool server_is_v4, const std::string& setting) {
  source_list out;
  for (const auto& text : entries) {
    const host_range range = parse_entry(text, setting);
    if (range.first.is_v4() != server_is_v4) {
      throw setup_error(fmt::format("{}: {} is not of the server's family ({})", setting, text,
                                    server_is_v4 ? "IPv4" : "IPv6"));
    }
    for (std::uint64_t i = 0; i < range.count && out.addresses.size() < wanted; ++i) {
      out.addresses.push_back(nth(range.first, i));
    }
    out.available = std::min(most, out.available + range.count);
  }
  return out;
}

std::vector<ip::address> proxy_addresses(const proxy_settings& proxy, std::uint64_t clients,
                                         const std::string& setting) {
  std::vector<host_range> ranges;
  std::uint64_t available = 0;
  for (const auto& text : proxy.sources) {
    ranges.push_back(parse_entry(text, setting));
    available = std::min(most, available + ranges.back().count);
  }
  // The i-th address over all the entries, in order.
  const auto at = [&ranges](std::uint64_t i) {
    for (const auto& r : ranges) {
      if (i < r.count) return nth(r.first, i);
      i -= r.count;
    }
    return ranges.back().first;
  };
  std::vector<ip::address> out;
  if (available == 0) return out;
  out.reserve(static_cast<std::size_t>(std::min(clients, available)));
  if (proxy.random) {
    std::mt19937_64 draw(proxy.seed);
    std::uniform_int_distribution<std::uint64_t> pick(0, available - 1);
    for (std::uint64_t i = 0; i < clients; ++i) out.push_back(at(pick(draw)));
  } else {
    for (std::uint64_t i = 0; i < std::min(clients, available); ++i) out.push_back(at(i));
  }
  return out;
}

// How many addresses the entries hold (at most 2^63), each entry checked.
std::uint64_t addresses_held(const std::vector<std::string>& entries, const std::string& setting) {
  std::uint64_t available = 0;
  for (const auto& text : entries) {
    available = std::min(most, available + parse_entry(text, setting).count);
  }
  return available;
}

void validate_distinct_sources(const load_spec& spec) {
  const std::uint64_t wanted = spec.connections.distinct_sources;
  if (wanted == 0) return;
  const std::string named = setting("load_spec::connections.distinct_sources");
  if (wanted > connection_settings::max_distinct_sources) {
    throw setup_error(
        fmt::format("{} {} is more than {} (a PROXY header each is made before the "
                    "run)",
                    named, wanted, connection_settings::max_distinct_sources));
  }
  const proxy_settings& proxy = spec.connections.proxy;
  if (proxy.version != proxy_protocol::none) {
    const std::string from = setting("load_spec::connections.proxy.sources");
    const std::uint64_t held = addresses_held(proxy.sources, from);
    if (held < wanted) {
      throw setup_error(fmt::format("{} {}: {} {} {} {}; give a wider range", named, wanted, from,
                                    fmt::join(proxy.sources, ","),
                                    proxy.sources.size() == 1 ? "holds" : "hold", held));
    }
    return;
  }
  const std::string from = setting("load_spec::connections.sources");
  if (spec.connections.sources.empty()) {
    throw setup_error(fmt::format(
        "{} needs client addresses to choose from: {} (the addresses PROXY headers claim, any "
        "network) or {} (addresses of this machine)",
        named, setting("load_spec::connections.proxy.version"), from));
  }
  const std::uint64_t held = addresses_held(spec.connections.sources, from);
  if (held < wanted) {
    throw setup_error(fmt::format("{} {}: {} {} {} {}; give a wider range", named, wanted, from,
                                  fmt::join(spec.connections.sources, ","),
                                  spec.connections.sources.size() == 1 ? "holds" : "hold", held));
  }
  const transport_traits& traits = traits_of(spec.target.transport);
  if (!traits.over_tcp && wanted > spec.traffic.clients) {
    throw setup_error(fmt::format(
        "{} {} with {} {}: over {} each client keeps one socket, bound to one address of {}; "
        "give at least {} clients, or {} v2 (each datagram's header claims the next address)",
        named, wanted, setting("load_spec::traffic.clients"), spec.traffic.clients, traits.name,
        from, wanted, setting("load_spec::connections.proxy.version")));
  }
}

void check_sources_local(const std::vector<ip::address>& sources, const std::string& setting) {
  if (sources.empty()) return;
  // A range is usually all of this machine's or none of it: up to 4,096 of its addresses,
  // evenly spread, and the last.
  constexpr std::size_t most_probed = 4096;
  const std::size_t step = std::max<std::size_t>(1, sources.size() / most_probed);
  const auto probe = [&setting](const ip::address& address) {
    const int fd = ::socket(address.is_v4() ? AF_INET : AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return;  // no descriptor to spare: the run's own sockets will say so
    const ip::udp::endpoint where(address, 0);
    const int error =
        ::bind(fd, where.data(), static_cast<socklen_t>(where.size())) == 0 ? 0 : errno;
    ::close(fd);
    if (error != EADDRNOTAVAIL) return;
    throw setup_error(fmt::format(
        "{}: {} is not an address of this machine (the kernel refuses to bind it: {}); give "
        "addresses it has (`ip address`; all of 127.0.0.0/8 is loopback), or for an IPv6 range "
        "`ip -6 route add local RANGE dev lo` and sysctl net.ipv6.ip_nonlocal_bind=1",
        setting, address.to_string(), std::strerror(error)));
  };
  for (std::size_t i = 0; i < sources.size(); i += step) probe(sources[i]);
  probe(sources.back());
}

std::uint64_t sources_wanted(const load_spec& spec) noexcept {
  if (spec.connections.distinct_sources != 0) return spec.connections.distinct_sources;
  constexpr std::uint64_t in_turn = 65536;
  const std::uint64_t clients = spec.traffic.clients;
  return spec.connections.source_mode == source_mode::round_robin ? std::max(clients, in_turn)
                                                                  : clients;
}

std::vector<std::string> expanded_source_texts(const load_spec& spec) {
  const auto& entries = spec.connections.sources;
  if (entries.empty()) return {};
  // The family of the first entry: a mix is refused later, where the server is known.
  const bool v4 = entries.front().find(':') == std::string::npos;
  std::vector<std::string> texts;
  try {
    for (const auto& a : expand_sources(entries, sources_wanted(spec), v4, "").addresses) {
      texts.push_back(a.to_string());
    }
  } catch (const setup_error&) {
    return entries;
  }
  return texts;
}

}  // namespace dnstransport::detail
