// The DoQ client's connection life cycle: its UDP socket, a new ngtcp2 connection (with the
// newest ticket, and 0-RTT when allowed), the handshake, failed set-ups, the server ending
// the connection, our close, and what a connection leaves behind (its ticket, ngtcp2's
// statistics). The class is in doq_client.hpp.

#include <netinet/in.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "transport/doq/doq_client.hpp"
#include "transport/doq/doq_codes.hpp"
#include "util/clock.hpp"

namespace dnstransport::detail {

namespace {

// Enough for a few answers of any size per stream, and for every stream in flight together;
// both grow as the client reads.
constexpr std::uint64_t client_stream_window = 128 * 1024;
constexpr std::uint64_t client_connection_window = 4 * 1024 * 1024;
constexpr std::uint64_t idle_timeout_ns = 30ull * 1'000'000'000u;

}  // namespace

int doq_client::open_socket() {
  if (socket_->is_open()) return 0;
  const run_plan& p = plan();
  const boost::asio::ip::udp::endpoint server(p.server_address, p.server_port);
  std::optional<boost::asio::ip::address> source;
  if (!p.sources.empty()) source = p.sources[index_ % p.sources.size()];
  // With the kernel's receive stamps: answers are timed by when their packet arrived, not
  // when the client came to read it.
  if (const int error = socket_->open(server, source); error != 0) return error;
  const socklen_t size = socket_->local_address(local_);
  path_.local = {reinterpret_cast<sockaddr*>(&local_), size};
  std::memcpy(&remote_, server.data(), server.size());
  path_.remote = {reinterpret_cast<sockaddr*>(&remote_), static_cast<socklen_t>(server.size())};
  return 0;
}

bool doq_client::create_connection(std::uint64_t now) {
  session_ = transport_.new_session();
  if (session_ == nullptr) return false;
  ref_ = {&doq_client::connection_of, this};
  gnutls_session_set_ptr(session_, &ref_);
  gnutls_handshake_set_hook_function(session_, GNUTLS_HANDSHAKE_NEW_SESSION_TICKET,
                                     GNUTLS_HOOK_POST, &doq_client::on_ticket);
  const doq_settings& s = transport_.settings();
  if (s.resume && have_ticket_) {
    // Data GnuTLS cannot use only means a full handshake.
    gnutls_session_set_data(session_, ticket_.data(), ticket_.size());
  }

  ngtcp2_cid dcid{};
  ngtcp2_cid scid{};
  dcid.datalen = 18;
  scid.datalen = 16;
  random(dcid.data, dcid.datalen, nullptr);
  random(scid.data, scid.datalen, nullptr);
  ngtcp2_settings settings;
  ngtcp2_settings_default(&settings);
  settings.initial_ts = now;
  // Path MTU probes would cost two large packets per connection; DNS messages are small.
  settings.no_pmtud = 1;
  ngtcp2_transport_params params;
  ngtcp2_transport_params_default(&params);
  // The server opens no stream of its own in DoQ (RFC 9250, section 4.2): it gets none.
  params.initial_max_streams_bidi = 0;
  params.initial_max_streams_uni = 0;
  params.initial_max_stream_data_bidi_local = client_stream_window;
  params.initial_max_data = client_connection_window;
  params.max_idle_timeout = idle_timeout_ns;
  if (ngtcp2_conn_client_new(&conn_, &dcid, &scid, &path_, NGTCP2_PROTO_VER_V1, &callbacks(),
                             &settings, &params, nullptr, this) != 0) {
    conn_ = nullptr;
    return false;
  }
  ngtcp2_conn_set_tls_native_handle(conn_, session_);
  if (s.resume && s.early_data && have_ticket_) {
    ngtcp2_conn_set_early_remote_transport_params(conn_, &ticket_parameters_);
  }
  return true;
}

void doq_client::connect(std::uint64_t now) {
  if (!life_.begin(now)) return;
  ++generation_;
  state_ = conn_state::handshaking;
  early_keys_ = false;
  stateless_reset_ = false;
  if (const int error = open_socket(); error != 0) {
    life_.failed("udp socket", error);
    end_connection();
    return;
  }
  if (!create_connection(now)) {
    fail_connection("quic_setup", "DoQ: ngtcp2 or GnuTLS could not set up a connection");
    return;
  }
  // With a ticket, the queries' streams are opened before the first write, which makes the
  // ClientHello: GnuTLS has the 0-RTT keys right after it when the ticket allows early data,
  // and ngtcp2 then puts the queries in a 0-RTT packet in the same datagram (where the
  // Initial's padding would go).
  const doq_settings& s = transport_.settings();
  if (s.resume && s.early_data && have_ticket_) {
    life_.early_allowed();
    fill(now);
  }
  if (!write(now)) return;
  const ngtcp2_crypto_ctx* early = ngtcp2_conn_get_early_crypto_ctx(conn_);
  if (life_.early() && early != nullptr && early->aead.native_handle != nullptr) {
    early_keys_ = true;
    for (request& r : requests_) {
      const slot_table::slot* slot = r.in_use && r.early ? slots_.find(r.id) : nullptr;
      if (slot != nullptr && slot->counted) ++early_counts().queries_in_early_data;
    }
    // Queries that did not fit in the first datagram go now, in 0-RTT too.
    fill(now);
    if (!write(now)) return;
    life_.early_sent();
  } else if (life_.early()) {
    // The ticket allows no early data: the queries opened wait for the handshake.
    life_.early_dropped();
    for (request& r : requests_) r.early = false;
  }
  wait_readable();
}

int doq_client::handshake_completed() {
  const std::uint64_t now = monotonic_ns();
  state_ = conn_state::established;
  finished_unsent_ = true;
  // QUIC's connection is opened by its handshake, which is its set-up.
  life_.opened();
  life_.handshake_done(life_.tally.started_ns, now, gnutls_session_is_resumed(session_) != 0);
  life_.usable();
  if (life_.established(now, life_.early() && (gnutls_session_get_flags(session_) &
                                               GNUTLS_SFLAGS_EARLY_DATA) != 0)) {
    return 0;
  }
  // ngtcp2 forgets the 0-RTT streams (without closing them): their queries go again on new
  // streams once ngtcp2 returns.
  if (ngtcp2_conn_early_data_rejected(conn_) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
  send_queue_.clear();
  blocked_.clear();
  for (request& r : requests_) {
    if (!r.in_use || r.stream < 0) continue;
    if (r.done) {
      free_request(r);
      continue;
    }
    r.stream = -1;
    r.handed = 0;
    r.answer.reset();
    resend_.push_back(&r);
  }
  return 0;
}

void doq_client::fail_connection(const std::string& cause, const std::string& message) {
  life_.failed(cause, message);
  // The next attempt waits for the next tick, so a refusing server is not hammered.
  end_connection();
}

void doq_client::connection_broke(int error) {
  const bool handshaking = state_ == conn_state::handshaking;
  std::string cause;
  std::string message;
  if (error == NGTCP2_ERR_DRAINING || error == NGTCP2_ERR_IDLE_CLOSE) {
    // The server ended it (CONNECTION_CLOSE or a stateless reset), or nothing came for the
    // idle timeout.
    ngtcp2_connection_close_error close;
    ngtcp2_connection_close_error_default(&close);
    ngtcp2_conn_get_connection_close_error(conn_, &close);
    if (stateless_reset_) {
      cause = "stateless_reset";
    } else if (error == NGTCP2_ERR_IDLE_CLOSE) {
      cause = "idle_timeout";
    } else if (close.type == NGTCP2_CONNECTION_CLOSE_ERROR_CODE_TYPE_APPLICATION) {
      cause = doq_error_name(close.error_code);
    } else if (handshaking && close.error_code >= 0x100 && close.error_code <= 0x1ff) {
      cause = tls_alert_cause(static_cast<std::uint8_t>(close.error_code - 0x100));
    } else {
      cause = quic_transport_error_name(close.error_code);
    }
    message = fmt::format(
        "DoQ: the server closed the connection ({}{}{})", cause, close.reasonlen > 0 ? ": " : "",
        std::string(reinterpret_cast<const char*>(close.reason), close.reasonlen));
    if (!handshaking) {
      if (life_.tally.counted) ++quic().closes[cause];
      life_.closed_by_server(stateless_reset_);
    }
  } else if (error == NGTCP2_ERR_RECV_VERSION_NEGOTIATION) {
    if (life_.tally.counted) ++quic().version_negotiation;
    cause = "quic_version_negotiation";
    message = "DoQ: the server answered with Version Negotiation (it does not speak QUIC v1)";
  } else if (error == NGTCP2_ERR_CRYPTO) {
    cause = tls_alert_cause(ngtcp2_conn_get_tls_alert(conn_));
    message = fmt::format("DoQ handshake: TLS failed ({})", cause);
  } else if (error == NGTCP2_ERR_HANDSHAKE_TIMEOUT) {
    cause = "quic_handshake_timeout";
    message = "DoQ handshake: no answer within the timeout";
  } else {
    // ngtcp2 found the server breaking QUIC (a stream it may not open, a bad frame): we
    // close with the matching transport error.
    ngtcp2_connection_close_error close;
    ngtcp2_connection_close_error_set_transport_error_liberr(&close, error, nullptr, 0);
    cause = fmt::format("quic_{}", quic_transport_error_name(close.error_code));
    message = fmt::format("DoQ: {} ({})", ngtcp2_strerror(error), cause);
    write_connection_close(close);
    if (!handshaking) {
      life_.closed_protocol_error();
      if (life_.tally.counted) connections().record_failure(cause, message);
    }
  }
  if (handshaking) {
    fail_connection(cause, message);
    return;
  }
  end_connection();
  const std::uint64_t now = monotonic_ns();
  if (send_allowance(now) > 0) connect(now);
}

void doq_client::close(bool count) {
  life_.closed_by_us(state_ == conn_state::established, count);
  if (conn_ != nullptr && state_ != conn_state::idle) {
    ngtcp2_connection_close_error close;
    ngtcp2_connection_close_error_default(&close);
    ngtcp2_connection_close_error_set_application_error(&close, doq_no_error, nullptr, 0);
    write_connection_close(close);
  }
  end_connection();
}

bool doq_client::close_if_idle(std::uint64_t now, std::uint64_t idle_ns) {
  if (state_ != conn_state::established || !slots_.empty() || !send_queue_.empty() ||
      !blocked_.empty() || !resend_.empty() || !life_.idle_for(now, idle_ns)) {
    return false;
  }
  // A query due now is sent on this connection, not on a new one.
  if (send_allowance(now) > 0) return false;
  close(false);
  return true;
}

void doq_client::write_connection_close(const ngtcp2_connection_close_error& close) {
  const auto room = outbox_room();
  ngtcp2_pkt_info info{};
  const ngtcp2_ssize n = ngtcp2_conn_write_connection_close(conn_, nullptr, &info, room.data(),
                                                            room.size(), &close, monotonic_ns());
  if (n > 0) add_to_outbox(static_cast<std::size_t>(n));
  flush();
}

void doq_client::end_connection() {
  life_.ended();
  fail_in_flight(false);
  if (conn_ != nullptr) {
    if (life_.tally.counted) {
      ngtcp2_conn_stat stat;
      ngtcp2_conn_get_conn_stat(conn_, &stat);
      quic_counters& q = quic();
      q.probe_timeouts += stat.pto_count;
      if (stat.min_rtt != UINT64_MAX && stat.first_rtt_sample_ts != UINT64_MAX) {
        ++q.rtt_samples;
        q.smoothed_rtt_ns_sum += stat.smoothed_rtt;
        if (q.min_rtt_ns == 0 || stat.min_rtt < q.min_rtt_ns) q.min_rtt_ns = stat.min_rtt;
        q.cwnd_sum += stat.cwnd;
      }
    }
    for (request& r : requests_) {
      if (!r.in_use) continue;
      if (life_.tally.counted && r.stream >= 0) {
        quic().stream_packets_lost += ngtcp2_conn_get_stream_loss_count(conn_, r.stream);
      }
    }
    ngtcp2_conn_del(conn_);
    conn_ = nullptr;
  }
  if (session_ != nullptr) {
    gnutls_deinit(session_);
    session_ = nullptr;
  }
  for (request& r : requests_) {
    if (r.in_use) free_request(r);
  }
  send_queue_.clear();
  blocked_.clear();
  resend_.clear();
  // The socket stays for the next connection; a wait on it belongs to this one.
  if (waiting_read_) socket_->cancel();
  if (timer_at_ != 0) timer_.cancel();
  timer_at_ = 0;
  waiting_read_ = false;
  early_keys_ = false;
  starved_since_ = 0;
  streams_limit_ = 0;
  streams_raised_ = false;
  ++generation_;
  state_ = conn_state::idle;
}

void doq_client::take_ticket() {
  gnutls_datum_t data{nullptr, 0};
  if (gnutls_session_get_data2(session_, &data) != 0) return;
  ticket_.assign(data.data, data.data + data.size);
  gnutls_free(data.data);
  // 0.12 keeps the server's parameters as a struct; what 0-RTT needs of them are plain
  // numbers (the version list is left out: it would point into this connection).
  ticket_parameters_ = *ngtcp2_conn_get_remote_transport_params(conn_);
  ticket_parameters_.version_info_present = 0;
  ticket_parameters_.version_info = {};
  have_ticket_ = true;
}

}  // namespace dnstransport::detail
