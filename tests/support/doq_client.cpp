#include "doq_client.hpp"

#include <arpa/inet.h>
#include <gnutls/crypto.h>
#include <netinet/in.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <stdexcept>
#include <string>

namespace dnstransport::hostile {

namespace {

std::uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

void check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("doq_client: ") + what);
}

}  // namespace

doq_client::doq_client(std::uint16_t port, const std::filesystem::path& ca_file,
                       doq_client_options options)
    : options_(std::move(options)) {
  fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
  check(fd_ >= 0, "socket");
  sockaddr_in server{};
  server.sin_family = AF_INET;
  server.sin_port = htons(port);
  server.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  check(::connect(fd_, reinterpret_cast<sockaddr*>(&server), sizeof server) == 0, "connect");
  std::memcpy(&remote_, &server, sizeof server);
  remote_size_ = sizeof server;
  local_size_ = sizeof local_;
  check(::getsockname(fd_, reinterpret_cast<sockaddr*>(&local_), &local_size_) == 0, "getsockname");
  path_.local = {reinterpret_cast<sockaddr*>(&local_), local_size_};
  path_.remote = {reinterpret_cast<sockaddr*>(&remote_), remote_size_};

  check(gnutls_certificate_allocate_credentials(&credentials_) == 0, "credentials");
  check(gnutls_certificate_set_x509_trust_file(credentials_, ca_file.c_str(), GNUTLS_X509_FMT_PEM) >
            0,
        "CA file");
  check(gnutls_init(&session_,
                    GNUTLS_CLIENT | GNUTLS_ENABLE_EARLY_DATA | GNUTLS_NO_END_OF_EARLY_DATA) == 0,
        "gnutls_init");
  check(gnutls_priority_set_direct(
            session_, "NORMAL:-VERS-ALL:+VERS-TLS1.3:%DISABLE_TLS13_COMPAT_MODE", nullptr) == 0,
        "priority");
  check(ngtcp2_crypto_gnutls_configure_client_session(session_) == 0, "QUIC session");
  check(gnutls_credentials_set(session_, GNUTLS_CRD_CERTIFICATE, credentials_) == 0,
        "credentials_set");
  gnutls_session_set_verify_cert(session_, "localhost", 0);
  check(gnutls_server_name_set(session_, GNUTLS_NAME_DNS, "localhost", 9) == 0, "SNI");
  gnutls_datum_t alpn{reinterpret_cast<unsigned char*>(options_.alpn.data()),
                      static_cast<unsigned int>(options_.alpn.size())};
  check(gnutls_alpn_set_protocols(session_, &alpn, 1, 0) == 0, "ALPN");
  gnutls_handshake_set_hook_function(session_, GNUTLS_HANDSHAKE_NEW_SESSION_TICKET,
                                     GNUTLS_HOOK_POST, &doq_client::on_ticket);
  if (options_.resume != nullptr) {
    check(gnutls_session_set_data(session_, options_.resume->ticket.data(),
                                  options_.resume->ticket.size()) == 0,
          "session data");
  }
  ref_ = {&doq_client::connection_of, this};
  gnutls_session_set_ptr(session_, &ref_);

  ngtcp2_callbacks callbacks{};
  callbacks.client_initial = ngtcp2_crypto_client_initial_cb;
  callbacks.recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb;
  callbacks.handshake_completed = &doq_client::on_handshake_completed;
  callbacks.encrypt = ngtcp2_crypto_encrypt_cb;
  callbacks.decrypt = ngtcp2_crypto_decrypt_cb;
  callbacks.hp_mask = ngtcp2_crypto_hp_mask_cb;
  callbacks.recv_stream_data = &doq_client::on_stream_data;
  callbacks.stream_close = &doq_client::on_stream_close;
  callbacks.recv_retry = ngtcp2_crypto_recv_retry_cb;
  callbacks.rand = &doq_client::random;
  callbacks.get_new_connection_id = &doq_client::on_new_connection_id;
  callbacks.update_key = ngtcp2_crypto_update_key_cb;
  callbacks.stream_reset = &doq_client::on_stream_reset;
  callbacks.delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb;
  callbacks.delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb;
  callbacks.get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb;
  callbacks.version_negotiation = ngtcp2_crypto_version_negotiation_cb;

  ngtcp2_cid dcid{};
  ngtcp2_cid scid{};
  dcid.datalen = 18;
  scid.datalen = 16;
  random(dcid.data, dcid.datalen, nullptr);
  random(scid.data, scid.datalen, nullptr);
  ngtcp2_settings settings;
  ngtcp2_settings_default(&settings);
  settings.initial_ts = now_ns();
  ngtcp2_transport_params params;
  ngtcp2_transport_params_default(&params);
  params.initial_max_streams_bidi = 0;
  params.initial_max_streams_uni = 0;
  params.initial_max_stream_data_bidi_local = 256 * 1024;
  params.initial_max_data = 1024 * 1024;
  params.max_idle_timeout = 30 * NGTCP2_SECONDS;
  check(ngtcp2_conn_client_new(&conn_, &dcid, &scid, &path_, NGTCP2_PROTO_VER_V1, &callbacks,
                               &settings, &params, nullptr, this) == 0,
        "ngtcp2_conn_client_new");
  ngtcp2_conn_set_tls_native_handle(conn_, session_);
  if (options_.resume != nullptr && options_.early_data) {
    ngtcp2_conn_set_early_remote_transport_params(conn_, &options_.resume->parameters);
  }
}

doq_client::~doq_client() {
  if (conn_ != nullptr) ngtcp2_conn_del(conn_);
  if (session_ != nullptr) gnutls_deinit(session_);
  if (credentials_ != nullptr) gnutls_certificate_free_credentials(credentials_);
  if (fd_ >= 0) ::close(fd_);
}

ngtcp2_conn* doq_client::connection_of(ngtcp2_crypto_conn_ref* ref) {
  return static_cast<doq_client*>(ref->user_data)->conn_;
}

void doq_client::random(std::uint8_t* dest, std::size_t size, const ngtcp2_rand_ctx*) {
  gnutls_rnd(GNUTLS_RND_NONCE, dest, size);
}

int doq_client::on_new_connection_id(ngtcp2_conn*, ngtcp2_cid* cid, std::uint8_t* token,
                                     std::size_t size, void*) {
  cid->datalen = size;
  random(cid->data, size, nullptr);
  random(token, NGTCP2_STATELESS_RESET_TOKENLEN, nullptr);
  return 0;
}

int doq_client::on_handshake_completed(ngtcp2_conn* conn, void* self) {
  auto& c = *static_cast<doq_client*>(self);
  c.handshake_completed_ = true;
  if (c.options_.resume != nullptr && c.options_.early_data) {
    c.early_data_accepted_ = (gnutls_session_get_flags(c.session_) & GNUTLS_SFLAGS_EARLY_DATA) != 0;
    if (!c.early_data_accepted_) {
      // The streams sent in 0-RTT are gone; the test sends its queries again.
      c.early_data_rejected_ = true;
      c.queue_.clear();
      c.blocked_.clear();
      c.streams_.clear();
      if (ngtcp2_conn_early_data_rejected(conn) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
    }
  }
  return 0;
}

int doq_client::on_ticket(gnutls_session_t session, unsigned int, unsigned int, unsigned int,
                          const gnutls_datum_t*) {
  auto* ref = static_cast<ngtcp2_crypto_conn_ref*>(gnutls_session_get_ptr(session));
  auto& c = *static_cast<doq_client*>(ref->user_data);
  gnutls_datum_t data{nullptr, 0};
  if (gnutls_session_get_data2(session, &data) == 0) {
    c.ticket_.assign(data.data, data.data + data.size);
    gnutls_free(data.data);
  }
  return 0;
}

int doq_client::on_stream_data(ngtcp2_conn* conn, std::uint32_t flags, std::int64_t id,
                               std::uint64_t, const std::uint8_t* data, std::size_t size,
                               void* self, void*) {
  auto& s = static_cast<doq_client*>(self)->streams_[id];
  s.received.insert(s.received.end(), data, data + size);
  if ((flags & NGTCP2_STREAM_DATA_FLAG_FIN) != 0) s.fin = true;
  ngtcp2_conn_extend_max_stream_offset(conn, id, size);
  ngtcp2_conn_extend_max_offset(conn, size);
  return 0;
}

int doq_client::on_stream_reset(ngtcp2_conn*, std::int64_t id, std::uint64_t, std::uint64_t code,
                                void* self, void*) {
  static_cast<doq_client*>(self)->streams_[id].reset = code;
  return 0;
}

int doq_client::on_stream_close(ngtcp2_conn*, std::uint32_t, std::int64_t id, std::uint64_t,
                                void* self, void*) {
  auto& c = *static_cast<doq_client*>(self);
  if (const auto found = c.streams_.find(id); found != c.streams_.end()) {
    found->second.closed = true;
  }
  std::erase_if(c.queue_, [id](const pending& p) { return p.id == id; });
  std::erase_if(c.blocked_, [id](const pending& p) { return p.id == id; });
  return 0;
}

std::optional<std::int64_t> doq_client::send(doq_bytes data, bool fin) {
  std::int64_t id = -1;
  if (ngtcp2_conn_open_bidi_stream(conn_, &id, nullptr) != 0) return std::nullopt;
  streams_[id].sent = std::move(data);
  queue_.push_back({id, 0, fin});
  write();
  return id;
}

std::size_t doq_client::streams_done() const {
  return static_cast<std::size_t>(
      std::count_if(streams_.begin(), streams_.end(),
                    [](const auto& s) { return s.second.fin || s.second.reset.has_value(); }));
}

std::optional<doq_resumption> doq_client::resumption() const {
  if (ticket_.empty() || !handshake_completed_) return std::nullopt;
  doq_resumption r;
  r.ticket = ticket_;
  r.parameters = *ngtcp2_conn_get_remote_transport_params(conn_);
  return r;
}

std::optional<std::uint64_t> doq_client::close_code() const {
  ngtcp2_connection_close_error error;
  ngtcp2_connection_close_error_default(&error);
  ngtcp2_conn_get_connection_close_error(conn_, &error);
  if (!ngtcp2_conn_is_in_draining_period(conn_)) return std::nullopt;
  return error.error_code;
}

doq_bytes doq_client::server_id() const {
  const ngtcp2_cid* id = ngtcp2_conn_get_dcid(conn_);
  return doq_bytes(id->data, id->data + id->datalen);
}

doq_bytes doq_client::stateless_reset_token() const {
  const ngtcp2_transport_params* params = ngtcp2_conn_get_remote_transport_params(conn_);
  if (params == nullptr || params->stateless_reset_token_present == 0) return {};
  return doq_bytes(std::begin(params->stateless_reset_token),
                   std::end(params->stateless_reset_token));
}

void doq_client::send_datagram(const std::uint8_t* data, std::size_t size) {
  if (!received_) first_flight_.emplace_back(data, data + size);
  (void)::send(fd_, data, size, 0);
}

void doq_client::write() {
  if (ended_) return;
  queue_.insert(queue_.end(), blocked_.begin(), blocked_.end());
  blocked_.clear();
  std::array<std::uint8_t, 1452> packet;
  for (int round = 0; round < 1000; ++round) {
    ngtcp2_vec data{};
    std::int64_t id = -1;
    std::uint32_t flags = NGTCP2_WRITE_STREAM_FLAG_NONE;
    pending* p = queue_.empty() ? nullptr : &queue_.front();
    if (p != nullptr) {
      doq_bytes& sent = streams_[p->id].sent;
      id = p->id;
      data = {sent.data() + p->offset, sent.size() - p->offset};
      flags = NGTCP2_WRITE_STREAM_FLAG_MORE | (p->fin ? NGTCP2_WRITE_STREAM_FLAG_FIN : 0);
    }
    ngtcp2_ssize accepted = -1;
    ngtcp2_pkt_info info{};
    const ngtcp2_ssize written = ngtcp2_conn_writev_stream(
        conn_, nullptr, &info, packet.data(), packet.size(), &accepted, flags, id,
        p != nullptr ? &data : nullptr, p != nullptr ? 1 : 0, now_ns());
    if (p != nullptr) {
      if (accepted >= 0) p->offset += static_cast<std::size_t>(accepted);
      if (written == NGTCP2_ERR_STREAM_DATA_BLOCKED) {
        // Until the server's window grows: tried again on the next write.
        blocked_.push_back(*p);
        queue_.erase(queue_.begin());
        continue;
      }
      if (written == NGTCP2_ERR_STREAM_SHUT_WR || written == NGTCP2_ERR_STREAM_NOT_FOUND ||
          (accepted >= 0 && p->offset == streams_[p->id].sent.size())) {
        queue_.erase(queue_.begin());
      }
    }
    if (written == NGTCP2_ERR_WRITE_MORE || written == NGTCP2_ERR_STREAM_SHUT_WR ||
        written == NGTCP2_ERR_STREAM_NOT_FOUND) {
      continue;
    }
    if (written < 0) {
      ended_ = true;
      return;
    }
    if (written == 0) break;
    send_datagram(packet.data(), static_cast<std::size_t>(written));
  }
  ngtcp2_conn_update_pkt_tx_time(conn_, now_ns());
}

void doq_client::read() {
  std::array<std::uint8_t, 65536> buffer;
  for (;;) {
    const ssize_t n = ::recv(fd_, buffer.data(), buffer.size(), 0);
    if (n <= 0) return;
    received_ = true;
    ngtcp2_pkt_info info{};
    const int result = ngtcp2_conn_read_pkt(conn_, &path_, &info, buffer.data(),
                                            static_cast<std::size_t>(n), now_ns());
    if (result != 0) {
      ended_ = true;
      return;
    }
  }
}

bool doq_client::run_until(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  const std::uint64_t deadline =
      now_ns() + static_cast<std::uint64_t>(
                     std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count());
  for (;;) {
    write();
    if (done()) return true;
    if (ended_) return false;
    const std::uint64_t now = now_ns();
    if (now >= deadline) return false;
    const std::uint64_t expiry = ngtcp2_conn_get_expiry(conn_);
    const std::uint64_t until = std::min(deadline, expiry);
    const int wait_ms = until > now ? static_cast<int>((until - now + 999'999) / 1'000'000) : 0;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, wait_ms) > 0) read();
    if (!ended_ && ngtcp2_conn_get_expiry(conn_) <= now_ns()) {
      if (ngtcp2_conn_handle_expiry(conn_, now_ns()) != 0) ended_ = true;
    }
  }
}

void doq_client::close(std::uint64_t code) {
  if (ended_) return;
  std::array<std::uint8_t, 1452> packet;
  ngtcp2_connection_close_error error;
  ngtcp2_connection_close_error_default(&error);
  ngtcp2_connection_close_error_set_application_error(&error, code, nullptr, 0);
  ngtcp2_pkt_info info{};
  const ngtcp2_ssize written = ngtcp2_conn_write_connection_close(
      conn_, nullptr, &info, packet.data(), packet.size(), &error, now_ns());
  if (written > 0) send_datagram(packet.data(), static_cast<std::size_t>(written));
  ended_ = true;
}

}  // namespace dnstransport::hostile
