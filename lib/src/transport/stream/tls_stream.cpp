// DNS over TLS behind the byte_stream contract: a tls_connection (OpenSSL or GnuTLS) on the
// socket. A gathered write is copied once into one buffer for the TLS library, which
// encrypts it into as few records as it can.

#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "transport/stream/byte_stream.hpp"
#include "transport/tls/tls_backend.hpp"

namespace dnstransport::detail {

namespace {

stream_io to_stream_io(tls_io r) noexcept {
  switch (r) {
    case tls_io::done:
      return stream_io::done;
    case tls_io::want_read:
      return stream_io::want_read;
    case tls_io::want_write:
      return stream_io::want_write;
    case tls_io::closed:
      return stream_io::closed;
    case tls_io::error:
      break;
  }
  return stream_io::failed;
}

class tls_stream final : public byte_stream {
 public:
  explicit tls_stream(std::unique_ptr<tls_connection> session) : session_(std::move(session)) {}

  const char* name() const noexcept override { return "tls"; }
  bool has_handshake() const noexcept override { return true; }

  stream_io handshake() override {
    const tls_io r = session_->handshake();
    if (r == tls_io::done) early_ = false;
    // A peer that hangs up in the handshake did not finish it: a failure, not a close.
    if (r == tls_io::closed) {
      closed_in_handshake_ = true;
      return stream_io::failed;
    }
    return to_stream_io(r);
  }

  stream_io read(std::span<std::uint8_t> buffer, std::size_t& transferred) override {
    return to_stream_io(session_->read(buffer.data(), buffer.size(), transferred));
  }

  bool has_buffered_input() const override { return session_->pending() > 0; }
  std::uint64_t newest_arrival() const noexcept override { return session_->newest_arrival(); }
  bool reads_by_record() const noexcept override { return true; }

  stream_io write(std::span<const iovec> pieces, std::size_t& transferred) override {
    const std::uint8_t* data;
    std::size_t size;
    if (pieces.size() == 1) {
      data = static_cast<const std::uint8_t*>(pieces[0].iov_base);
      size = pieces[0].iov_len;
    } else {
      joined_.resize(total_size(pieces));
      std::size_t at = 0;
      for (const iovec& piece : pieces) {
        std::memcpy(joined_.data() + at, piece.iov_base, piece.iov_len);
        at += piece.iov_len;
      }
      data = joined_.data();
      size = joined_.size();
    }
    // The library takes a record at a time: keep going while it takes more.
    transferred = 0;
    while (transferred < size) {
      std::size_t n = 0;
      const tls_io r = early_ ? session_->write_early(data + transferred, size - transferred, n)
                              : session_->write(data + transferred, size - transferred, n);
      if (r != tls_io::done) {
        if (transferred > 0 && (r == tls_io::want_read || r == tls_io::want_write)) break;
        return to_stream_io(r);
      }
      transferred += n;
    }
    return stream_io::done;
  }

  std::size_t begin_early_data() override {
    const std::size_t room = session_->early_data_room();
    early_ = room > 0;
    return room;
  }

  void shutdown() override { session_->shutdown(); }

  tls_connection* tls() noexcept override { return session_.get(); }

  std::string failure_cause() const override {
    if (closed_in_handshake_) return "tls_closed";
    return fmt::format("tls_{}", tls_failure_name(session_->failure()));
  }
  std::string error_message() const override {
    if (closed_in_handshake_) return "the peer closed the connection";
    return session_->error_message();
  }

 private:
  std::unique_ptr<tls_connection> session_;
  std::vector<std::uint8_t> joined_;  // a gathered write, joined for the library
  bool closed_in_handshake_ = false;
  bool early_ = false;  // writes are early data until the handshake is done
};

class tls_connector final : public stream_connector {
 public:
  explicit tls_connector(tls_client_context& context) : context_(context) {}
  explicit tls_connector(std::unique_ptr<tls_client_context> owned)
      : owned_(std::move(owned)), context_(*owned_) {}
  std::unique_ptr<byte_stream> open(int fd, const tls_ticket* resume_from,
                                    std::unique_ptr<byte_stream> /*spare*/,
                                    syscall_counter* syscalls) override {
    std::unique_ptr<tls_connection> session = context_.connect(fd, resume_from);
    if (syscalls != nullptr) session->count_syscalls(*syscalls);
    return std::make_unique<tls_stream>(std::move(session));
  }
  verified_chains::counts certificate_checks() const override {
    return context_.certificate_checks();
  }

 private:
  std::unique_ptr<tls_client_context> owned_;
  tls_client_context& context_;
};

class tls_acceptor final : public stream_acceptor {
 public:
  explicit tls_acceptor(tls_server_context& context) : context_(context) {}
  std::unique_ptr<byte_stream> open(int fd) override {
    return std::make_unique<tls_stream>(context_.accept(fd));
  }

 private:
  tls_server_context& context_;
};

}  // namespace

std::unique_ptr<stream_connector> make_tls_connector(tls_client_context& context) {
  return std::make_unique<tls_connector>(context);
}

std::unique_ptr<stream_connector> make_tls_connector(std::unique_ptr<tls_client_context> context) {
  return std::make_unique<tls_connector>(std::move(context));
}

std::unique_ptr<stream_acceptor> make_tls_acceptor(tls_server_context& context) {
  return std::make_unique<tls_acceptor>(context);
}

}  // namespace dnstransport::detail
