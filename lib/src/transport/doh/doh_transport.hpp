#pragma once
// Internal: DNS over HTTPS (RFC 8484) over HTTP/2 as a transport of the engine. A DoH client
// is a stream client (the same TCP connect, TLS handshake with ALPN "h2", queries per
// connection, resumption and Fast Open as DoT) that speaks HTTP/2 through nghttp2 on the
// established stream: one request stream per query, up to --outstanding streams in flight
// per connection and never more than the server's SETTINGS_MAX_CONCURRENT_STREAMS.

#include <nghttp2/nghttp2.h>

#include <memory>
#include <string>

#include "engine/engine.hpp"
#include "transport/stream/stream_transport.hpp"

namespace dnstransport::detail {

// What the DoH transport needs beyond the stream's settings.
struct doh_settings {
  std::string path = "/dns-query";  // the URI template's path (RFC 8484 §3)
  bool use_get = false;             // GET with ?dns=<base64url>; otherwise POST
  std::string authority;            // :authority, the server's name or [address]:port
};

class doh_transport final : public client_transport {
 public:
  doh_transport(const stream_settings& stream, doh_settings doh,
                std::unique_ptr<stream_connector> connector,
                stream_socket_factory make_socket = make_tcp_socket);
  ~doh_transport() override;
  doh_transport(const doh_transport&) = delete;
  doh_transport& operator=(const doh_transport&) = delete;

  std::unique_ptr<client_base> make_client(worker& owner, unsigned index,
                                           std::uint64_t quota) const override;

  const stream_transport& stream() const noexcept { return stream_; }
  std::pair<std::uint64_t, std::uint64_t> certificate_checks() const override {
    return stream_.certificate_checks();
  }
  const doh_settings& settings() const noexcept { return doh_; }
  // nghttp2's callbacks, set once for every session of the run.
  const nghttp2_session_callbacks* callbacks() const noexcept { return callbacks_; }
  // The sessions' options, set once for the run.
  const nghttp2_option* options() const noexcept { return options_; }

 private:
  stream_transport stream_;
  doh_settings doh_;
  nghttp2_session_callbacks* callbacks_ = nullptr;
  nghttp2_option* options_ = nullptr;
};

}  // namespace dnstransport::detail
