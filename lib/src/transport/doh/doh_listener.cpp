#include "transport/doh/doh_listener.hpp"

#include <fmt/format.h>

#include <dnstransport/error.hpp>

#include "transport/doh/server_doh_session.hpp"
#include "transport/stream/stream_listener.hpp"

namespace dnstransport::detail {

void check_doh_listener(const server_options& options) {
  if (options.doh_path.empty() || options.doh_path.front() != '/' ||
      options.doh_path.find_first_of("?# ") != std::string::npos) {
    throw setup_error(
        fmt::format("{}: \"{}\" is not an absolute path without query (e.g. /dns-query)",
                    setting("server_options::doh_path"), options.doh_path));
  }
  if (options.doh_max_streams == 0) {
    throw setup_error(setting("server_options::doh_max_streams") + " must be at least 1");
  }
}

std::unique_ptr<listener_shared> share_doh_context(const server_options& options,
                                                   const tls_server_options& tls) {
  tls_server_options h2 = tls;
  h2.alpn = {"h2"};
  return share_tls_context(options, h2);
}

std::unique_ptr<thread_listener> make_doh_listener(server_thread& thread,
                                                   transport_kind /*transport*/,
                                                   const listener_shared* shared) {
  const auto& tls = static_cast<const tls_listener_context&>(*shared);
  return make_stream_listener(thread, transport_kind::doh, make_tls_acceptor(tls.context()),
                              make_server_doh_session);
}

}  // namespace dnstransport::detail
