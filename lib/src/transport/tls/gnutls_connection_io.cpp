// A GnuTLS session's socket I/O (gnutls_connection's transport functions): reads into a
// read-ahead buffer with the kernel's receive stamp, gathered writes, peeks at the peer's
// input, every system call counted.

#include <gnutls/gnutls.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "transport/tls/gnutls_common.hpp"
#include "util/receive_time.hpp"
#include "util/syscall_counter.hpp"

namespace dnstransport::detail {

void gnutls_connection::count_syscalls(syscall_counter& syscalls) {
  syscalls_ = &syscalls;
  input_ = std::make_unique_for_overwrite<std::uint8_t[]>(input_capacity);
  gnutls_transport_set_ptr(session_, this);
  gnutls_transport_set_pull_function(session_, &pull);
  gnutls_transport_set_pull_timeout_function(session_, &pull_timeout);
  gnutls_transport_set_vec_push_function(session_, &vec_push);
}

ssize_t gnutls_connection::pull(gnutls_transport_ptr_t transport, void* data, std::size_t size) {
  auto* self = static_cast<gnutls_connection*>(transport);
  if (self->read_ahead() == 0) {
    const ssize_t n =
        receive_stamped(self->fd_, self->input_.get(), input_capacity, self->newest_arrival_);
    self->syscalls_->count(n);
    if (n <= 0) return n;  // GnuTLS reads errno, which counting leaves alone
    self->input_begin_ = 0;
    self->input_end_ = static_cast<std::size_t>(n);
  }
  // Fewer octets than asked for are fine: GnuTLS pulls again for the rest.
  const std::size_t taken = std::min(size, self->read_ahead());
  std::memcpy(data, self->input_.get() + self->input_begin_, taken);
  self->input_begin_ += taken;
  return static_cast<ssize_t>(taken);
}

ssize_t gnutls_connection::vec_push(gnutls_transport_ptr_t transport, const giovec_t* pieces,
                                    int count) {
  const auto* self = static_cast<const gnutls_connection*>(transport);
  msghdr message{};
  message.msg_iov = const_cast<giovec_t*>(pieces);
  message.msg_iovlen = static_cast<std::size_t>(count);
  const ssize_t n = ::sendmsg(self->fd_, &message, MSG_NOSIGNAL);
  self->syscalls_->count(n);
  return n;
}

int gnutls_connection::pull_timeout(gnutls_transport_ptr_t transport, unsigned int ms) {
  // Not called on a session without timeouts (GNUTLS_NONBLOCK, no handshake timeout), but
  // GnuTLS's own would take the transport pointer for a descriptor.
  const auto* self = static_cast<const gnutls_connection*>(transport);
  if (self->read_ahead() > 0) return 1;
  pollfd ready{self->fd_, POLLIN, 0};
  const int n = ::poll(&ready, 1, ms == GNUTLS_INDEFINITE_TIMEOUT ? -1 : static_cast<int>(ms));
  self->syscalls_->count(n);
  return n;
}

gnutls_connection::input_state gnutls_connection::peer_input() const noexcept {
  if (read_ahead() > 0) return input_state::waiting;
  std::uint8_t byte = 0;
  const ssize_t n = ::recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  count_syscall(syscalls_, n);
  return n > 0 ? input_state::waiting : n == 0 ? input_state::ended : input_state::none;
}

bool gnutls_connection::peer_closed() const {
  if (read_ahead() > 0) return false;
  char byte;
  const ssize_t n = ::recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  count_syscall(syscalls_, n);
  return n == 0;
}

}  // namespace dnstransport::detail
