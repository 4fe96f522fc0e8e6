#include "server/listeners.hpp"

#include <unistd.h>

#include <filesystem>

#include <fmt/format.h>

#include <dnstransport/error.hpp>

#include "transport/tls/tls_backend.hpp"
#ifdef DNSTRANSPORT_HAVE_DOQ
#include "server/server_doq.hpp"
#include "server/server_doq_context.hpp"
#endif

namespace dnstransport::detail {

listener_contexts::listener_contexts() = default;
listener_contexts::~listener_contexts() = default;
listener_contexts::listener_contexts(listener_contexts&&) noexcept = default;
listener_contexts& listener_contexts::operator=(listener_contexts&&) noexcept = default;

listener_contexts make_listener_contexts(const server_options& options) {
  const auto& listen = options.listen;
  const bool tls = listen[transport_kind::tls].has_value();
  const bool doh = listen[transport_kind::doh].has_value();
  const bool doq = listen[transport_kind::doq].has_value();
#ifndef DNSTRANSPORT_HAVE_DOQ
  if (doq) {
    throw setup_error(
        "--doq: DNS over QUIC needs ngtcp2's GnuTLS helper, and this build has no GnuTLS "
        "(DNSTRANSPORT_WITH_GNUTLS=OFF)");
  }
#endif
  if (doq && options.doq_max_streams == 0) {
    throw setup_error("--doq-max-streams must be at least 1");
  }
  if (doh) {
    if (options.doh_path.empty() || options.doh_path.front() != '/' ||
        options.doh_path.find_first_of("?# ") != std::string::npos) {
      throw setup_error(
          fmt::format("--doh-path: \"{}\" is not an absolute path without query (e.g. /dns-query)",
                      options.doh_path));
    }
    if (options.doh_max_streams == 0) throw setup_error("--doh-max-streams must be at least 1");
  }
  listener_contexts contexts;
  if (!tls && !doh && !doq) return contexts;
  tls_server_options tls_options = options.tls_options;
  if (tls_options.certificate_file.empty() != tls_options.key_file.empty()) {
    throw setup_error("give both a TLS certificate and its key, or neither");
  }
  if (tls_options.certificate_file.empty()) {
    const std::filesystem::path directory =
        options.certificate_directory.empty()
            ? std::filesystem::temp_directory_path() / fmt::format("dnstransport-{}", getpid())
            : std::filesystem::path(options.certificate_directory);
    contexts.certificate = generate_self_signed_certificate(directory);
    tls_options.certificate_file = contexts.certificate.certificate_file;
    tls_options.key_file = contexts.certificate.key_file;
  } else {
    contexts.certificate = {tls_options.certificate_file, tls_options.key_file};
  }
  if (tls) contexts.tls = make_tls_server_context(tls_options);
#ifdef DNSTRANSPORT_HAVE_DOQ
  if (doq) contexts.doq = std::make_unique<doq_context>(tls_options, options.doq_early_data);
#endif
  if (doh) {
    tls_options.alpn = {"h2"};
    contexts.doh = make_tls_server_context(tls_options);
  }
  return contexts;
}

std::unique_ptr<thread_listener> make_listener(transport_kind transport, server_thread& thread,
                                               const listener_contexts& contexts) {
  switch (transport) {
    case transport_kind::udp:
      return make_udp_listener(thread);
    case transport_kind::tcp:
      return make_stream_listener(thread, transport, nullptr);
    case transport_kind::tls:
      return make_stream_listener(thread, transport, contexts.tls.get());
    case transport_kind::doh:
      return make_stream_listener(thread, transport, contexts.doh.get());
    case transport_kind::doq:
#ifdef DNSTRANSPORT_HAVE_DOQ
      // One socket per thread on the same port (SO_REUSEPORT): the kernel keeps each
      // client's 4-tuple, so each QUIC connection, on one thread.
      return std::make_unique<doq_listener>(thread, *contexts.doq);
#else
      break;  // make_listener_contexts refused it
#endif
  }
  throw setup_error(fmt::format("the responder has no {} listener", transport_name(transport)));
}

std::string describe_endpoint(const boost::asio::ip::address& address, std::uint16_t port) {
  const auto text = address.to_string();
  return address.is_v6() ? fmt::format("[{}]:{}", text, port) : fmt::format("{}:{}", text, port);
}

}  // namespace dnstransport::detail
