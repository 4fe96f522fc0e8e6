// A stream client's TCP connection over AF_XDP (xdp_tcp_socket.hpp), and its byte stream.
#include "transport/xdp/xdp_tcp_socket.hpp"

#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <boost/asio/post.hpp>

#include "engine/readiness.hpp"
#include "transport/stream/byte_stream.hpp"
#include "transport/xdp/xdp_run.hpp"
#include "transport/xdp/xdp_tcp_connections.hpp"
#include "transport/xdp/xdp_worker.hpp"
#include "util/receive_time.hpp"
#include "util/socket_util.hpp"

namespace dnstransport::detail {

namespace {

// Plain TCP over the user-space connection: what byte_stream's read and write mean on a
// socket, from the connection's buffers.
class xdp_tcp_stream final : public byte_stream {
 public:
  explicit xdp_tcp_stream(xdp_tcp_socket& socket) : socket_(socket) {}
  void reopen() noexcept { error_ = 0; }

  const char* name() const noexcept override { return "tcp"; }
  bool has_handshake() const noexcept override { return false; }
  stream_io handshake() override { return stream_io::done; }

  stream_io read(std::span<std::uint8_t> buffer, std::size_t& transferred) override {
    xdp_tcp_connection* c = socket_.connection();
    if (c == nullptr) return fail(EBADF);
    transferred = c->read(buffer);
    if (transferred > 0) return stream_io::done;
    if (c->at_end()) return stream_io::closed;
    if (c->error() != 0) return fail(c->error());
    return stream_io::want_read;
  }
  bool has_buffered_input() const override { return false; }
  std::uint64_t newest_arrival() const noexcept override { return socket_.newest_arrival(); }

  stream_io write(std::span<const iovec> pieces, std::size_t& transferred) override {
    xdp_tcp_connection* c = socket_.connection();
    if (c == nullptr) return fail(EBADF);
    if (c->error() != 0) return fail(c->error());
    // Writing after the peer's FIN is allowed in TCP; after a reset or our close it is not.
    if (c->state() != xdp_tcp_connection::phase::established) return fail(EPIPE);
    transferred = socket_.write(pieces);
    return transferred > 0 ? stream_io::done : stream_io::want_write;
  }
  void shutdown() override {}

  std::string failure_cause() const override { return errno_name(error_); }
  std::string error_message() const override {
    return fmt::format("{} ({})", std::strerror(error_), errno_name(error_));
  }

 private:
  stream_io fail(int error) {
    error_ = error;
    return stream_io::failed;
  }

  xdp_tcp_socket& socket_;
  int error_ = 0;
};

}  // namespace

xdp_tcp_socket::xdp_tcp_socket(std::shared_ptr<xdp_run> run, readiness_set& readiness,
                               ready_callback on_ready, syscall_counter& syscalls)
    : run_(std::move(run)),
      readiness_(readiness),
      on_ready_(std::move(on_ready)),
      syscalls_(syscalls) {}

xdp_tcp_socket::~xdp_tcp_socket() {
  if (worker_ == nullptr) return;
  if (port_) worker_->tcp().release(*port_, true);
  worker_->leave_tcp();
}

tcp_dial xdp_tcp_socket::connect(const boost::asio::ip::tcp::endpoint& /*server*/,
                                 const tcp_dial_options& options) {
  close(false);  // the previous connection, if still open
  tcp_dial dial;
  if (worker_ == nullptr) {
    worker_ = run_->worker(readiness_, syscalls_);
    if (worker_ == nullptr) {
      dial.what = "tcp socket";
      dial.error = EMFILE;  // more worker threads than the run has queues: never (xdp_run)
      return dial;
    }
    worker_->join_tcp();
  }
  std::optional<boost::asio::ip::address> source;
  if (options.source != nullptr) source = *options.source;
  port_ = worker_->tcp().open(*this, source);
  if (!port_) {
    dial.what = "tcp bind";
    dial.error = EADDRNOTAVAIL;  // no source port left, or a source of the other family
    return dial;
  }
  dial.result = tcp_dial::outcome::in_progress;
  return dial;
}

xdp_tcp_connection* xdp_tcp_socket::connection() noexcept {
  return port_ ? &worker_->tcp().connection(*port_) : nullptr;
}

int xdp_tcp_socket::connect_error() {
  const xdp_tcp_connection* c = connection();
  if (c == nullptr) return EBADF;
  if (c->error() != 0) return c->error();
  return c->state() == xdp_tcp_connection::phase::syn_sent ? EINPROGRESS : 0;
}

std::unique_ptr<byte_stream> xdp_tcp_socket::open_stream(stream_connector& /*connector*/,
                                                         const tls_ticket* /*resume_from*/,
                                                         std::unique_ptr<byte_stream> spare) {
  // The client's previous stream is over this same socket: used again.
  if (auto* same = dynamic_cast<xdp_tcp_stream*>(spare.get()); same != nullptr) {
    same->reopen();
    return spare;
  }
  return std::make_unique<xdp_tcp_stream>(*this);
}

std::size_t xdp_tcp_socket::write(std::span<const iovec> pieces) {
  return port_ ? worker_->tcp().write(*port_, pieces) : 0;
}

int xdp_tcp_socket::send_prefix(std::span<const std::uint8_t> bytes) {
  const iovec piece{const_cast<std::uint8_t*>(bytes.data()), bytes.size()};
  const std::size_t sent = write({&piece, 1});
  return sent == bytes.size() ? 0 : EAGAIN;
}

std::uint64_t xdp_tcp_socket::newest_arrival() const noexcept {
  if (!port_) return 0;
  const std::uint64_t at = worker_->tcp().newest_arrival(*port_);
  return at == 0 ? 0 : at + receive_clock::read().realtime_ahead;
}

std::optional<std::uint64_t> xdp_tcp_socket::established() {
  const xdp_tcp_connection* c = connection();
  if (c == nullptr || c->state() == xdp_tcp_connection::phase::syn_sent ||
      c->state() == xdp_tcp_connection::phase::closed) {
    return std::nullopt;
  }
  return c->handshake_rtt();
}

bool xdp_tcp_socket::read_ready() noexcept {
  const xdp_tcp_connection* c = connection();
  return c == nullptr || c->has_input() || c->at_end() || c->error() != 0;
}

bool xdp_tcp_socket::write_ready() noexcept {
  // As a kernel socket: writable once connected and its send buffer (the bytes not yet
  // acknowledged) has room, or when writing would fail at once.
  const xdp_tcp_connection* c = connection();
  if (c == nullptr || c->error() != 0) return true;
  switch (c->state()) {
    case xdp_tcp_connection::phase::syn_sent:
      return false;
    case xdp_tcp_connection::phase::established:
      return c->can_write();
    default:
      return true;
  }
}

void xdp_tcp_socket::call_later(bool readable, std::uint64_t token, bool ok) {
  boost::asio::post(readiness_.io(),
                    [this, readable, token, ok] { on_ready_(readable, token, ok); });
}

void xdp_tcp_socket::async_wait(bool readable, std::uint64_t generation) {
  if (readable) {
    read_token_ = generation;
    if (read_ready()) {
      call_later(true, generation, true);
    } else {
      waiting_read_ = true;
    }
    return;
  }
  write_token_ = generation;
  if (write_ready()) {
    call_later(false, generation, true);
  } else {
    waiting_write_ = true;
  }
}

void xdp_tcp_socket::on_events(const xdp_tcp_connection::events& events) {
  // The wait may be for a connection of this socket that is gone: then nothing waits here.
  if (waiting_write_ && (events.writable || events.connected || write_ready())) {
    waiting_write_ = false;
    on_ready_(false, write_token_, true);
  }
  if (waiting_read_ && (events.readable || read_ready())) {
    waiting_read_ = false;
    on_ready_(true, read_token_, true);
  }
}

void xdp_tcp_socket::close(bool abortive) {
  if (waiting_read_) {
    waiting_read_ = false;
    call_later(true, read_token_, false);
  }
  if (waiting_write_) {
    waiting_write_ = false;
    call_later(false, write_token_, false);
  }
  if (!port_) return;
  const std::uint16_t port = *port_;
  port_.reset();
  worker_->tcp().release(port, abortive);
}

stream_socket_factory make_xdp_tcp_sockets(const xdp_settings& settings) {
  xdp_settings tcp = settings;
  tcp.tcp = true;
  auto run = std::make_shared<xdp_run>(tcp);
  return [run](readiness_set& readiness, stream_socket::ready_callback on_ready,
               syscall_counter& syscalls) -> std::unique_ptr<stream_socket> {
    return std::make_unique<xdp_tcp_socket>(run, readiness, std::move(on_ready), syscalls);
  };
}

}  // namespace dnstransport::detail
