// A program's own stream transport's user_stream behind the byte_stream contract.
#include "transport/stream/user_stream.hpp"

#include <algorithm>
#include <array>
#include <exception>
#include <functional>
#include <string>
#include <utility>

#include <fmt/format.h>

namespace dnstransport::detail {

namespace {

stream_io io_of(stream_status status) noexcept {
  switch (status) {
    case stream_status::done:
      return stream_io::done;
    case stream_status::want_read:
      return stream_io::want_read;
    case stream_status::want_write:
      return stream_io::want_write;
    case stream_status::closed:
      return stream_io::closed;
    case stream_status::failed:
      break;
  }
  return stream_io::failed;
}

// A user_stream as a byte_stream. Without a stream (its factory made none, or threw), every
// step fails, with the reason as the failure: the connection fails, the load goes on. So does
// a step that throws: the program's code never ends a worker thread.
class user_byte_stream final : public byte_stream {
 public:
  user_byte_stream(const user_transport& user, std::unique_ptr<user_stream> stream,
                   std::string no_stream)
      : user_(&user), stream_(std::move(stream)), why_(std::move(no_stream)) {}

  const char* name() const noexcept override { return user_->name.c_str(); }
  bool has_handshake() const noexcept override { return user_->has_handshake; }
  stream_io handshake() override {
    return guarded([&] { return stream_->handshake(); });
  }

  stream_io read(std::span<std::uint8_t> buffer, std::size_t& transferred) override {
    transferred = 0;
    return guarded([&] { return stream_->read(buffer, transferred); });
  }

  bool has_buffered_input() const override {
    try {
      return stream_ && why_.empty() && stream_->has_buffered_input();
    } catch (...) {
      return false;
    }
  }

  stream_io write(std::span<const iovec> pieces, std::size_t& transferred) override {
    transferred = 0;
    // At most a batch's worth of pieces at a time: a write may take fewer than all.
    std::array<std::span<const std::uint8_t>, 64> spans;
    const std::size_t n = std::min(pieces.size(), spans.size());
    for (std::size_t i = 0; i < n; ++i) {
      spans[i] = {static_cast<const std::uint8_t*>(pieces[i].iov_base), pieces[i].iov_len};
    }
    return guarded([&] { return stream_->write(std::span(spans.data(), n), transferred); });
  }

  void shutdown() override {
    if (!stream_) return;
    try {
      stream_->shutdown();
    } catch (...) {
      // Shutting down is the connection's end: nothing is left to fail.
    }
  }

  std::string failure_cause() const override {
    if (!stream_) return "no_stream";
    if (!why_.empty()) return "exception";
    try {
      return stream_->failure_cause();
    } catch (...) {
      return "exception";
    }
  }

  std::string error_message() const override {
    if (!why_.empty()) return why_;
    try {
      return stream_->error_message();
    } catch (...) {
      return failure_cause();
    }
  }

 private:
  // A step of the user's stream; failed without a stream, or when it throws.
  template <typename Step>
  stream_io guarded(Step step) noexcept {
    if (!stream_ || !why_.empty()) return stream_io::failed;
    try {
      return io_of(step());
    } catch (const std::exception& e) {
      why_ = fmt::format("{}: the stream threw: {}", user_->name, e.what());
    } catch (...) {
      why_ = fmt::format("{}: the stream threw", user_->name);
    }
    return stream_io::failed;
  }

  const user_transport* user_;
  std::unique_ptr<user_stream> stream_;
  std::string why_;  // why it failed outside the user's stream (no stream, an exception)
};

std::unique_ptr<byte_stream> open_user_stream(
    const user_transport& user, const std::function<std::unique_ptr<user_stream>(int)>& factory,
    int fd) noexcept {
  std::unique_ptr<user_stream> stream;
  std::string why;
  try {
    stream = factory(fd);
    if (!stream)
      why = fmt::format("{}: the transport made no stream for the connection", user.name);
  } catch (const std::exception& e) {
    why = fmt::format("{}: the transport's stream factory failed: {}", user.name, e.what());
  } catch (...) {
    why = fmt::format("{}: the transport's stream factory failed", user.name);
  }
  return std::make_unique<user_byte_stream>(user, std::move(stream), std::move(why));
}

class user_connector final : public stream_connector {
 public:
  explicit user_connector(const user_transport& user) : user_(&user) {}
  std::unique_ptr<byte_stream> open(int fd, const tls_ticket* /*resume_from*/,
                                    std::unique_ptr<byte_stream> /*spare*/,
                                    syscall_counter* /*syscalls*/) override {
    return open_user_stream(*user_, user_->client, fd);
  }

 private:
  const user_transport* user_;
};

class user_acceptor final : public stream_acceptor {
 public:
  explicit user_acceptor(const user_transport& user) : user_(&user) {}
  std::unique_ptr<byte_stream> open(int fd) override {
    return open_user_stream(*user_, user_->server, fd);
  }

 private:
  const user_transport* user_;
};

}  // namespace

std::unique_ptr<stream_connector> make_user_connector(const user_transport& user) {
  return std::make_unique<user_connector>(user);
}

std::unique_ptr<stream_acceptor> make_user_acceptor(const user_transport& user) {
  if (!user.server) return nullptr;
  return std::make_unique<user_acceptor>(user);
}

}  // namespace dnstransport::detail
