#pragma once
// Internal: DNS messages with their 2-octet length on a stream client's connection (DNS
// over TCP, RFC 7766; over TLS, RFC 7858). Answers are matched by id in any order. All
// ready queries go out as one gathered write of [length+id][rest] pieces: plain TCP sends
// them without a copy, TLS joins them once.

#include <array>
#include <cstddef>
#include <cstdint>

#include "message/framing.hpp"
#include "transport/stream/stream_client.hpp"
#include "transport/stream/stream_session.hpp"

namespace dnstransport::detail {

class dns_stream_session final : public stream_session {
 public:
  explicit dns_stream_session(stream_client& driver) noexcept : driver_(driver) {}

  bool established(std::uint64_t) override { return true; }
  bool fill(std::uint64_t now) override;
  bool fill_early(std::uint64_t now, std::size_t room) override;
  bool resend_in_flight(std::uint64_t now) override;
  bool read() override;
  bool flush() override { return driver_.after_write(driver_.channel().flush()); }
  bool refuses_queries() const noexcept override { return false; }
  void tick(std::uint64_t) override {}
  void ended() noexcept override {}

 private:
  static constexpr unsigned max_gather = stream_client::max_gather;
  static_assert(max_gather <= client_base::case_pieces, "a scratch piece for each query written");

  // The messages read so far; `arrived`: when the newest of them came, by the kernel's
  // stamp (`now` where the stream has none). False when the connection is gone.
  bool take_messages(std::uint64_t now, std::uint64_t arrived);
  // Writes `batch` queries in one gathered write; the channel keeps what the stream did not
  // take. False if the connection died.
  bool write_queries(std::uint64_t now, unsigned batch);

  stream_client& driver_;
  std::array<std::array<std::uint8_t, frame_prefix_size + 2>, max_gather> heads_{};
};

}  // namespace dnstransport::detail
