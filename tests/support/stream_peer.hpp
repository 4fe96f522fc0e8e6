#pragma once
/// \file
/// Test support: one accepted TCP or TLS connection of the hostile responder, as a script
/// sees it. Every call blocks at most until its deadline or until the responder stops, so a
/// script can be written as straight-line code and still never hangs a test.

#include <time.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "message/framing.hpp"
#include "transport/tls/tls_backend.hpp"

namespace dnstransport::hostile {

using bytes = std::vector<std::uint8_t>;
using std::chrono::microseconds;
using std::chrono::milliseconds;

/// A wait that only the responder's stop (or the connection's end) cuts short.
inline constexpr microseconds forever{-1};

/// `wait` (not negative) as ppoll's time limit.
inline timespec to_timespec(std::chrono::nanoseconds wait) {
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(wait);
  return {static_cast<time_t>(seconds.count()), static_cast<long>((wait - seconds).count())};
}

/// The server side of one connection. Owns the socket.
class stream_peer {
 public:
  /// Takes `fd` (connected, any blocking mode) and, for TLS, the context to accept with.
  /// Every message read is counted in `queries`, shared by all connections of a responder.
  stream_peer(int fd, const std::atomic<bool>& stop, std::atomic<std::uint64_t>& queries,
              detail::tls_server_context* tls);
  ~stream_peer();
  stream_peer(const stream_peer&) = delete;
  stream_peer& operator=(const stream_peer&) = delete;

  /// TLS: runs the server side of the handshake. False when it failed or the client left.
  bool handshake();

  /// The next length-prefixed message the client sent, waiting at most `wait`. Nothing
  /// when the wait ran out, the client closed, the connection broke or the responder stops
  /// (tell them apart with gone()).
  std::optional<bytes> read_message(microseconds wait = forever);
  /// The responder-wide number (0-based) of the message read_message last returned.
  std::uint64_t query_number() const noexcept { return query_number_; }

  /// Raw bytes as they arrive (for TLS: decrypted), at most `max`, waiting at most `wait`.
  /// Empty when nothing came.
  bytes read_some(std::size_t max, microseconds wait = forever);

  /// Sends `data` as it is (TLS: encrypted). False when the connection is gone.
  bool write(std::span<const std::uint8_t> data);
  /// Sends `message` with its 2-octet length prefix.
  bool write_message(std::span<const std::uint8_t> message);
  /// Sends bytes on the socket itself, bypassing TLS (to inject records the session would
  /// never produce).
  bool write_raw(std::span<const std::uint8_t> data);

  /// Graceful end: reads what is already there (so the kernel sends FIN, not RST), TLS
  /// close_notify, close. Idempotent.
  void close();
  /// Abortive end: SO_LINGER 0, so the client gets a reset.
  void reset();
  /// Half-close: FIN towards the client, the read side stays open.
  void shutdown_write();

  /// Waits, without reading, until the client closes, the responder stops or `wait` ends.
  void hold(microseconds wait = forever);
  /// Reads and drops everything until the client closes or the responder stops.
  void discard_until_gone();
  /// Sleeps; cut short when the responder stops.
  void pause(microseconds how_long);

  /// The client closed, the connection broke, or the responder is stopping.
  bool gone() const noexcept { return gone_ || stop_.load(std::memory_order_relaxed); }

 private:
  using time_point = std::chrono::steady_clock::time_point;
  // Waits for `events` on the socket until `deadline` (or forever when unset), in slices
  // short enough to notice the responder stopping. False when the time ran out.
  bool wait_for(short events, std::optional<time_point> deadline);
  // After a TLS call that wants to read or write: waits for that. False when the wait timed
  // out or the call reported the connection closed or broken (which marks it gone).
  bool await_tls(detail::tls_io io, std::optional<time_point> deadline);
  // Reads one chunk into the frame reader; false on timeout or when the connection ended.
  bool fill(std::optional<time_point> deadline);
  // One read into `space`; 0 on timeout or end.
  std::size_t read_into(std::span<std::uint8_t> space, std::optional<time_point> deadline);

  int fd_;
  const std::atomic<bool>& stop_;
  std::atomic<std::uint64_t>& queries_;
  std::uint64_t query_number_ = 0;
  detail::tls_server_context* tls_context_;
  std::unique_ptr<detail::tls_connection> tls_;
  detail::frame_reader reader_;
  bool gone_ = false;
};

}  // namespace dnstransport::hostile
