#pragma once
// Internal: the responder's session for DNS over TCP and TLS (RFC 7766, RFC 7858): DNS
// messages with their 2-octet length on the same message_channel as the stream client, run
// by server_stream_connection. Reads whatever is available, answers every complete message,
// writes all answers of a read in one go. Under a rate limit (server_options::rate_limit,
// or rate_limit_per_client for the connection's client) an answer whose token is not due yet is
// held: the session stops taking messages and reading, and goes on when its timer brings the token,
// so its answers keep their order and the client is held back by TCP itself.

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "responder/server_thread.hpp"
#include "transport/stream/message_channel.hpp"
#include "transport/stream/server_stream_connection.hpp"

namespace dnstransport::detail {

class server_dns_session final : public server_session {
 public:
  // `queries` counts the answers of this listener (TCP or TLS), `edns` says what they give
  // back to the queries' EDNS options.
  server_dns_session(server_stream_connection& driver, std::unique_ptr<byte_stream> stream,
                     std::atomic<std::uint64_t>& queries, const answer_edns& edns);

  byte_stream& stream() noexcept override { return channel_.stream(); }
  bool start() override { return true; }
  stream_io read() override;
  stream_io flush() override { return channel_.flush(); }
  bool paused() const noexcept override { return !held_.empty(); }
  bool holds_answers() const noexcept override { return !held_.empty(); }
  bool finished() const noexcept override { return false; }
  bool end_for_idle() override { return true; }
  void on_timer() override;
  bool lingers() const noexcept override { return false; }
  void ended() noexcept override { channel_.close(); }

 private:
  // Answers the complete queries read so far; false to stop reading (closing, or an answer
  // held for the rate limit).
  bool answer_buffered();
  // Rate limit: false when the answer in the scratch (`size` octets) must wait; it is then
  // held and the timer set for its token.
  bool admit(std::size_t size, std::uint64_t& now);

  server_stream_connection& driver_;
  server_thread& owner_;
  message_channel channel_;
  std::vector<std::uint8_t> held_;  // an answer waiting for its token; empty: none
  std::atomic<std::uint64_t>& queries_;
  const answer_edns& edns_;
  std::uint64_t answered_ = 0;
};

// The session of a TCP or TLS connection (`transport`) on `stream`.
std::unique_ptr<server_session> make_server_dns_session(server_stream_connection& driver,
                                                        std::unique_ptr<byte_stream> stream,
                                                        transport_kind transport);

}  // namespace dnstransport::detail
