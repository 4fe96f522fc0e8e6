#pragma once
// Internal: the tls_backend.hpp interface over OpenSSL 3. What the backend's connection
// (openssl_connection.cpp) and its client and server contexts (openssl_context.cpp) share: owning
// pointers, error text, the saved session and the connection class the contexts create.

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "transport/tls/tls_backend.hpp"

namespace dnstransport::detail {

struct ssl_ctx_deleter {
  void operator()(SSL_CTX* ctx) const noexcept { SSL_CTX_free(ctx); }
};
struct ssl_deleter {
  void operator()(SSL* ssl) const noexcept { SSL_free(ssl); }
};
struct ssl_session_deleter {
  void operator()(SSL_SESSION* session) const noexcept { SSL_SESSION_free(session); }
};
using ssl_ctx_ptr = std::unique_ptr<SSL_CTX, ssl_ctx_deleter>;
using ssl_ptr = std::unique_ptr<SSL, ssl_deleter>;
using ssl_session_ptr = std::unique_ptr<SSL_SESSION, ssl_session_deleter>;

inline std::string openssl_error_text(unsigned long code) {
  if (code == 0) return "unknown OpenSSL error";
  char text[256];
  ERR_error_string_n(code, text, sizeof text);
  return text;
}

class openssl_ticket final : public tls_ticket {
 public:
  explicit openssl_ticket(ssl_session_ptr session) : session_(std::move(session)) {}
  SSL_SESSION* get() const noexcept { return session_.get(); }

 private:
  ssl_session_ptr session_;
};

// One session, client or server (the context sets the role on `ssl` before handing it over).
class openssl_connection final : public tls_connection {
 public:
  // `early_data`: a client may send early data when it resumes a ticket that allows it; a
  // server takes it (SSL_read_early_data) and hands it out from read() first.
  openssl_connection(ssl_ptr ssl, bool early_data);

  tls_io handshake() override;
  tls_io read(std::uint8_t* data, std::size_t size, std::size_t& transferred) override;
  tls_io write(const std::uint8_t* data, std::size_t size, std::size_t& transferred) override;
  tls_io shutdown() override;
  void count_syscalls(syscall_counter& syscalls) override;
  std::size_t early_data_room() const override;
  tls_io write_early(const std::uint8_t* data, std::size_t size, std::size_t& transferred) override;
  early_data_status early_data() const override;
  std::size_t pending() const override;
  bool resumed() const override;
  std::unique_ptr<tls_ticket> ticket() override;
  std::string version() const override;
  std::string alpn() const override;
  tls_failure failure() const override { return failure_; }
  std::string error_message() const override { return error_message_; }

  // Called by OpenSSL for each session it can resume, including TLS 1.3 tickets that arrive
  // during reads; keeping only the newest one is enough to reconnect.
  static int on_new_session(SSL* ssl, SSL_SESSION* session);

  std::uint64_t newest_arrival() const noexcept override { return reader_.newest_arrival; }

  // The state of the read BIO count_syscalls puts in (openssl_connection.cpp).
  struct stamped_reader {
    int fd = -1;
    syscall_counter* syscalls = nullptr;
    std::uint64_t newest_arrival = 0;  // the newest receive stamp a read saw
  };

 private:
  // Server: reads the client's early data until OpenSSL says there is no more, before the
  // rest of the handshake. done, or what to wait for.
  tls_io take_early_input();
  // Errors left by another session on this thread must not be blamed on this one.
  void begin_call();
  tls_io finish(int result);
  tls_failure classify(unsigned long code) const;
  tls_io fail(tls_failure kind, std::string message);
  // After a fatal error OpenSSL forbids further calls, SSL_shutdown included.
  tls_io end(tls_io result);

  stamped_reader reader_;  // before ssl_: its read BIO points here until SSL_free
  ssl_ptr ssl_;
  ssl_session_ptr latest_session_;
  bool early_enabled_;
  bool early_sent_ = false;
  bool early_finished_ = false;  // server: SSL_read_early_data said there is no more
  early_input early_input_;
  std::optional<tls_io> final_;
  tls_failure failure_ = tls_failure::none;
  std::string error_message_;
};

}  // namespace dnstransport::detail
