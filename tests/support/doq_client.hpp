#pragma once
/// \file
/// Test support: a DNS-over-QUIC client of the tests' own (ngtcp2 and GnuTLS, independent of
/// the library), blocking and straight-line, to drive a DoQ server where kdig cannot: many
/// streams on one connection, streams whose length lies, resumption and 0-RTT, another
/// ALPN. Each stream carries what the test gives it, as it is; answers are collected per
/// stream with their FIN or the server's RESET_STREAM code.

#include <gnutls/gnutls.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dnstransport::hostile {

using doq_bytes = std::vector<std::uint8_t>;

/// What a client keeps from a connection to resume the next one with 0-RTT.
struct doq_resumption {
  doq_bytes ticket;                      ///< the TLS session (gnutls_session_get_data2)
  ngtcp2_transport_params parameters{};  ///< the server's transport parameters
};

struct doq_client_options {
  std::string alpn = "doq";
  const doq_resumption* resume = nullptr;  ///< resume this session
  bool early_data = false;                 ///< with resume: queries sent before the handshake
                                           ///< ends go in 0-RTT
};

/// One stream as the client saw it.
struct doq_stream_result {
  doq_bytes sent;
  doq_bytes received;
  bool fin = false;                    ///< the server ended the stream
  std::optional<std::uint64_t> reset;  ///< the server reset it, with this code
  bool closed = false;                 ///< ngtcp2 is done with it
};

class doq_client {
 public:
  /// Starts a connection to 127.0.0.1:`port`, trusting `ca_file` for the name "localhost".
  doq_client(std::uint16_t port, const std::filesystem::path& ca_file,
             doq_client_options options = {});
  ~doq_client();
  doq_client(const doq_client&) = delete;
  doq_client& operator=(const doq_client&) = delete;

  /// Runs the connection until `done()` or `timeout`; false on timeout or when the
  /// connection ended first.
  bool run_until(const std::function<bool()>& done,
                 std::chrono::milliseconds timeout = std::chrono::seconds(5));
  bool handshake(std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    return run_until([this] { return handshake_completed(); }, timeout);
  }
  bool handshake_completed() const { return handshake_completed_; }

  /// Opens the next bidirectional stream with `data` (and FIN); nothing while the server's
  /// stream limit allows none.
  std::optional<std::int64_t> send(doq_bytes data, bool fin = true);
  const doq_stream_result& stream(std::int64_t id) const { return streams_.at(id); }
  /// Streams the server ended or reset.
  std::size_t streams_done() const;

  bool early_data_accepted() const { return early_data_accepted_; }
  bool early_data_rejected() const { return early_data_rejected_; }
  /// The session and parameters to resume with, once the server's ticket has arrived.
  std::optional<doq_resumption> resumption() const;

  /// The connection ended (closed by the server, idle, or a fatal error).
  bool ended() const { return ended_; }
  /// The CONNECTION_CLOSE the server sent: its error code (transport or application).
  std::optional<std::uint64_t> close_code() const;
  /// Sends CONNECTION_CLOSE (application error `code`) and ends the connection here.
  void close(std::uint64_t code = 0);
  /// The connection ID the server gave for its packets (what a short header carries).
  doq_bytes server_id() const;
  /// The stateless reset token the server gave for server_id() (its transport parameters).
  doq_bytes stateless_reset_token() const;
  /// The datagrams sent before the first one came back (Initial, 0-RTT), to replay them.
  const std::vector<doq_bytes>& first_flight() const { return first_flight_; }

 private:
  struct pending {
    std::int64_t id;
    std::size_t offset = 0;
    bool fin;
  };

  static int on_stream_data(ngtcp2_conn*, std::uint32_t flags, std::int64_t id, std::uint64_t,
                            const std::uint8_t* data, std::size_t size, void* self, void*);
  static int on_stream_reset(ngtcp2_conn*, std::int64_t id, std::uint64_t, std::uint64_t code,
                             void* self, void*);
  static int on_stream_close(ngtcp2_conn*, std::uint32_t, std::int64_t id, std::uint64_t,
                             void* self, void*);
  static int on_handshake_completed(ngtcp2_conn*, void* self);
  static void random(std::uint8_t* dest, std::size_t size, const ngtcp2_rand_ctx*);
  static int on_new_connection_id(ngtcp2_conn*, ngtcp2_cid* cid, std::uint8_t* token,
                                  std::size_t size, void*);
  static int on_ticket(gnutls_session_t session, unsigned int, unsigned int, unsigned int,
                       const gnutls_datum_t*);
  static ngtcp2_conn* connection_of(ngtcp2_crypto_conn_ref* ref);

  void write();
  void read();
  void send_datagram(const std::uint8_t* data, std::size_t size);

  int fd_ = -1;
  sockaddr_storage local_{};
  socklen_t local_size_ = 0;
  sockaddr_storage remote_{};
  socklen_t remote_size_ = 0;
  ngtcp2_path path_{};
  gnutls_certificate_credentials_t credentials_ = nullptr;
  gnutls_session_t session_ = nullptr;
  ngtcp2_conn* conn_ = nullptr;
  ngtcp2_crypto_conn_ref ref_{};
  doq_client_options options_;
  std::map<std::int64_t, doq_stream_result> streams_;
  std::vector<pending> queue_;    // streams with data to hand to ngtcp2
  std::vector<pending> blocked_;  // ... that wait for the server's flow control
  bool handshake_completed_ = false;
  bool early_data_accepted_ = false;
  bool early_data_rejected_ = false;
  bool ended_ = false;
  doq_bytes ticket_;
  std::vector<doq_bytes> first_flight_;
  bool received_ = false;
};

}  // namespace dnstransport::hostile
