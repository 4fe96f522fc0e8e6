#pragma once
/// \file
/// Test support: the client's end of one connection the responder accepted, in memory, for
/// the responder's connection driver (server_stream_connection) with no socket. The test
/// sends octets, half-closes, and reads what the responder wrote; the socket and the byte
/// stream it hands the driver carry them, readiness comes through the io_context (a read wait
/// ends once something was sent), and the stream's handshake does what the script says. No
/// socket, no thread, no timing: a run is decided by the script alone.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "transport/stream/byte_stream.hpp"
#include "transport/stream/server_stream_connection.hpp"

namespace dnstransport::scripted {

/// What the accepted stream's handshake does.
struct handshake_script {
  /// Steps that wait to read before the last one (each ends when the client sends).
  unsigned waits = 0;
  /// The last step fails (the peer broke the handshake) instead of finishing.
  bool fails = false;
  /// Done: the stream has a TLS session, which says it resumed a ticket and took 0-RTT.
  bool resumed_with_early_data = false;
};

class accepted_client {
 public:
  accepted_client(boost::asio::io_context& io, handshake_script handshake = {});
  ~accepted_client();
  accepted_client(const accepted_client&) = delete;
  accepted_client& operator=(const accepted_client&) = delete;

  /// The responder's side: its socket (once) and what opens its byte stream.
  std::unique_ptr<detail::accepted_socket> socket();
  detail::stream_acceptor& streams() noexcept { return *acceptor_; }

  /// The client sends `octets`; a read wait of the responder ends.
  void send(std::span<const std::uint8_t> octets);
  /// The client's FIN, after what it sent.
  void half_close();
  /// What the responder wrote and the client has not taken yet.
  std::vector<std::uint8_t> take_received();

  /// How the responder ended: its stream's shutdown (TLS close_notify), its FIN (shutdown
  /// for writing), its close of the socket.
  bool stream_shut_down() const noexcept;
  bool fin_sent() const noexcept;
  bool closed() const noexcept;

  struct wire;

 private:
  std::shared_ptr<wire> wire_;
  std::unique_ptr<detail::stream_acceptor> acceptor_;
};

}  // namespace dnstransport::scripted
