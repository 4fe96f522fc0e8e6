// client_base and EDNS: the answers' options counted (edns-tcp-keepalive, padding, client
// subnet), and EDNS Client Subnet (run_plan::client_subnet, engine/client_subnets.hpp): the
// subnet a query carries written into the copy that is sent, and an answer's echo checked
// against it.
#include <algorithm>
#include <array>
#include <cstring>

#include "engine/engine.hpp"

namespace dnstransport::detail {

void client_base::write_client_subnet(const slot_table::slot& s,
                                      std::span<std::uint8_t> query) const noexcept {
  const client_subnets& subnets = plan().client_subnet;
  const std::uint16_t at = subnets.address_at[s.query_index];
  if (at == 0 || query.size() < at + std::size_t{subnets.address_size}) return;
  if (!subnets.per_query) {
    std::memcpy(query.data() + at, own_subnet_.data(), subnets.address_size);
    return;
  }
  subnets.write_address(subnets.subnet_of(index_, s.sequence), query.data() + at);
}

bool client_base::echoes_client_subnet(const slot_table::slot& s,
                                       std::span<const std::uint8_t> message,
                                       const response_summary& summary) const noexcept {
  const client_subnets& subnets = plan().client_subnet;
  if (summary.client_subnet_family != subnets.family ||
      summary.client_subnet_source_prefix != subnets.source_prefix ||
      summary.client_subnet_address_size != subnets.address_size) {
    return false;
  }
  std::array<std::uint8_t, 16> drawn{};
  const std::uint8_t* sent = own_subnet_.data();
  if (subnets.per_query) {
    subnets.write_address(subnets.subnet_of(index_, s.sequence), drawn.data());
    sent = drawn.data();
  }
  return std::equal(sent, sent + subnets.address_size,
                    message.begin() + summary.client_subnet_address_at);
}

void client_base::count_keepalive(std::uint16_t timeout) noexcept {
  query_counters& r = counts();
  ++r.keepalive_answers;
  r.keepalive_min = std::min<std::uint32_t>(r.keepalive_min, timeout);
  r.keepalive_max = std::max<std::uint32_t>(r.keepalive_max, timeout);
}

void client_base::count_padded(std::size_t size) noexcept {
  query_counters& r = counts();
  ++r.padded_answers;
  try {
    ++r.padded_sizes[static_cast<std::uint32_t>(size)];
  } catch (...) {  // out of memory: the total still counts it
  }
}

void client_base::count_client_subnet(const response_summary& summary) noexcept {
  query_counters& r = counts();
  ++r.client_subnet_echoed;
  ++r.client_subnet_scopes[std::min<unsigned>(summary.client_subnet_scope_prefix, 128)];
}

}  // namespace dnstransport::detail
