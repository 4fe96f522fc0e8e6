#include "scripted_accepted.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include <boost/asio/post.hpp>

#include "scripted_tls_session.hpp"
#include "transport/tls/tls_backend.hpp"

namespace dnstransport::scripted {

using detail::stream_io;

struct accepted_client::wire {
  wire(boost::asio::io_context& context, handshake_script script)
      : io(context), handshake(script) {}

  boost::asio::io_context& io;
  handshake_script handshake;
  std::vector<std::uint8_t> to_responder;
  std::size_t read_offset = 0;
  bool client_fin = false;
  std::vector<std::uint8_t> to_client;
  bool shut_down = false;
  bool fin_sent = false;
  bool closed = false;
  // The responder's read wait that has not ended yet.
  std::shared_ptr<detail::server_stream_connection> waiting;

  bool readable() const noexcept { return read_offset < to_responder.size() || client_fin; }
  void ready(std::shared_ptr<detail::server_stream_connection> connection, bool ok) {
    boost::asio::post(io, [connection = std::move(connection), ok] { connection->ready(ok); });
  }
  void wake() {
    if (waiting && readable()) ready(std::move(waiting), true);
  }
};

namespace {

using wire = accepted_client::wire;

class accepted_stream final : public detail::byte_stream {
 public:
  explicit accepted_stream(std::shared_ptr<wire> w) : wire_(std::move(w)) {
    if (wire_->handshake.resumed_with_early_data)
      session_ = std::make_unique<scripted_tls_session>("", true);
  }

  const char* name() const noexcept override { return session_ ? "tls" : "tcp"; }
  bool has_handshake() const noexcept override { return true; }
  stream_io handshake() override {
    const handshake_script& script = wire_->handshake;
    if (steps_++ < script.waits) return stream_io::want_read;
    return script.fails ? stream_io::failed : stream_io::done;
  }
  stream_io read(std::span<std::uint8_t> buffer, std::size_t& transferred) override {
    wire& w = *wire_;
    transferred = std::min(buffer.size(), w.to_responder.size() - w.read_offset);
    if (transferred == 0) return w.client_fin ? stream_io::closed : stream_io::want_read;
    std::copy_n(w.to_responder.begin() + static_cast<std::ptrdiff_t>(w.read_offset), transferred,
                buffer.begin());
    w.read_offset += transferred;
    return stream_io::done;
  }
  bool has_buffered_input() const override { return false; }
  stream_io write(std::span<const iovec> pieces, std::size_t& transferred) override {
    transferred = 0;
    for (const iovec& piece : pieces) {
      const auto* octets = static_cast<const std::uint8_t*>(piece.iov_base);
      wire_->to_client.insert(wire_->to_client.end(), octets, octets + piece.iov_len);
      transferred += piece.iov_len;
    }
    return stream_io::done;
  }
  void shutdown() override { wire_->shut_down = true; }
  detail::tls_connection* tls() noexcept override { return session_.get(); }
  std::string failure_cause() const override { return "tls_handshake"; }
  std::string error_message() const override { return "the scripted handshake failed"; }

 private:
  std::shared_ptr<wire> wire_;
  std::unique_ptr<scripted_tls_session> session_;
  unsigned steps_ = 0;
};

class accepted_acceptor final : public detail::stream_acceptor {
 public:
  explicit accepted_acceptor(std::shared_ptr<wire> w) : wire_(std::move(w)) {}
  std::unique_ptr<detail::byte_stream> open(int /*fd*/) override {
    return std::make_unique<accepted_stream>(wire_);
  }

 private:
  std::shared_ptr<wire> wire_;
};

class accepted_socket final : public detail::accepted_socket {
 public:
  explicit accepted_socket(std::shared_ptr<wire> w) : wire_(std::move(w)) {}

  int native_handle() noexcept override { return -1; }
  // Writable at once; readable once the client sent something (or its FIN).
  void async_wait(boost::asio::socket_base::wait_type type,
                  std::shared_ptr<detail::server_stream_connection> connection) override {
    wire& w = *wire_;
    if (type == boost::asio::socket_base::wait_read && !w.readable()) {
      w.waiting = std::move(connection);
      return;
    }
    w.ready(std::move(connection), true);
  }
  bool shutdown_send() noexcept override {
    wire_->fin_sent = true;
    return true;
  }
  bool discard_input(std::span<std::uint8_t> /*buffer*/) noexcept override {
    wire_->read_offset = wire_->to_responder.size();
    return !wire_->client_fin;
  }
  // As a socket's, a pending wait ends cancelled.
  void close() noexcept override {
    wire_->closed = true;
    if (wire_->waiting) wire_->ready(std::move(wire_->waiting), false);
  }

 private:
  std::shared_ptr<wire> wire_;
};

}  // namespace

accepted_client::accepted_client(boost::asio::io_context& io, handshake_script handshake)
    : wire_(std::make_shared<wire>(io, handshake)),
      acceptor_(std::make_unique<accepted_acceptor>(wire_)) {}

accepted_client::~accepted_client() {
  wire_->waiting.reset();
}

std::unique_ptr<detail::accepted_socket> accepted_client::socket() {
  return std::make_unique<accepted_socket>(wire_);
}

void accepted_client::send(std::span<const std::uint8_t> octets) {
  wire_->to_responder.insert(wire_->to_responder.end(), octets.begin(), octets.end());
  wire_->wake();
}

void accepted_client::half_close() {
  wire_->client_fin = true;
  wire_->wake();
}

std::vector<std::uint8_t> accepted_client::take_received() {
  return std::exchange(wire_->to_client, {});
}

bool accepted_client::stream_shut_down() const noexcept {
  return wire_->shut_down;
}
bool accepted_client::fin_sent() const noexcept {
  return wire_->fin_sent;
}
bool accepted_client::closed() const noexcept {
  return wire_->closed;
}

}  // namespace dnstransport::scripted
