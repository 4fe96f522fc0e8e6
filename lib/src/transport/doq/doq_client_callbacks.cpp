// ngtcp2's and GnuTLS's callbacks into the DoQ client (the connection's: handshake, Retry,
// stream credit, stateless reset, new IDs, tickets; each stream's: data, reset, close) and
// the table that names them. The class is in doq_client.hpp.

#include <gnutls/crypto.h>

#include <algorithm>

#include "transport/doq/doq_client.hpp"
#include "transport/doq/doq_codes.hpp"

namespace dnstransport::detail {

// The connection's callbacks.

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

int doq_client::on_handshake_completed(ngtcp2_conn*, void* user_data) {
  return static_cast<doq_client*>(user_data)->handshake_completed();
}

int doq_client::on_recv_retry(ngtcp2_conn* conn, const ngtcp2_pkt_hd* header, void* user_data) {
  auto& self = *static_cast<doq_client*>(user_data);
  if (self.life_.tally.counted) ++self.quic().retries;
  return ngtcp2_crypto_recv_retry_cb(conn, header, user_data);
}

int doq_client::on_streams_raised(ngtcp2_conn*, std::uint64_t max_streams, void* user_data) {
  auto& self = *static_cast<doq_client*>(user_data);
  // The first call carries the server's initial limit; a later, higher one is MAX_STREAMS.
  if (self.streams_limit_ != 0 && max_streams > self.streams_limit_) self.streams_raised_ = true;
  self.streams_limit_ = std::max(self.streams_limit_, max_streams);
  return 0;
}

int doq_client::on_stateless_reset(ngtcp2_conn*, const ngtcp2_pkt_stateless_reset*,
                                   void* user_data) {
  auto& self = *static_cast<doq_client*>(user_data);
  self.stateless_reset_ = true;
  if (self.life_.tally.counted) ++self.quic().stateless_resets;
  return 0;
}

int doq_client::on_ticket(gnutls_session_t session, unsigned int, unsigned int, unsigned int,
                          const gnutls_datum_t*) {
  auto* ref = static_cast<ngtcp2_crypto_conn_ref*>(gnutls_session_get_ptr(session));
  auto& self = *static_cast<doq_client*>(ref->user_data);
  if (self.transport_.settings().resume) self.take_ticket();
  return 0;
}

// Each stream's callbacks.

int doq_client::on_stream_data(ngtcp2_conn* conn, std::uint32_t flags, std::int64_t stream_id,
                               std::uint64_t, const std::uint8_t* data, std::size_t size,
                               void* user_data, void* stream_user_data) {
  auto& self = *static_cast<doq_client*>(user_data);
  ngtcp2_conn_extend_max_stream_offset(conn, stream_id, size);
  ngtcp2_conn_extend_max_offset(conn, size);
  if (stream_user_data == nullptr) return 0;
  self.receive(*static_cast<request*>(stream_user_data), (flags & NGTCP2_STREAM_DATA_FLAG_FIN) != 0,
               {data, size});
  return 0;
}

int doq_client::on_stream_reset(ngtcp2_conn*, std::int64_t, std::uint64_t,
                                std::uint64_t app_error_code, void* user_data,
                                void* stream_user_data) {
  auto& self = *static_cast<doq_client*>(user_data);
  auto* r = static_cast<request*>(stream_user_data);
  if (r == nullptr || r->done) return 0;
  r->done = true;
  self.fail_exchange(r->id, self.now_, "stream_reset_" + doq_error_name(app_error_code),
                     exchange_layer::quic);
  return 0;
}

int doq_client::on_stream_close(ngtcp2_conn* conn, std::uint32_t, std::int64_t stream_id,
                                std::uint64_t app_error_code, void* user_data,
                                void* stream_user_data) {
  auto& self = *static_cast<doq_client*>(user_data);
  auto* r = static_cast<request*>(stream_user_data);
  if (r == nullptr) return 0;
  if (self.life_.tally.counted) {
    self.quic().stream_packets_lost += ngtcp2_conn_get_stream_loss_count(conn, stream_id);
  }
  if (!r->done) {
    // Closed without an answer or a reset of its own (STOP_SENDING, then our side reset).
    r->done = true;
    self.fail_exchange(r->id, self.now_, "stream_closed_" + doq_error_name(app_error_code),
                       exchange_layer::quic);
  }
  std::erase(self.send_queue_, r);
  std::erase(self.blocked_, r);
  self.free_request(*r);
  return 0;
}

const ngtcp2_callbacks& doq_client::callbacks() {
  static const ngtcp2_callbacks table = [] {
    ngtcp2_callbacks c{};
    c.client_initial = ngtcp2_crypto_client_initial_cb;
    c.recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb;
    c.handshake_completed = &doq_client::on_handshake_completed;
    c.encrypt = ngtcp2_crypto_encrypt_cb;
    c.decrypt = ngtcp2_crypto_decrypt_cb;
    c.hp_mask = ngtcp2_crypto_hp_mask_cb;
    c.recv_stream_data = &doq_client::on_stream_data;
    c.stream_close = &doq_client::on_stream_close;
    c.recv_retry = &doq_client::on_recv_retry;
    c.rand = &doq_client::random;
    c.get_new_connection_id = &doq_client::on_new_connection_id;
    c.update_key = ngtcp2_crypto_update_key_cb;
    c.stream_reset = &doq_client::on_stream_reset;
    c.recv_stateless_reset = &doq_client::on_stateless_reset;
    c.extend_max_local_streams_bidi = &doq_client::on_streams_raised;
    c.delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb;
    c.delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb;
    c.get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb;
    c.version_negotiation = ngtcp2_crypto_version_negotiation_cb;
    return c;
  }();
  return table;
}

}  // namespace dnstransport::detail
