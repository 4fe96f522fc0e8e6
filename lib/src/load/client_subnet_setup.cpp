// EDNS Client Subnet set up: the range read with Asio's network types, the option, and the
// offsets of each query's address.
#include "load/client_subnet_setup.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <boost/asio/ip/network_v4.hpp>
#include <boost/asio/ip/network_v6.hpp>

#include <dnstransport/error.hpp>
#include <dnstransport/load.hpp>

#include "message/wire.hpp"

namespace dnstransport::detail {

namespace ip = boost::asio::ip;

unsigned source_prefix_of(const client_subnet_settings& settings, bool v4, unsigned range_prefix) {
  if (settings.source_prefix) return *settings.source_prefix;
  return std::max(v4 ? 24u : 56u, range_prefix);
}

client_subnets read_client_subnets(const client_subnet_settings& settings,
                                   const std::string& setting) {
  client_subnets out;
  unsigned range_prefix = 0;
  bool v4 = false;
  boost::system::error_code error;
  const auto net4 = ip::make_network_v4(settings.range, error);
  if (!error) {
    v4 = true;
    range_prefix = net4.prefix_length();
    const auto bytes = net4.network().to_bytes();
    std::copy(bytes.begin(), bytes.end(), out.network.begin());
  } else {
    const auto net6 = ip::make_network_v6(settings.range, error);
    if (error) {
      throw setup_error(
          fmt::format("{}: \"{}\" is not an IPv4 or IPv6 network in CIDR form "
                      "(198.51.100.0/22, 2001:db8::/40)",
                      setting, settings.range));
    }
    range_prefix = net6.prefix_length();
    const auto bytes = net6.network().to_bytes();
    std::copy(bytes.begin(), bytes.end(), out.network.begin());
  }
  const unsigned bits = v4 ? 32 : 128;
  const unsigned source = source_prefix_of(settings, v4, range_prefix);
  if (source > bits) {
    throw setup_error(
        fmt::format("{}: a source prefix of {} is longer than an {} address ({} bits)", setting,
                    source, v4 ? "IPv4" : "IPv6", bits));
  }
  if (source < range_prefix) {
    throw setup_error(fmt::format(
        "{}: a source prefix of {} is shorter than the range's /{}: each subnet would be wider "
        "than the range (give a source prefix of {} to {})",
        setting, source, range_prefix, range_prefix, bits));
  }
  out.family = v4 ? 1 : 2;
  out.source_prefix = source;
  out.address_size = (source + 7) / 8;
  out.count = std::uint64_t{1} << std::min(source - range_prefix, 63u);
  out.per_query = settings.mode == client_subnet_mode::per_query;
  out.seed = settings.seed;
  out.first = settings.first;
  return out;
}

edns_option client_subnet_option(const client_subnets& subnets) {
  // FAMILY, SOURCE PREFIX-LENGTH, SCOPE PREFIX-LENGTH (0 in queries: RFC 7871, section 6),
  // then ADDRESS.
  edns_option option{edns_option_code::client_subnet,
                     std::vector<std::uint8_t>(4 + std::size_t{subnets.address_size}, 0)};
  option.data[0] = static_cast<std::uint8_t>(subnets.family >> 8);
  option.data[1] = static_cast<std::uint8_t>(subnets.family & 0xff);
  option.data[2] = static_cast<std::uint8_t>(subnets.source_prefix);
  return option;
}

namespace {

// Where the client subnet option's ADDRESS is in `query`: after its question, in its OPT
// record (the queries' own, well-formed since the set-up wrote them); 0 without one.
std::uint16_t address_of(std::span<const std::uint8_t> query) {
  if (query.size() < dns_header_size) return 0;
  std::size_t pos = dns_header_size;
  for (unsigned i = read_u16(query, 4); i > 0; --i) {
    const auto end = skip_name(query, pos);
    if (!end) return 0;
    pos = *end + 4;
  }
  const unsigned before_additional = static_cast<unsigned>(read_u16(query, 6)) + read_u16(query, 8);
  const unsigned records = before_additional + read_u16(query, 10);
  for (unsigned i = 0; i < records; ++i) {
    const auto end = skip_name(query, pos);
    if (!end || query.size() - *end < 10) return 0;
    const std::size_t length = read_u16(query, *end + 8);
    const std::size_t data = *end + 10;
    if (query.size() - data < length) return 0;
    if (i >= before_additional && read_u16(query, *end) == rr_type::opt) {
      for (std::size_t at = data; at + 4 <= data + length;) {
        const std::size_t option_length = read_u16(query, at + 2);
        if (read_u16(query, at) == edns_option_code::client_subnet && option_length >= 4) {
          return static_cast<std::uint16_t>(at + 8);
        }
        at += 4 + option_length;
      }
      return 0;
    }
    pos = data + length;
  }
  return 0;
}

}  // namespace

std::vector<std::uint16_t> client_subnet_addresses(const query_set& queries) {
  std::vector<std::uint16_t> at;
  at.reserve(queries.size());
  for (std::size_t i = 0; i < queries.size(); ++i) at.push_back(address_of(queries[i]));
  return at;
}

// EDNS Client Subnet: where each query's address is, and what the result says of it.
void plan_client_subnets(run_plan& plan, run_result& result, const load_spec& spec,
                         client_subnets subnets, const query_set& queries) {
  if (!subnets.on()) return;
  subnets.address_at = client_subnet_addresses(queries);
  client_subnet_stats& stats = result.client_subnet;
  stats.range = spec.traffic.client_subnet.range;
  stats.source_prefix = subnets.source_prefix;
  stats.mode = client_subnet_mode_name(spec.traffic.client_subnet.mode);
  stats.range_subnets = subnets.count;
  stats.subnets = subnets.per_query ? subnets.count
                                    : std::min<std::uint64_t>(subnets.count, spec.traffic.clients);
  plan.client_subnet = std::move(subnets);
  plan.read_edns_options = true;
}

}  // namespace dnstransport::detail
