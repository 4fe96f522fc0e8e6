#pragma once
/// \file
/// Test support: the TLS session of a scripted stream (scripted_socket, scripted_accepted),
/// whose handshake is done before it starts: it answers what a client or the responder asks
/// of a session (ALPN, resumption, early data) and never reads or writes (the scripted
/// stream does).

#include <memory>
#include <string>
#include <utility>

#include "transport/tls/tls_backend.hpp"

namespace dnstransport::scripted {

class scripted_tls_session final : public detail::tls_connection {
 public:
  /// `resumed_with_early_data`: a handshake that resumed a ticket and took early data;
  /// otherwise a full one, without either.
  explicit scripted_tls_session(std::string alpn, bool resumed_with_early_data = false)
      : alpn_(std::move(alpn)), resumed_(resumed_with_early_data) {}

  detail::tls_io handshake() override { return detail::tls_io::done; }
  detail::tls_io read(std::uint8_t*, std::size_t, std::size_t& transferred) override {
    transferred = 0;
    return detail::tls_io::error;  // the scripted stream reads, never its session
  }
  detail::tls_io write(const std::uint8_t*, std::size_t, std::size_t& transferred) override {
    transferred = 0;
    return detail::tls_io::error;
  }
  detail::tls_io shutdown() override { return detail::tls_io::done; }
  void count_syscalls(detail::syscall_counter&) override {}
  std::size_t pending() const override { return 0; }
  bool resumed() const override { return resumed_; }
  detail::early_data_status early_data() const override {
    return resumed_ ? detail::early_data_status::accepted : detail::early_data_status::not_sent;
  }
  std::unique_ptr<detail::tls_ticket> ticket() override { return nullptr; }
  std::string version() const override { return "TLSv1.3"; }
  std::string alpn() const override { return alpn_; }
  detail::tls_failure failure() const override { return detail::tls_failure::none; }
  std::string error_message() const override { return {}; }

 private:
  std::string alpn_;
  bool resumed_;
};

}  // namespace dnstransport::scripted
