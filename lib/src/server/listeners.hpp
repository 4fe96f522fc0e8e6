#pragma once
// Internal: the responder's listeners, one per transport and thread, made from each
// transport's registered listener_factory (registry/transports.cpp; the listeners themselves are
// in transport/<name>/). What every thread's listeners of a responder share (the TLS
// contexts, made once from one certificate) is a listener_contexts.

#include <memory>

#include <dnstransport/server.hpp>

#include "responder/listener.hpp"

namespace dnstransport::detail {

struct listener_contexts {
  certificate_files certificate;  // in use by the listeners with TLS; empty without
  per_transport<std::unique_ptr<listener_shared>> shared;  // what each transport's share made
};

// Checks the settings of the listeners `options` asks for and makes what they share: the
// certificate (given, or generated into options.certificate_directory) and the TLS
// contexts. Throws setup_error.
listener_contexts make_listener_contexts(const server_options& options);

// One thread's listener for `transport`, to be opened and handed to the thread.
std::unique_ptr<thread_listener> make_listener(transport_kind transport, server_thread& thread,
                                               const listener_contexts& contexts);

}  // namespace dnstransport::detail
