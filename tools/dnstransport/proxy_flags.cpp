// The client addresses a server sees beyond the sockets': --proxy-protocol,
// --proxy-source, --proxy-source-order, --seed and --proxy-tlv into
// load_spec::connections.proxy; --ecs and --ecs-mode into load_spec::traffic.client_subnet.
#include <charconv>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include <dnstransport/error.hpp>

#include "cli_common.hpp"

namespace dnstransport::cli {

namespace {

// --proxy-tlv TYPE=HEX.
std::pair<std::uint8_t, std::vector<std::uint8_t>> parse_proxy_tlv(const std::string& text) {
  const auto bad = [&text](const char* why) {
    return setup_error(
        fmt::format("--proxy-tlv: \"{}\" {} (TYPE=HEX: a type 0-255 or 0xNN, "
                    "then the value in hexadecimal, e.g. 0x04=00)",
                    text, why));
  };
  const auto equals = text.find('=');
  if (equals == std::string::npos) throw bad("has no =");
  const std::string type_text = text.substr(0, equals);
  unsigned long type = 0;
  try {
    std::size_t used = 0;
    type = std::stoul(type_text, &used, 0);
    if (used != type_text.size()) throw bad("has a type that is not a number");
  } catch (const std::logic_error&) {
    throw bad("has a type that is not a number");
  }
  if (type > 255) throw bad("has a type above 255");
  const std::string hex = text.substr(equals + 1);
  if (hex.size() % 2 != 0) throw bad("has an odd number of hexadecimal digits");
  std::vector<std::uint8_t> value;
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    const auto digit = [&](char c) -> unsigned {
      if (c >= '0' && c <= '9') return static_cast<unsigned>(c - '0');
      if (c >= 'a' && c <= 'f') return static_cast<unsigned>(c - 'a' + 10);
      if (c >= 'A' && c <= 'F') return static_cast<unsigned>(c - 'A' + 10);
      throw bad("has a value that is not hexadecimal");
    };
    value.push_back(static_cast<std::uint8_t>(digit(hex[i]) << 4 | digit(hex[i + 1])));
  }
  return {static_cast<std::uint8_t>(type), std::move(value)};
}

}  // namespace

void set_proxy(proxy_settings& proxy, const run_options& o) {
  const auto version = parse_proxy_protocol(o.proxy_protocol);
  if (!version) {
    throw setup_error(
        fmt::format("--proxy-protocol: \"{}\" is not none, v1 or v2", o.proxy_protocol));
  }
  proxy.version = *version;
  proxy.sources = o.proxy_sources;
  if (o.proxy_source_order == "random") {
    proxy.random = true;
  } else if (o.proxy_source_order != "in-order") {
    throw setup_error(fmt::format("--proxy-source-order: \"{}\" is not in-order or random",
                                  o.proxy_source_order));
  }
  proxy.seed = o.seed;
  for (const auto& tlv : o.proxy_tlvs) proxy.tlvs.push_back(parse_proxy_tlv(tlv));
  proxy.inside_tls = o.proxy_inside_tls;
}

void set_client_subnet(client_subnet_settings& subnet, const run_options& o) {
  const auto mode = parse_client_subnet_mode(o.ecs_mode);
  if (!mode) {
    throw setup_error(fmt::format("--ecs-mode: \"{}\" is not per-client or per-query", o.ecs_mode));
  }
  subnet.mode = *mode;
  subnet.seed = o.seed;
  if (o.ecs.empty()) return;
  // CIDR/SOURCE-PREFIX: a second slash gives the source prefix.
  subnet.range = o.ecs;
  const auto first = o.ecs.find('/');
  const auto last = o.ecs.rfind('/');
  if (first != std::string::npos && last != first) {
    subnet.range = o.ecs.substr(0, last);
    const std::string prefix = o.ecs.substr(last + 1);
    unsigned value = 129;
    const auto read = std::from_chars(prefix.data(), prefix.data() + prefix.size(), value);
    if (read.ec != std::errc{} || read.ptr != prefix.data() + prefix.size() || value > 128) {
      throw setup_error(
          fmt::format("--ecs: \"{}\" has a source prefix \"{}\" that is not a number from 0 to 128 "
                      "(CIDR/SOURCE-PREFIX, e.g. 10.0.0.0/8/24)",
                      o.ecs, prefix));
    }
    subnet.source_prefix = value;
  }
}

}  // namespace dnstransport::cli
