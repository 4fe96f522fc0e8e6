#pragma once
// The source addresses of a load's clients, from connection_settings::sources: each entry an
// address or a CIDR range (127.0.0.0/16, fd00::/112), read in order.

#include <cstdint>
#include <string>
#include <vector>

#include <boost/asio/ip/address.hpp>

#include <dnstransport/load.hpp>

namespace dnstransport::detail {

/// How many addresses a load reads from its sources: one per client, unless they are taken
/// in turn (source_mode::round_robin), where connections spread over up to 65,536 of them,
/// or connection_settings::distinct_sources when that is set.
std::uint64_t sources_wanted(const load_spec& spec) noexcept;

/// connection_settings::distinct_sources: throws setup_error naming it when it is over the
/// most, when the addresses it takes from (the PROXY headers' sources, else `sources`) hold
/// fewer, when there are neither, and over UDP and DoQ without headers when it is more than
/// the clients (each keeps one socket).
void validate_distinct_sources(const load_spec& spec);

struct source_list {
  /// The first `wanted` addresses of the entries, in order (fewer when they hold fewer).
  std::vector<boost::asio::ip::address> addresses;
  /// How many the entries hold in all (at most 2^63): a range's hosts, without its network
  /// address (and an IPv4 range's broadcast address) unless it is a /31, /32, /127 or /128.
  std::uint64_t available = 0;
};

/// Reads the entries and takes the first `wanted` addresses from them. Throws setup_error
/// naming `setting` for an entry that is neither an address nor a range, or one whose
/// family is not the server's.
source_list expand_sources(const std::vector<std::string>& entries, std::uint64_t wanted,
                           bool server_is_v4, const std::string& setting);

/// Throws setup_error naming `setting` when an address of `sources` is not this machine's
/// (the kernel refuses to bind it: EADDRNOTAVAIL), before anything is sent. Probes up to
/// 4,096 of them, evenly spread, and the last.
void check_sources_local(const std::vector<boost::asio::ip::address>& sources,
                         const std::string& setting);

/// The client addresses PROXY headers carry (proxy_settings::sources): the first `clients`
/// of the entries in order (fewer when they hold fewer: client i takes the (i mod n)-th), or
/// with `random` one drawn for each client. Throws setup_error naming `setting` for an
/// entry that is neither an address nor a range.
std::vector<boost::asio::ip::address> proxy_addresses(const proxy_settings& proxy,
                                                      std::uint64_t clients,
                                                      const std::string& setting);

/// The addresses `spec` reads, as text, for a group's members to share out (load_group: each
/// takes every size-th, from its rank on); the entries as they are when they do not read (the
/// run's set-up refuses them, naming the setting).
std::vector<std::string> expanded_source_texts(const load_spec& spec);

}  // namespace dnstransport::detail
