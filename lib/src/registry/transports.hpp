#pragma once
// Internal: the one place transports are registered. Each entry says what the transport is
// (its public traits), how a run builds its client from the load's settings, and how the
// responder builds its listener; the transport itself (transport/<name>/, both halves) sees
// only its own settings, never load_spec.

#include <memory>
#include <string_view>

#include <dnstransport/load.hpp>
#include <dnstransport/user_transport.hpp>

#include "engine/engine.hpp"
#include "responder/listener.hpp"

namespace dnstransport::detail {

struct transport_entry {
  transport_traits traits;
  std::string_view alias;  // another name parse_transport accepts ("dot"); may be empty
  // Builds the transport for one run (TLS contexts, connectors); may throw setup_error.
  std::unique_ptr<client_transport> (*make)(const load_spec& spec);
  // Throws setup_error for settings of its own that do not hold (null: it has none).
  void (*check)(const load_spec& spec);
  // The responder's half (all null when the transport is not compiled in).
  listener_factory listener;
  // A program's own transport (register_transport): what it registered, kept for the
  // program's life, which the traits' names point into; null for a built-in one.
  const user_transport* user = nullptr;
};

// The entry of `transport`; of a kind not registered, one with no client and no listener.
const transport_entry& registered_transport(transport_kind transport) noexcept;

}  // namespace dnstransport::detail
