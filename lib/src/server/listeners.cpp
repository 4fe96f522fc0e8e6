#include "server/listeners.hpp"

#include <unistd.h>

#include <filesystem>

#include <fmt/format.h>

#include <dnstransport/error.hpp>

#include "registry/transports.hpp"

namespace dnstransport::detail {

namespace {

// The responder's certificate: the one given, or one generated for it.
certificate_files certificate_of(const server_options& options) {
  const tls_server_options& tls = options.tls_options;
  if (tls.certificate_file.empty() != tls.key_file.empty()) {
    throw setup_error("give both a TLS certificate and its key, or neither");
  }
  if (!tls.certificate_file.empty()) return {tls.certificate_file, tls.key_file};
  const std::filesystem::path directory =
      options.certificate_directory.empty()
          ? std::filesystem::temp_directory_path() / fmt::format("dnstransport-{}", getpid())
          : std::filesystem::path(options.certificate_directory);
  return generate_self_signed_certificate(directory);
}

}  // namespace

listener_contexts make_listener_contexts(const server_options& options) {
  for (std::size_t i = all_transports().size(); i < max_transports; ++i) {
    if (options.listen[static_cast<transport_kind>(i)]) {
      throw setup_error(fmt::format("server_options::listen: {} is not a registered transport", i));
    }
  }
  bool certificate_needed = false;
  for (const auto& traits : all_transports()) {
    if (!options.listen[traits.kind]) continue;
    if (!traits.compiled) {
      throw setup_error(
          fmt::format("the responder cannot listen for {}: it is not compiled into "
                      "this build",
                      traits.long_name));
    }
    const listener_factory& listener = registered_transport(traits.kind).listener;
    if (listener.make == nullptr) {
      throw setup_error(fmt::format(
          "the responder cannot listen for {}: its transport gives no server side", traits.name));
    }
    if (listener.check != nullptr) listener.check(options);
    certificate_needed = certificate_needed || listener.share != nullptr;
  }
  listener_contexts contexts;
  if (!certificate_needed) return contexts;
  contexts.certificate = certificate_of(options);
  tls_server_options tls = options.tls_options;
  tls.certificate_file = contexts.certificate.certificate_file;
  tls.key_file = contexts.certificate.key_file;
  for (const auto& traits : all_transports()) {
    const listener_factory& listener = registered_transport(traits.kind).listener;
    if (options.listen[traits.kind] && listener.share != nullptr) {
      contexts.shared[traits.kind] = listener.share(options, tls);
    }
  }
  return contexts;
}

std::unique_ptr<thread_listener> make_listener(transport_kind transport, server_thread& thread,
                                               const listener_contexts& contexts) {
  return registered_transport(transport).listener.make(thread, transport,
                                                       contexts.shared[transport].get());
}

}  // namespace dnstransport::detail
