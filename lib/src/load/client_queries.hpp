#pragma once
// Internal: what dnstransport::client's two paths share: the check of a program's query, and
// the spec of the load of one client that carries fed queries (client.cpp).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <dnstransport/client.hpp>

namespace dnstransport::detail {

// Checks that `query` is a DNS query an answer can be checked against (12 to 65,535 octets,
// QR clear, exactly one question, whole), and takes its ID out (the engine sends its own):
// returns the ID. Throws setup_error naming it as `what` ("query 3 of the exchange").
std::uint16_t take_query_id(std::vector<std::uint8_t>& query, const std::string& what);

// The load of one client fed `cells` queries at a time (query_feed), with `settings`.
load_spec fed_spec(const client_settings& settings, std::shared_ptr<const query_set> queries,
                   std::uint32_t cells);

}  // namespace dnstransport::detail
