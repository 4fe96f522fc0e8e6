#include "scripted_stream.hpp"

#include <algorithm>
#include <cerrno>
#include <functional>
#include <memory>

#include <boost/asio/post.hpp>

#include "engine/readiness.hpp"
#include "message/framing.hpp"
#include "transport/stream/byte_stream.hpp"
#include "transport/tls/tls_backend.hpp"

namespace dnstransport::scripted {

namespace {

// One connection as the peer sees it: the octets on their way to the client, and the
// peer's reading of what the client wrote.
struct connection {
  const peer_script& script;
  peer_log& log;
  std::vector<std::uint8_t> to_client;
  std::size_t read_offset = 0;
  std::size_t piece = 0;  // index into script.read_pieces
  detail::frame_reader from_client;
  std::vector<std::vector<std::uint8_t>> held;  // answers waiting for a reverse batch
  std::uint64_t answered = 0;
  bool peer_closed = false;  // EOF once to_client is drained
  bool peer_reset = false;   // failure once to_client is drained
  bool write_blocked = false;
  std::function<void()> wake;  // tells the socket that the client has something to read

  connection(const peer_script& s, peer_log& l) : script(s), log(l) {}

  std::size_t available() const { return to_client.size() - read_offset; }
  bool readable() const { return available() > 0 || peer_closed || peer_reset; }

  void send_answer(std::span<const std::uint8_t> query) {
    std::vector<std::uint8_t> answer(query.begin(), query.end());
    answer[2] |= 0x80;  // QR: the echoed query is its own answer (NOERROR, no records)
    held.push_back(std::move(answer));
    if (held.size() < script.reverse_batch) return;
    for (auto it = held.rbegin(); it != held.rend(); ++it) {
      const bool zero = script.zero_length_first && answered == 0;
      const std::size_t size = zero ? 0 : it->size();
      to_client.push_back(static_cast<std::uint8_t>(size >> 8));
      to_client.push_back(static_cast<std::uint8_t>(size & 0xff));
      if (!zero) to_client.insert(to_client.end(), it->begin(), it->end());
      ++answered;
      ++log.answers_sent;
    }
    held.clear();
  }

  void take(std::span<const std::uint8_t> octets) {
    while (!octets.empty()) {
      const auto space = from_client.prepare();
      const std::size_t n = std::min(space.size(), octets.size());
      std::copy_n(octets.begin(), n, space.begin());
      from_client.commit(n);
      octets = octets.subspan(n);
    }
    std::span<const std::uint8_t> query;
    while (from_client.next(query) == detail::frame_reader::result::message) {
      ++log.queries_received;
      if (answered + held.size() >= script.answers_per_connection) continue;
      if (query.size() < 12) continue;
      send_answer(query);
      if (answered == script.answers_per_connection) {
        peer_closed = script.after_answers == peer_script::then::close;
        peer_reset = script.after_answers == peer_script::then::reset;
      }
    }
    if (readable() && wake) wake();
  }
};

class scripted_byte_stream final : public detail::byte_stream {
 public:
  explicit scripted_byte_stream(std::shared_ptr<connection> c) : c_(std::move(c)) {}

  const char* name() const noexcept override { return "tcp"; }
  bool has_handshake() const noexcept override { return false; }
  detail::stream_io handshake() override { return detail::stream_io::done; }

  detail::stream_io read(std::span<std::uint8_t> buffer, std::size_t& transferred) override {
    connection& c = *c_;
    transferred = 0;
    if (c.available() == 0) {
      if (c.peer_reset) return detail::stream_io::failed;
      return c.peer_closed ? detail::stream_io::closed : detail::stream_io::want_read;
    }
    const auto& pieces = c.script.read_pieces;
    const std::size_t piece = pieces[c.piece++ % pieces.size()];
    transferred = std::min({piece, c.available(), buffer.size()});
    std::copy_n(c.to_client.begin() + static_cast<std::ptrdiff_t>(c.read_offset), transferred,
                buffer.begin());
    c.read_offset += transferred;
    ++c.log.reads;
    return detail::stream_io::done;
  }

  bool has_buffered_input() const override { return false; }

  detail::stream_io write(std::span<const iovec> pieces, std::size_t& transferred) override {
    connection& c = *c_;
    transferred = 0;
    if (c.peer_reset) return detail::stream_io::failed;
    if (c.script.want_write_first && !c.write_blocked) {
      c.write_blocked = true;
      return detail::stream_io::want_write;
    }
    c.write_blocked = false;
    const std::size_t offered = detail::total_size(pieces);
    std::size_t room = std::min(offered, c.script.write_limit);
    for (const iovec& piece : pieces) {
      if (room == 0) break;
      const std::size_t n = std::min(room, piece.iov_len);
      c.take({static_cast<const std::uint8_t*>(piece.iov_base), n});
      transferred += n;
      room -= n;
    }
    if (transferred < offered) ++c.log.partial_writes;
    return detail::stream_io::done;
  }

  void shutdown() override {}
  std::string failure_cause() const override { return "ECONNRESET"; }
  std::string error_message() const override { return "connection reset by the scripted peer"; }

 private:
  std::shared_ptr<connection> c_;
};

class scripted_socket final : public detail::stream_socket {
 public:
  scripted_socket(boost::asio::io_context& io, ready_callback on_ready, const peer_script& script,
                  peer_log& log)
      : io_(io), on_ready_(std::move(on_ready)), script_(script), log_(log) {}

  detail::tcp_dial connect(const boost::asio::ip::tcp::endpoint& /*server*/,
                           const detail::tcp_dial_options& /*options*/) override {
    detail::tcp_dial dial;
    if (script_.connect_error != 0) {
      dial.what = "tcp connect";
      dial.error = script_.connect_error;
      return dial;
    }
    current_ = std::make_shared<connection>(script_, log_);
    current_->wake = [this] { wake_reader(); };
    ++log_.connections;
    dial.result = detail::tcp_dial::outcome::in_progress;
    return dial;
  }

  int connect_error() override { return 0; }

  std::unique_ptr<detail::byte_stream> open_stream(
      detail::stream_connector& /*connector*/, const detail::tls_ticket* /*resume_from*/,
      std::unique_ptr<detail::byte_stream> /*spare*/) override {
    return std::make_unique<scripted_byte_stream>(current_);
  }

  // Writable at once; readable once the peer has something for the client (answers come
  // only from what the client writes, so a quiet peer leaves the wait pending, as a socket
  // would). The callback always runs from the io_context, never inside the call.
  void async_wait(bool readable, std::uint64_t generation) override {
    if (readable && !(current_ && current_->readable())) {
      read_pending_ = true;
      read_generation_ = generation;
      return;
    }
    boost::asio::post(io_, [this, readable, generation] { on_ready_(readable, generation, true); });
  }

  bool syn_data_accepted() override { return false; }
  bool established() override { return current_ != nullptr; }
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
  const peer_script& script_;
  peer_log& log_;
  std::shared_ptr<connection> current_;
  bool read_pending_ = false;
  std::uint64_t read_generation_ = 0;
};

}  // namespace

detail::stream_socket_factory make_socket_factory(const peer_script& script, peer_log& log) {
  return [&script, &log](detail::readiness_set& readiness, detail::stream_socket::ready_callback cb,
                         detail::syscall_counter& /*syscalls: a script makes none*/) {
    return std::make_unique<scripted_socket>(readiness.io(), std::move(cb), script, log);
  };
}

}  // namespace dnstransport::scripted
