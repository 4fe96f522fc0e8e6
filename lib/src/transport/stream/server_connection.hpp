#pragma once
// Internal: one TCP or TLS connection accepted by the built-in responder, on the same
// byte_stream and message_channel as the stream client. Reads whatever is available,
// answers every complete message, writes all answers of a read in one go. Under a rate limit
// (server_options::rate_limit) an answer whose token is not due yet is held: the connection
// stops taking messages and reading, and goes on when its timer brings the token, so its
// answers keep their order and the client is held back by TCP itself.

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "responder/server_thread.hpp"
#include "transport/stream/accepted_stream.hpp"
#include "transport/stream/message_channel.hpp"

namespace dnstransport::detail {

class server_connection : public accepted_stream<server_connection> {
 public:
  // `queries` counts the answers of this listener (TCP or TLS), `edns` says what they give
  // back to the queries' EDNS options.
  server_connection(server_thread& owner, boost::asio::ip::tcp::socket socket,
                    stream_acceptor& streams, std::atomic<std::uint64_t>& queries,
                    const answer_edns& edns);

  void check_idle(std::uint64_t now) override;
  void close() override;

 private:
  void step() override;
  bool read_queries();  // false when the connection closed
  bool answer_buffered();
  // Rate limit: false when the answer in the scratch (`size` octets) must wait; it is then
  // held and the timer set for its token.
  bool admit(std::size_t size, std::uint64_t& now);
  void send_held();
  bool flush();  // false when the connection closed
  void finish_close();

  message_channel channel_;
  boost::asio::steady_timer rate_timer_;
  std::vector<std::uint8_t> held_;  // an answer waiting for its token; empty: none
  std::atomic<std::uint64_t>& queries_;
  const answer_edns& edns_;
  std::uint64_t answered_ = 0;
};

}  // namespace dnstransport::detail
