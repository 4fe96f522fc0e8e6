#include "transport/doq/server_doq_connection.hpp"

#include <gnutls/crypto.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <exception>
#include <limits>

#include "transport/doq/server_doq_context.hpp"
#include "util/clock.hpp"
#include "util/socket_util.hpp"

namespace dnstransport::detail {

namespace {

// Flow control: what a client may send on one stream before the responder has read it, and
// on the whole connection. Both grow as data is consumed, so a query of any size (up to the
// 65535 octets its length allows) gets through.
constexpr std::uint64_t server_stream_window = 16 * 1024;
constexpr std::uint64_t server_connection_window = 1024 * 1024;
constexpr std::uint64_t default_idle_timeout = 30 * NGTCP2_SECONDS;
constexpr std::size_t max_packets_per_write = 64;

bool is_power_of_two(std::uint64_t n) {
  return n != 0 && (n & (n - 1)) == 0;
}

}  // namespace

doq_connection::doq_connection(doq_listener& listener)
    : listener_(listener),
      thread_(listener.thread()),
      rate_timer_(listener.thread().io()),
      timer_(listener.thread().io()) {}

doq_connection::~doq_connection() {
  if (conn_ != nullptr) ngtcp2_conn_del(conn_);
  if (session_ != nullptr) gnutls_deinit(session_);
}

ngtcp2_conn* doq_connection::connection_of(ngtcp2_crypto_conn_ref* ref) {
  return static_cast<doq_connection*>(ref->user_data)->conn_;
}

bool doq_connection::init(const ngtcp2_pkt_hd& header, const ngtcp2_path& path,
                          const ngtcp2_cid* original_dcid) {
  ref_ = {&doq_connection::connection_of, this};
  sockaddr_storage client{};
  std::memcpy(&client, path.remote.addr, std::min<std::size_t>(path.remote.addrlen, sizeof client));
  client_ = &thread_.client(address_of(client));
  ngtcp2_cid scid{};
  scid.datalen = doq_cid_length;
  do {
    random(scid.data, scid.datalen, nullptr);
  } while (listener_.known(cid_key(scid)));

  ngtcp2_callbacks callbacks{};
  callbacks.recv_client_initial = ngtcp2_crypto_recv_client_initial_cb;
  callbacks.recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb;
  callbacks.handshake_completed = &doq_connection::on_handshake_completed;
  callbacks.encrypt = ngtcp2_crypto_encrypt_cb;
  callbacks.decrypt = ngtcp2_crypto_decrypt_cb;
  callbacks.hp_mask = ngtcp2_crypto_hp_mask_cb;
  callbacks.recv_stream_data = &doq_connection::on_stream_data;
  callbacks.stream_close = &doq_connection::on_stream_close;
  callbacks.rand = &doq_connection::random;
  callbacks.get_new_connection_id = &doq_connection::on_new_connection_id;
  callbacks.remove_connection_id = &doq_connection::on_remove_connection_id;
  callbacks.update_key = ngtcp2_crypto_update_key_cb;
  callbacks.stream_reset = &doq_connection::on_stream_reset;
  callbacks.extend_max_stream_data = &doq_connection::on_extend_max_stream_data;
  callbacks.delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb;
  callbacks.delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb;
  callbacks.get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb;
  callbacks.version_negotiation = ngtcp2_crypto_version_negotiation_cb;

  ngtcp2_settings settings;
  ngtcp2_settings_default(&settings);
  settings.initial_ts = monotonic_ns();
  settings.handshake_timeout = NGTCP2_DEFAULT_HANDSHAKE_TIMEOUT;
  // DNS answers fit in QUIC's minimum datagram; path MTU probes would cost every short
  // connection a 1.4 kB datagram for nothing.
  settings.no_pmtud = 1;
  // Acknowledge every query packet at once: the answer leaves at once too, so the ACK rides
  // in its packet rather than in one of its own after the ACK delay, and the client can
  // forget the stream as soon as it has the answer.
  settings.ack_thresh = 1;

  const server_options& options = thread_.options();
  ngtcp2_transport_params params;
  ngtcp2_transport_params_default(&params);
  params.initial_max_stream_data_bidi_remote = server_stream_window;
  params.initial_max_data = server_connection_window;
  params.initial_max_streams_bidi = options.doq_max_streams;
  params.initial_max_streams_uni = 0;  // DoQ has no use for them (RFC 9250, section 4.2)
  params.max_idle_timeout = options.idle_timeout_seconds > 0
                                ? seconds_to_ns(options.idle_timeout_seconds)
                                : default_idle_timeout;
  params.original_dcid = header.dcid;
  if (original_dcid != nullptr) {
    // After a Retry: the client's first ID, and the one the Retry gave it (RFC 9000,
    // section 7.3), so the client can tell the Retry came from this server.
    params.original_dcid = *original_dcid;
    params.retry_scid = header.dcid;
    params.retry_scid_present = 1;
  }
  const auto& secret = listener_.context().static_secret();
  if (ngtcp2_crypto_generate_stateless_reset_token(params.stateless_reset_token, secret.data(),
                                                   secret.size(), &scid) != 0) {
    return false;
  }
  params.stateless_reset_token_present = 1;

  if (ngtcp2_conn_server_new(&conn_, &header.scid, &scid, &path, header.version, &callbacks,
                             &settings, &params, nullptr, this) != 0) {
    conn_ = nullptr;
    return false;
  }
  session_ = listener_.context().new_session(&ref_, thread_.options().doq_open_stream_after != 0);
  if (session_ == nullptr) return false;
  ngtcp2_conn_set_tls_native_handle(conn_, session_);
  listener_.associate(cid_key(header.dcid), *this);
  listener_.associate(cid_key(scid), *this);
  return true;
}

bool doq_connection::on_datagram(const ngtcp2_path& path, std::span<const std::uint8_t> datagram) {
  if (phase_ == phase::closing) {
    // RFC 9000, section 10.2.1: answer a peer that keeps sending with the same
    // CONNECTION_CLOSE, less and less often.
    if (is_power_of_two(++packets_while_closing_)) {
      doq_packet packet;
      std::memcpy(&packet.local, path.local.addr, path.local.addrlen);
      packet.local_size = path.local.addrlen;
      std::memcpy(&packet.remote, path.remote.addr, path.remote.addrlen);
      packet.remote_size = path.remote.addrlen;
      packet.bytes = close_packet_;
      listener_.send({&packet, 1});
    }
    return true;
  }
  if (phase_ == phase::draining) return true;

  ngtcp2_pkt_info info{};
  const int result =
      ngtcp2_conn_read_pkt(conn_, &path, &info, datagram.data(), datagram.size(), monotonic_ns());
  if (result != 0) {
    pending_resets_.clear();
    ngtcp2_connection_close_error error;
    ngtcp2_connection_close_error_default(&error);
    switch (result) {
      case NGTCP2_ERR_DRAINING:  // the peer closed
        handshake_failed();
        drain();
        arm_timer();
        return true;
      case NGTCP2_ERR_DROP_CONN:
      case NGTCP2_ERR_RETRY:
        handshake_failed();
        return false;
      case NGTCP2_ERR_CRYPTO:
        ngtcp2_connection_close_error_set_transport_error_tls_alert(
            &error, ngtcp2_conn_get_tls_alert(conn_), nullptr, 0);
        break;
      default:
        ngtcp2_connection_close_error_set_transport_error_liberr(&error, result, nullptr, 0);
        break;
    }
    handshake_failed();
    if (!close(error)) return false;
    arm_timer();
    return true;
  }
  apply_resets();
  flush_due_ = true;  // the listener flushes once its batch of datagrams is read
  return true;
}

bool doq_connection::flush() {
  flush_due_ = false;
  if (phase_ != phase::open) return true;
  if (!write() || !misbehave()) return false;
  arm_timer();
  return true;
}

bool doq_connection::misbehave() {
  // Answers still to go out first.
  if (phase_ != phase::open || !send_queue_.empty() || !delayed_.empty()) return true;
  const server_options& o = thread_.options();
  if (o.doq_stateless_reset_after != 0 && answers_ >= o.doq_stateless_reset_after) {
    return false;  // forgotten: the listener answers its packets with stateless resets
  }
  if (o.doq_open_stream_after != 0 && answers_ >= o.doq_open_stream_after && !opened_stream_) {
    opened_stream_ = true;
    std::int64_t id = -1;
    if (ngtcp2_conn_open_bidi_stream(conn_, &id, nullptr) == 0) {
      auto own = std::make_unique<stream>();
      own->id = id;
      own->out = {0, 2, 0xde, 0xad};  // a 2-octet "message" on a stream no query opened
      own->queued = true;
      send_queue_.push_back(own.get());
      streams_[id] = std::move(own);
      return write();
    }
  }
  if (o.close_after_queries != 0 && queries_ >= o.close_after_queries) {
    ngtcp2_connection_close_error error;
    ngtcp2_connection_close_error_default(&error);
    ngtcp2_connection_close_error_set_application_error(&error, o.doq_close_code, nullptr, 0);
    return close(error);
  }
  return true;
}

int doq_connection::on_handshake_completed(ngtcp2_conn*, void* user_data) {
  auto& self = *static_cast<doq_connection*>(user_data);
  server_counters& counters = self.thread_.counters;
  const bool resumed = gnutls_session_is_resumed(self.session_) != 0;
  if (resumed) counters.tls_resumed.fetch_add(1, std::memory_order_relaxed);
  if ((gnutls_session_get_flags(self.session_) & GNUTLS_SFLAGS_EARLY_DATA) != 0) {
    counters.doq_early_data.fetch_add(1, std::memory_order_relaxed);
  }
  // A ticket lets the client resume (and, when the responder allows it, send 0-RTT) next
  // time; losing it only costs that client a full handshake.
  if (!resumed || self.listener_.context().renew_tickets()) {
    gnutls_session_ticket_send(self.session_, 1, 0);
  }
  self.thread_.spend_handshake_cost();
  return 0;
}

void doq_connection::random(std::uint8_t* dest, std::size_t size, const ngtcp2_rand_ctx*) {
  gnutls_rnd(GNUTLS_RND_NONCE, dest, size);
}

int doq_connection::on_new_connection_id(ngtcp2_conn*, ngtcp2_cid* cid, std::uint8_t* token,
                                         std::size_t size, void* user_data) {
  auto& self = *static_cast<doq_connection*>(user_data);
  cid->datalen = size;
  do {
    if (gnutls_rnd(GNUTLS_RND_RANDOM, cid->data, size) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
  } while (self.listener_.known(cid_key(*cid)));
  const auto& secret = self.listener_.context().static_secret();
  if (ngtcp2_crypto_generate_stateless_reset_token(token, secret.data(), secret.size(), cid) != 0) {
    return NGTCP2_ERR_CALLBACK_FAILURE;
  }
  try {
    self.listener_.associate(cid_key(*cid), self);
  } catch (const std::exception&) {
    return NGTCP2_ERR_CALLBACK_FAILURE;
  }
  return 0;
}

int doq_connection::on_remove_connection_id(ngtcp2_conn*, const ngtcp2_cid* cid, void* user_data) {
  static_cast<doq_connection*>(user_data)->listener_.dissociate(cid_key(*cid));
  return 0;
}

bool doq_connection::write() {
  if (phase_ != phase::open) return true;
  const std::uint64_t now = monotonic_ns();
  const std::size_t packet_size = ngtcp2_conn_get_max_tx_udp_payload_size(conn_);
  const std::size_t limit = std::clamp<std::size_t>(
      ngtcp2_conn_get_send_quantum(conn_) / packet_size, 1, max_packets_per_write);
  const std::span<std::uint8_t> buffer = listener_.packet_buffer(limit, packet_size);
  std::array<doq_packet, max_packets_per_write> packets;
  std::size_t count = 0;
  ngtcp2_path_storage storage;
  ngtcp2_path_storage_zero(&storage);
  ngtcp2_connection_close_error error;
  ngtcp2_connection_close_error_default(&error);
  bool broken = false;
  // Every round either sends a packet, finishes a stream's data or takes a stream off the
  // queue; the bound only guards against a library that would do none of these.
  for (unsigned round = 0; round < 4 * max_packets_per_write + send_queue_.size() * 2; ++round) {
    stream* s = send_queue_.empty() ? nullptr : send_queue_.front();
    const std::int64_t stream_id = s != nullptr ? s->id : -1;
    ngtcp2_vec data{};
    std::uint32_t flags = NGTCP2_WRITE_STREAM_FLAG_NONE;
    if (s != nullptr) {
      data = {s->out.data() + s->sent, s->out.size() - s->sent};
      flags = NGTCP2_WRITE_STREAM_FLAG_MORE | NGTCP2_WRITE_STREAM_FLAG_FIN;
    }
    ngtcp2_ssize accepted = -1;
    ngtcp2_pkt_info info{};
    const ngtcp2_ssize written = ngtcp2_conn_writev_stream(
        conn_, &storage.path, &info, buffer.data() + count * packet_size, packet_size, &accepted,
        flags, stream_id, s != nullptr ? &data : nullptr, s != nullptr ? 1 : 0, now);
    if (s != nullptr) {
      // A callback may have closed the stream meanwhile.
      const auto found = streams_.find(stream_id);
      s = found != streams_.end() ? found->second.get() : nullptr;
    }
    if (s != nullptr && accepted > 0) s->sent += static_cast<std::size_t>(accepted);
    if (s != nullptr && s->queued && s->sent == s->out.size()) {
      send_queue_.pop_front();
      s->queued = false;
    }
    if (written < 0) {
      if (written == NGTCP2_ERR_WRITE_MORE) continue;
      if (written == NGTCP2_ERR_STREAM_DATA_BLOCKED || written == NGTCP2_ERR_STREAM_SHUT_WR ||
          written == NGTCP2_ERR_STREAM_NOT_FOUND) {
        // Blocked: back in the queue when the client extends the stream's window; shut:
        // the client does not want the answer any more.
        if (s != nullptr && s->queued) {
          std::erase(send_queue_, s);
          s->queued = false;
        }
        continue;
      }
      ngtcp2_connection_close_error_set_transport_error_liberr(&error, static_cast<int>(written),
                                                               nullptr, 0);
      broken = true;
      break;
    }
    if (written == 0) break;
    doq_packet& packet = packets[count];
    std::memcpy(&packet.local, storage.path.local.addr, storage.path.local.addrlen);
    packet.local_size = storage.path.local.addrlen;
    std::memcpy(&packet.remote, storage.path.remote.addr, storage.path.remote.addrlen);
    packet.remote_size = storage.path.remote.addrlen;
    packet.bytes = buffer.subspan(count * packet_size, static_cast<std::size_t>(written));
    if (++count == limit) break;
  }
  if (count > 0) listener_.send({packets.data(), count});
  if (broken) return close(error);
  // No pacing (ngtcp2_conn_update_pkt_tx_time is never called): answers leave as soon as
  // the congestion window lets them, without a timer of tens of microseconds per packet.
  return true;
}

bool doq_connection::close(const ngtcp2_connection_close_error& error) {
  if (phase_ != phase::open) return true;
  const std::size_t packet_size = ngtcp2_conn_get_max_tx_udp_payload_size(conn_);
  close_packet_.resize(packet_size);
  ngtcp2_path_storage storage;
  ngtcp2_path_storage_zero(&storage);
  ngtcp2_pkt_info info{};
  const ngtcp2_ssize written =
      ngtcp2_conn_write_connection_close(conn_, &storage.path, &info, close_packet_.data(),
                                         close_packet_.size(), &error, monotonic_ns());
  if (written <= 0) return false;
  close_packet_.resize(static_cast<std::size_t>(written));
  phase_ = phase::closing;
  period_end_ = monotonic_ns() + 3 * ngtcp2_conn_get_pto(conn_);
  release();
  doq_packet packet;
  std::memcpy(&packet.local, storage.path.local.addr, storage.path.local.addrlen);
  packet.local_size = storage.path.local.addrlen;
  std::memcpy(&packet.remote, storage.path.remote.addr, storage.path.remote.addrlen);
  packet.remote_size = storage.path.remote.addrlen;
  packet.bytes = close_packet_;
  listener_.send({&packet, 1});
  return true;
}

void doq_connection::drain() {
  phase_ = phase::draining;
  period_end_ = monotonic_ns() + 3 * ngtcp2_conn_get_pto(conn_);
  release();
}

void doq_connection::release() {
  // Closing or draining, the connection only recognises its packets (by the IDs the listener
  // keeps) and, closing, answers them with close_packet_: the QUIC and TLS state and the
  // streams go now, while their memory is still in the cache (freed 3 PTOs later, when it
  // no longer is, they cost the responder some 5 % of its CPU per short connection).
  send_queue_.clear();
  delayed_.clear();
  pending_resets_.clear();
  streams_.clear();
  ngtcp2_conn_del(conn_);
  conn_ = nullptr;
  gnutls_deinit(session_);
  session_ = nullptr;
}

void doq_connection::handshake_failed() {
  if (counted_failure_ || ngtcp2_conn_get_handshake_completed(conn_) != 0) return;
  counted_failure_ = true;
  thread_.counters.tls_handshakes_failed.fetch_add(1, std::memory_order_relaxed);
}

void doq_connection::arm_timer() {
  const std::uint64_t at = phase_ == phase::open ? ngtcp2_conn_get_expiry(conn_) : period_end_;
  // ngtcp2's expiry moves with nearly every packet, mostly later: a timer already due no
  // later stays (re-arming costs a timerfd_settime call each time), and on_timer, finding
  // nothing expired, arms it again.
  if (at == std::numeric_limits<std::uint64_t>::max() || (timer_at_ != 0 && timer_at_ <= at)) {
    return;
  }
  timer_at_ = at;
  const std::uint64_t now = monotonic_ns();
  timer_.expires_after(std::chrono::nanoseconds(at > now ? at - now : 0));
  timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (ec) return;
    self->timer_at_ = 0;
    try {
      self->on_timer();
    } catch (const std::exception&) {
      self->listener_.remove(*self);  // out of memory: this connection is given up
    }
  });
}

void doq_connection::on_timer() {
  const std::uint64_t now = monotonic_ns();
  // A timer armed for an earlier expiry may fire before what is due now (arm_timer).
  if (phase_ != phase::open) {
    if (now < period_end_) {
      arm_timer();
      return;
    }
    listener_.remove(*this);  // the closing or draining period is over
    return;
  }
  if (ngtcp2_conn_get_expiry(conn_) > now) {
    arm_timer();
    return;
  }
  const int result = ngtcp2_conn_handle_expiry(conn_, now);
  if (result == NGTCP2_ERR_IDLE_CLOSE) {
    handshake_failed();
    listener_.remove(*this);
    return;
  }
  if (result == NGTCP2_ERR_HANDSHAKE_TIMEOUT) {
    handshake_failed();
    listener_.remove(*this);
    return;
  }
  bool open = true;
  if (result != 0) {
    ngtcp2_connection_close_error error;
    ngtcp2_connection_close_error_default(&error);
    ngtcp2_connection_close_error_set_transport_error_liberr(&error, result, nullptr, 0);
    open = close(error);
  } else {
    open = write() && misbehave();
  }
  if (!open) {
    listener_.remove(*this);
    return;
  }
  arm_timer();
}

}  // namespace dnstransport::detail
