#pragma once
// Internal: the one place transports are registered. Each entry says what the transport is
// (its public traits) and how a run builds it from the load's settings; the transport itself
// (transport/<name>/) sees only its own settings struct, never load_spec.

#include <memory>
#include <string_view>

#include <dnstransport/load.hpp>

#include "engine/engine.hpp"

namespace dnstransport::detail {

struct transport_entry {
  transport_traits traits;
  std::string_view alias;  // another name parse_transport accepts ("dot"); may be empty
  // Builds the transport for one run (TLS contexts, connectors); may throw setup_error.
  std::unique_ptr<client_transport> (*make)(const load_spec& spec);
  // Throws setup_error for settings of its own that do not hold (null: it has none).
  void (*check)(const load_spec& spec);
};

const transport_entry& registered_transport(transport_kind transport) noexcept;

}  // namespace dnstransport::detail
