#include "transport/doq/doq_listener.hpp"

#include <dnstransport/error.hpp>

#include "transport/doq/server_doq.hpp"
#include "transport/doq/server_doq_context.hpp"

namespace dnstransport::detail {

void check_doq_listener(const server_options& options) {
  if (options.doq_max_streams == 0) {
    throw setup_error(setting("server_options::doq_max_streams") + " must be at least 1");
  }
}

std::unique_ptr<listener_shared> share_doq_context(const server_options& options,
                                                   const tls_server_options& tls) {
  return std::make_unique<doq_context>(tls, options.doq_early_data);
}

// One socket per thread on the same port (SO_REUSEPORT): the kernel keeps each client's
// 4-tuple, so each QUIC connection, on one thread.
std::unique_ptr<thread_listener> make_doq_listener(server_thread& thread,
                                                   transport_kind /*transport*/,
                                                   const listener_shared* shared) {
  return std::make_unique<doq_listener>(thread, static_cast<const doq_context&>(*shared));
}

}  // namespace dnstransport::detail
