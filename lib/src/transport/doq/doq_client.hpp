#pragma once
// Internal: the DoQ client. One QUIC connection at a time on the client's one UDP socket:
// successive connections share its source port, as they do in QUIC stacks that keep one
// socket per endpoint (quic-go, quinn, msquic), and the server tells them apart by their
// connection IDs; a datagram of an earlier connection that arrives later is discarded by
// ngtcp2 (counted as stray). A socket per connection cost 10 system calls per connection
// (a twelfth of a resumed handshake's client CPU). Every
// query gets a bidirectional stream: [length][id 0][rest of the query] and FIN (RFC 9250,
// section 4.2); its answer is matched by stream, and the question is still checked. The
// connection's life cycle is in doq_client_connection.cpp (connect, handshake, 0-RTT, the
// server closing, our close), the queries' I/O in doq_client.cpp, ngtcp2's and GnuTLS's
// callbacks in doq_client_callbacks.cpp, and what the engine calls (start, tick, abandon)
// with ngtcp2's timer in doq_client_tick.cpp.
//
// Accounting: an answer ends its query in the usual buckets; a stream the server resets, or
// ends without one whole message, ends it in quic_failed by cause; the queries a connection
// leaves unanswered when it ends are lost on close. Queries sent in 0-RTT that the server
// refused are sent again on new streams once the handshake is done: the same query (its
// latency still runs from the first send), counted once.

#include <gnutls/gnutls.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <sys/socket.h>

#include <array>
#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <vector>

#include <boost/asio/ip/udp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "engine/connection_life.hpp"
#include "engine/engine.hpp"
#include "message/doq_stream_reader.hpp"
#include "transport/doq/doq_transport.hpp"
#include "transport/udp/datagram_socket.hpp"

namespace dnstransport::detail {

class doq_client final : public client_base {
 public:
  doq_client(worker& owner, unsigned index, std::uint64_t quota, const doq_transport& transport);
  ~doq_client() override;

  void start() override;
  void tick(std::uint64_t now) override;
  void abandon() override;
  void read_delayed() override;

 private:
  // One query's stream, kept until ngtcp2 closes the stream: ngtcp2 sends (and resends) the
  // query from `head` and the query set without copying them.
  struct request {
    std::uint16_t id = 0;  // the query's slot id (the wire carries 0)
    std::uint32_t query_index = 0;
    std::int64_t stream = -1;            // -1: waiting for a stream
    std::array<std::uint8_t, 4> head{};  // length, then id 0
    // With EDNS Client Subnet: the query with its subnet, which ngtcp2 reads until it is
    // acknowledged; a fed query (run_plan::feed), whose cell is reused once the query ends;
    // otherwise the query set's, read in place.
    std::vector<std::uint8_t> own;
    std::size_t handed = 0;    // octets ngtcp2 has taken
    doq_stream_reader answer;  // the answer with its length, as it arrives
    bool in_use = false;
    bool done = false;   // the query was counted (or cancelled): the stream is only closing
    bool early = false;  // sent in 0-RTT
  };

  enum class conn_state { idle, handshaking, established };

  // The octets of request `r`'s query: its own copy, or the query set's.
  std::span<const std::uint8_t> query_of(const request& r) const noexcept {
    return r.own.empty() ? plan().query(r.query_index) : std::span(r.own);
  }

  // The connection's life cycle (doq_client_connection.cpp; its timer in doq_client_tick.cpp).
  void connect(std::uint64_t now);
  // The client's connected UDP socket, opened for its first connection and kept; 0 or the
  // errno of what failed.
  int open_socket();
  bool create_connection(std::uint64_t now);
  // The handshake completed (from ngtcp2's callback): counted, 0-RTT judged.
  int handshake_completed();
  // Set-up failed (timeout, TLS, version negotiation, socket): counted under `cause`.
  void fail_connection(const std::string& cause, const std::string& message);
  // The connection broke after the handshake: ngtcp2 error `error` from reading or writing,
  // or the server's CONNECTION_CLOSE, a stateless reset or the idle timeout (draining).
  void connection_broke(int error);
  // We end the connection: after queries_per_connection, at the end of the run, or on abandon.
  void close(bool count);
  // Closes the established connection (as close does, uncounted) when it has had nothing in
  // flight, nothing waiting to be sent and no query due since `idle_ns` before `now`; true
  // if it did. The caller counts why (--idle: closed_idle).
  bool close_if_idle(std::uint64_t now, std::uint64_t idle_ns);
  // Puts a packet with `close` in the outbox.
  void write_connection_close(const ngtcp2_connection_close_error& close);
  // Drops the connection and its streams; keeps its ticket and the socket. In-flight
  // queries are lost on close.
  void end_connection();
  void take_ticket();
  bool connection_done() const noexcept;
  void arm_timer();
  void on_timer();

  // Queries' I/O (doq_client.cpp).
  void wait_readable();
  void read_ready(std::uint64_t generation, bool ok);
  void on_readable();
  // Opens streams for the queries the budget, the queries-per-connection limit and the
  // server's stream limit allow (and for the queries 0-RTT lost).
  void fill(std::uint64_t now);
  // Hands queued query data to ngtcp2 and puts the packets it makes (ACKs, retransmissions,
  // handshake) in the outbox, and arms the timer for ngtcp2's next expiry. `last`: the
  // connection closes right after, so only the first datagram (the one with our Finished)
  // and no timer. False when the connection broke doing so.
  bool write(std::uint64_t now, bool last = false);
  // Room in the outbox for one more packet (sending what it holds when it is full), and the
  // packet written there.
  std::span<std::uint8_t> outbox_room();
  void add_to_outbox(std::size_t size);
  // Sends what the outbox holds unless an I/O round is under way (`output_round`), which
  // sends once at its end: the client's Finished, its CONNECTION_CLOSE and the next
  // connection's Initial leave in one sendmmsg.
  void flush();
  void send_packets(std::span<const iovec> packets);
  // After reading or a timer: the queries due and ngtcp2's packets written, then after_io.
  void fill_and_write(std::uint64_t now);
  // Then: the next connection if this one is done, else a wait for more packets.
  void after_io(std::uint64_t now);
  // Cancels the streams of queries that timed out (STOP_SENDING/RESET_STREAM with
  // DOQ_REQUEST_CANCELLED), so a server that never answers does not hold the stream limit.
  void cancel_expired();
  void receive(request& r, bool fin, std::span<const std::uint8_t> data);
  request& new_request();
  void free_request(request& r) noexcept;

  // ngtcp2's callbacks (doq_client_callbacks.cpp); user_data is the client.
  static int on_handshake_completed(ngtcp2_conn* conn, void* user_data);
  static int on_stream_data(ngtcp2_conn* conn, std::uint32_t flags, std::int64_t stream_id,
                            std::uint64_t offset, const std::uint8_t* data, std::size_t size,
                            void* user_data, void* stream_user_data);
  static int on_stream_reset(ngtcp2_conn* conn, std::int64_t stream_id, std::uint64_t final_size,
                             std::uint64_t app_error_code, void* user_data, void* stream_user_data);
  static int on_stream_close(ngtcp2_conn* conn, std::uint32_t flags, std::int64_t stream_id,
                             std::uint64_t app_error_code, void* user_data, void* stream_user_data);
  static int on_recv_retry(ngtcp2_conn* conn, const ngtcp2_pkt_hd* header, void* user_data);
  static int on_streams_raised(ngtcp2_conn* conn, std::uint64_t max_streams, void* user_data);
  static int on_stateless_reset(ngtcp2_conn* conn, const ngtcp2_pkt_stateless_reset* reset,
                                void* user_data);
  static void random(std::uint8_t* dest, std::size_t size, const ngtcp2_rand_ctx* context);
  static int on_new_connection_id(ngtcp2_conn* conn, ngtcp2_cid* cid, std::uint8_t* token,
                                  std::size_t size, void* user_data);
  static int on_ticket(gnutls_session_t session, unsigned int type, unsigned int when,
                       unsigned int incoming, const gnutls_datum_t* message);
  static ngtcp2_conn* connection_of(ngtcp2_crypto_conn_ref* ref);
  static const ngtcp2_callbacks& callbacks();

  // Holds the outbox for one entry point (a read, a timer, a tick), then flushes it. The
  // outbox lives in the worker's scratch buffer, which no other client touches before this
  // client returns to the event loop.
  class output_round {
   public:
    explicit output_round(doq_client& client) noexcept : client_(client) { ++client_.rounds_; }
    ~output_round() {
      if (--client_.rounds_ == 0) client_.flush();
    }
    output_round(const output_round&) = delete;
    output_round& operator=(const output_round&) = delete;

   private:
    doq_client& client_;
  };

  const doq_transport& transport_;
  std::unique_ptr<datagram_socket> socket_;  // from the transport's factory
  boost::asio::steady_timer timer_;
  ngtcp2_conn* conn_ = nullptr;
  gnutls_session_t session_ = nullptr;
  ngtcp2_crypto_conn_ref ref_{};
  sockaddr_storage local_{};
  sockaddr_storage remote_{};
  ngtcp2_path path_{};

  std::deque<request> requests_;  // stable addresses: ngtcp2 holds them as stream data
  std::vector<request*> free_;
  std::deque<request*> send_queue_;  // streams with query octets not yet handed to ngtcp2
  std::vector<request*> blocked_;    // ... held back by the server's flow control
  std::vector<request*> resend_;     // queries 0-RTT lost, waiting for a new stream

  // The newest ticket and the server's transport parameters, for the next connection.
  std::vector<std::uint8_t> ticket_;
  ngtcp2_transport_params ticket_parameters_{};
  bool have_ticket_ = false;

  conn_state state_ = conn_state::idle;
  std::uint64_t generation_ = 0;  // of the connection; stale waits and timers check it
  // The connection's life, counted as the stream clients count theirs (its last sign of use:
  // the handshake done, a query sent, packets read).
  connection_life life_{*this};
  std::uint64_t now_ = 0;            // the time of the packets being processed, for the callbacks
  std::uint64_t arrived_ = 0;        // the packet's kernel receive stamp (monotonic; 0: none)
  std::uint64_t timer_at_ = 0;       // when timer_ fires (0: not armed)
  std::uint64_t starved_since_ = 0;  // no stream credit, nothing in flight, since (0: not)
  std::uint64_t streams_limit_ = 0;  // the server's stream limit so far on this connection
  bool streams_raised_ = false;      // the server has raised it (MAX_STREAMS) at least once
  bool early_keys_ = false;          // GnuTLS made 0-RTT keys: queries opened early go in 0-RTT
  bool stateless_reset_ = false;
  // The handshake completed on the packets being read and nothing was written since: our
  // Finished waits for the next write.
  bool finished_unsent_ = false;
  bool waiting_read_ = false;
  bool delay_pending_ = false;  // coalescing: the worker will call read_delayed()

  static constexpr unsigned receive_batch = 16;  // datagrams per recvmmsg
  // Packets made but not sent yet, back to back in the worker's last scratch buffer.
  static constexpr unsigned send_batch = 32;  // packets per sendmmsg
  std::array<iovec, send_batch> outbox_{};
  unsigned outbox_count_ = 0;
  std::size_t outbox_used_ = 0;
  unsigned rounds_ = 0;  // output_rounds under way
};

}  // namespace dnstransport::detail
