#pragma once
// Internal: the protocol a stream client runs on its connections, behind one small
// interface. The stream client (stream_client.hpp) is the driver: it connects (Fast Open,
// source addresses), runs the handshake, keeps the resumption ticket, offers early data,
// closes idle and used-up connections, counts connections and waits for readiness. The
// session turns queries into bytes on the connection's message_channel and bytes read into
// answers, through the driver's calls for sessions. Two sessions exist: DNS messages with
// their 2-octet length (DNS over TCP and TLS, dns_stream_session.hpp) and HTTP/2 (DoH,
// transport/doh/doh_client.hpp). A client has one session for all of its connections:
// ended() readies it for the next.

#include <cstddef>
#include <cstdint>

namespace dnstransport::detail {

class stream_session {
 public:
  virtual ~stream_session() = default;

  // The handshake is done: starts the protocol on the connection (DoH checks ALPN and
  // starts HTTP/2 unless early data did). False when it failed the connection (counted).
  virtual bool established(std::uint64_t now) = 0;
  // Sends as many queries as may go now (stream_client::connection_allowance), on the
  // established connection or as early data. False when the connection died doing so.
  virtual bool fill(std::uint64_t now) = 0;
  // 0-RTT: the first queries as early data, in at most `room` octets. False when the
  // connection died.
  virtual bool fill_early(std::uint64_t now, std::size_t room) = 0;
  // The server refused the early data (the output not sent was dropped): every query in
  // flight goes again, with the same id. False when the connection died.
  virtual bool resend_in_flight(std::uint64_t now) = 0;
  // Reads and processes everything available now (answers are timed as each read returns).
  // False when the connection is gone.
  virtual bool read() = 0;
  // Writes the output the stream did not take yet. False when the connection is gone.
  virtual bool flush() = 0;
  // The server takes no new queries on this connection (HTTP/2 GOAWAY, stream ids used
  // up): the driver replaces it once nothing is in flight.
  virtual bool refuses_queries() const noexcept = 0;
  // Queries in flight that are on no connection: they wait to be sent again on a new stream
  // (DoH: the server refused them, or a GOAWAY left them unprocessed). The driver keeps (or
  // opens) a connection for them, and its connection is done once only these are left.
  virtual std::uint32_t waiting() noexcept { return 0; }
  // Periodic work on the established connection, after the driver's (DoH cancels the
  // streams of queries that timed out).
  virtual void tick(std::uint64_t now) = 0;
  // The connection is gone (closed, reset, failed): drops what belonged to it.
  virtual void ended() noexcept = 0;
};

}  // namespace dnstransport::detail
