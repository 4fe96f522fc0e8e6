#pragma once
// Internal: one DNS-over-QUIC connection of the responder: an ngtcp2 server connection whose
// TLS is a GnuTLS session (ngtcp2's crypto helper), fed the datagrams the listener routes
// to it. Each bidirectional stream the client opens carries one query with its 2-octet
// length and FIN (RFC 9250, section 4.2); the answer goes back on the same stream with its
// length and FIN. A stream whose length does not match the data before FIN, or that is no
// query, is reset with DOQ_PROTOCOL_ERROR. Flow control grows as the data is consumed and
// each closed stream lets the client open another. Under a rate limit
// (server_options::rate_limit, or rate_limit_per_client for the connection's client) an answer
// whose token is not due yet waits, in order, for a timer of its own; its stream stays open
// meanwhile, so the stream limit bounds how many wait. The connection ends after the idle timeout,
// after the peer closes (draining), or after its own CONNECTION_CLOSE (closing); in both periods it
// keeps its IDs for three PTOs so late packets are absorbed. Life cycle in
// server_doq_connection.cpp, streams in server_doq_stream.cpp.

#include <gnutls/gnutls.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include <boost/asio/steady_timer.hpp>

#include "message/doq_stream_reader.hpp"
#include "transport/doq/doq_codes.hpp"  // DoQ error codes (RFC 9250, section 4.3)
#include "transport/doq/server_doq.hpp"

namespace dnstransport::detail {

class doq_connection : public std::enable_shared_from_this<doq_connection> {
 public:
  explicit doq_connection(doq_listener& listener);
  ~doq_connection();
  doq_connection(const doq_connection&) = delete;
  doq_connection& operator=(const doq_connection&) = delete;

  // Sets up QUIC and TLS for the client's first Initial `header`, on the path the datagram
  // came by; `original_dcid` is the ID of the Initial that got a Retry, when this one carries
  // its token. False when ngtcp2 or GnuTLS refuses (the datagram is then dropped).
  bool init(const ngtcp2_pkt_hd& header, const ngtcp2_path& path, const ngtcp2_cid* original_dcid);

  // One datagram for this connection. False when the connection is over and is to be
  // removed.
  bool on_datagram(const ngtcp2_path& path, std::span<const std::uint8_t> datagram);

  // Sends what the datagrams read since the last flush call for (answers, ACKs, handshake
  // data): once per batch of datagrams, so that a batch's answers share packets. False when
  // the connection is over and is to be removed.
  bool flush();
  // Whether datagrams were read since the last flush.
  bool flush_due() const noexcept { return flush_due_; }

  // The IDs the listener routes to this connection, so it can forget them all at the end.
  std::vector<cid_key>& ids() noexcept { return ids_; }

 private:
  struct stream {
    std::int64_t id = 0;
    doq_stream_reader in;           // the query with its length, as it arrives
    std::vector<std::uint8_t> out;  // the answer with its length, kept until the stream
                                    // closes: ngtcp2 retransmits from it
    std::size_t sent = 0;           // octets of `out` handed to ngtcp2
    bool queued = false;            // in send_queue_
    bool delayed = false;           // in delayed_, waiting for the rate limit
    bool failed = false;            // reset; data that still arrives is discarded
    bool credited = false;          // its stream credit went back to the client already
  };

  enum class phase { open, closing, draining };

  // ngtcp2 callbacks; user_data is the connection.
  static int on_handshake_completed(ngtcp2_conn* conn, void* user_data);
  static int on_stream_data(ngtcp2_conn* conn, std::uint32_t flags, std::int64_t stream_id,
                            std::uint64_t offset, const std::uint8_t* data, std::size_t size,
                            void* user_data, void* stream_user_data);
  static int on_stream_close(ngtcp2_conn* conn, std::uint32_t flags, std::int64_t stream_id,
                             std::uint64_t app_error_code, void* user_data, void* stream_user_data);
  static int on_stream_reset(ngtcp2_conn* conn, std::int64_t stream_id, std::uint64_t final_size,
                             std::uint64_t app_error_code, void* user_data, void* stream_user_data);
  static int on_extend_max_stream_data(ngtcp2_conn* conn, std::int64_t stream_id,
                                       std::uint64_t max_data, void* user_data,
                                       void* stream_user_data);
  static void random(std::uint8_t* dest, std::size_t size, const ngtcp2_rand_ctx* context);
  static int on_new_connection_id(ngtcp2_conn* conn, ngtcp2_cid* cid, std::uint8_t* token,
                                  std::size_t size, void* user_data);
  static int on_remove_connection_id(ngtcp2_conn* conn, const ngtcp2_cid* cid, void* user_data);
  static ngtcp2_conn* connection_of(ngtcp2_crypto_conn_ref* ref);

  // Query bytes for a stream; answers it once FIN arrives, resets it when it cannot be one
  // query.
  void receive(std::int64_t stream_id, bool fin, std::span<const std::uint8_t> data);
  void answer(stream& s);
  // Hands the answer in s.out to the send queue (now, or once its rate-limit token is due).
  void deliver(stream& s);
  void arm_rate_timer();
  void send_delayed();
  void fail_stream(stream& s, std::uint64_t error);
  // After a write: the close after close_after_queries, and the silent end of
  // doq_stateless_reset_after. False when the connection is to be forgotten.
  bool misbehave();
  void apply_resets();

  // Hands ngtcp2 what is queued and sends the packets it makes. False when the connection
  // broke doing so and is over.
  bool write();
  // Sends CONNECTION_CLOSE with `error` and keeps the IDs for the closing period; false when
  // even that is impossible and the connection is over.
  bool close(const ngtcp2_connection_close_error& error);
  void drain();
  // Frees what the closing and draining periods do not need.
  void release();
  void handshake_failed();
  void arm_timer();
  void on_timer();

  doq_listener& listener_;
  server_thread& thread_;
  client_record* client_ = nullptr;  // the client's record (server_thread::client)
  ngtcp2_conn* conn_ = nullptr;
  gnutls_session_t session_ = nullptr;
  ngtcp2_crypto_conn_ref ref_{};
  std::vector<cid_key> ids_;
  std::unordered_map<std::int64_t, std::unique_ptr<stream>> streams_;
  std::deque<stream*> send_queue_;  // streams with answer octets not yet handed over
  // Answered streams waiting for their rate-limit tokens, in the order the tokens are due
  // (monotonic_ns()).
  std::deque<std::pair<stream*, std::uint64_t>> delayed_;
  boost::asio::steady_timer rate_timer_;  // for the first of delayed_
  // Streams to reset, with their error codes, once ngtcp2 has returned.
  std::vector<std::pair<std::int64_t, std::uint64_t>> pending_resets_;
  phase phase_ = phase::open;
  std::vector<std::uint8_t> close_packet_;  // CONNECTION_CLOSE, sent again while closing
  std::uint64_t packets_while_closing_ = 0;
  boost::asio::steady_timer timer_;
  std::uint64_t timer_at_ = 0;    // what the timer is set to; 0: not set
  std::uint64_t period_end_ = 0;  // end of the closing or draining period
  bool counted_failure_ = false;
  bool flush_due_ = false;
  std::uint64_t queries_ = 0;   // complete queries received (numbering them from 1)
  std::uint64_t answers_ = 0;   // answers handed to the send queue
  bool opened_stream_ = false;  // doq_open_stream_after: the stream of its own is open
};

}  // namespace dnstransport::detail
