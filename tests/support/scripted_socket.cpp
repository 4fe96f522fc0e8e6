#include "scripted_socket.hpp"

#include <algorithm>
#include <utility>

#include <boost/asio/post.hpp>

#include "engine/readiness.hpp"
#include "scripted_tls_session.hpp"
#include "transport/stream/byte_stream.hpp"
#include "transport/tls/tls_backend.hpp"

namespace dnstransport::scripted {

std::size_t peer_end::read(std::span<std::uint8_t> out) noexcept {
  const std::size_t n = std::min(out.size(), available());
  std::copy_n(to_client_.begin() + static_cast<std::ptrdiff_t>(read_offset_), n, out.begin());
  read_offset_ += n;
  return n;
}

void peer_end::send(std::span<const std::uint8_t> octets) {
  to_client_.insert(to_client_.end(), octets.begin(), octets.end());
}

namespace {

// One connection: its far end, and whom to tell when the far end has something to read.
struct link {
  std::unique_ptr<peer_end> peer;
  std::function<void()> wake;
  bool write_blocked = false;  // the last write said want_write (want_write_first)
};

class scripted_byte_stream final : public detail::byte_stream {
 public:
  scripted_byte_stream(std::shared_ptr<link> l, const wire_script& wire, wire_log& log)
      : link_(std::move(l)), wire_(wire), log_(log) {
    if (!wire.alpn.empty()) session_ = std::make_unique<scripted_tls_session>(wire.alpn);
  }

  const char* name() const noexcept override { return session_ ? "tls" : "tcp"; }
  bool has_handshake() const noexcept override { return false; }
  detail::stream_io handshake() override { return detail::stream_io::done; }

  detail::stream_io read(std::span<std::uint8_t> buffer, std::size_t& transferred) override {
    peer_end& peer = *link_->peer;
    transferred = 0;
    if (peer.available() == 0) {
      if (peer.resetting()) return detail::stream_io::failed;
      return peer.closing() ? detail::stream_io::closed : detail::stream_io::want_read;
    }
    const auto& pieces = wire_.read_pieces;
    const std::size_t piece = pieces[piece_++ % pieces.size()];
    transferred = peer.read(buffer.first(std::min(piece, buffer.size())));
    ++log_.reads;
    return detail::stream_io::done;
  }

  bool has_buffered_input() const override { return false; }

  detail::stream_io write(std::span<const iovec> pieces, std::size_t& transferred) override {
    link& l = *link_;
    transferred = 0;
    if (l.peer->resetting()) return detail::stream_io::failed;
    if (wire_.want_write_first && !l.write_blocked) {
      l.write_blocked = true;
      return detail::stream_io::want_write;
    }
    l.write_blocked = false;
    const std::size_t offered = detail::total_size(pieces);
    std::size_t room = std::min(offered, wire_.write_limit);
    for (const iovec& piece : pieces) {
      if (room == 0) break;
      const std::size_t n = std::min(room, piece.iov_len);
      l.peer->take({static_cast<const std::uint8_t*>(piece.iov_base), n});
      transferred += n;
      room -= n;
    }
    if (transferred < offered) ++log_.partial_writes;
    if (l.peer->readable() && l.wake) l.wake();
    return detail::stream_io::done;
  }

  void shutdown() override {}
  detail::tls_connection* tls() noexcept override { return session_.get(); }
  std::string failure_cause() const override { return "ECONNRESET"; }
  std::string error_message() const override { return "connection reset by the scripted peer"; }

 private:
  std::shared_ptr<link> link_;
  const wire_script& wire_;
  wire_log& log_;
  std::size_t piece_ = 0;  // index into wire_.read_pieces
  std::unique_ptr<scripted_tls_session> session_;
};

class scripted_socket final : public detail::stream_socket {
 public:
  scripted_socket(boost::asio::io_context& io, ready_callback on_ready, const wire_script& wire,
                  wire_log& log, peer_maker make_peer)
      : io_(io),
        on_ready_(std::move(on_ready)),
        wire_(wire),
        log_(log),
        make_peer_(std::move(make_peer)) {}

  detail::tcp_dial connect(const boost::asio::ip::tcp::endpoint& /*server*/,
                           const detail::tcp_dial_options& /*options*/) override {
    detail::tcp_dial dial;
    if (wire_.connect_error != 0) {
      dial.what = "tcp connect";
      dial.error = wire_.connect_error;
      return dial;
    }
    current_ = std::make_shared<link>();
    current_->peer = make_peer_();
    current_->wake = [this] { wake_reader(); };
    ++log_.connections;
    dial.result = detail::tcp_dial::outcome::in_progress;
    return dial;
  }

  int connect_error() override { return 0; }

  std::unique_ptr<detail::byte_stream> open_stream(
      detail::stream_connector& /*connector*/, const detail::tls_ticket* /*resume_from*/,
      std::unique_ptr<detail::byte_stream> /*spare*/) override {
    return std::make_unique<scripted_byte_stream>(current_, wire_, log_);
  }

  // Writable at once; readable once the peer has something for the client (a peer sends
  // only in answer to what the client writes, or at once when the connection opens, so a
  // quiet peer leaves the wait pending, as a socket would). The callback always runs from
  // the io_context, never inside the call.
  void async_wait(bool readable, std::uint64_t generation) override {
    if (readable && !(current_ && current_->peer->readable())) {
      read_pending_ = true;
      read_generation_ = generation;
      return;
    }
    boost::asio::post(io_, [this, readable, generation] { on_ready_(readable, generation, true); });
  }

  bool syn_data_accepted() override { return false; }
  int send_prefix(std::span<const std::uint8_t>) override { return 0; }
  std::optional<std::uint64_t> established() override {
    if (current_ == nullptr) return std::nullopt;
    return std::uint64_t{0};
  }
  bool is_open() const override { return current_ != nullptr; }

  void close(bool abortive) override {
    if (!current_) return;
    ++log_.closed_by_client;
    if (abortive) ++log_.abortive_closes;
    current_->wake = nullptr;
    current_.reset();
    read_pending_ = false;  // a socket's waits end cancelled; the client ignores them anyway
  }

 private:
  void wake_reader() {
    if (!read_pending_) return;
    read_pending_ = false;
    const std::uint64_t generation = read_generation_;
    boost::asio::post(io_, [this, generation] { on_ready_(true, generation, true); });
  }

  boost::asio::io_context& io_;
  ready_callback on_ready_;
  const wire_script& wire_;
  wire_log& log_;
  peer_maker make_peer_;
  std::shared_ptr<link> current_;
  bool read_pending_ = false;
  std::uint64_t read_generation_ = 0;
};

}  // namespace

detail::stream_socket_factory make_scripted_sockets(const wire_script& wire, wire_log& log,
                                                    peer_maker make_peer) {
  return [&wire, &log, make_peer = std::move(make_peer)](
             detail::readiness_set& readiness, detail::stream_socket::ready_callback cb,
             detail::syscall_counter& /*syscalls: a script makes none*/) {
    return std::make_unique<scripted_socket>(readiness.io(), std::move(cb), wire, log, make_peer);
  };
}

}  // namespace dnstransport::scripted
