#pragma once
// Internal: the 0-RTT anti-replay database of a GnuTLS server (RFC 8446, section 8.2:
// ClientHello recording): GnuTLS refuses early data it has not checked against one. One per
// server context, shared by every responder thread (under a mutex): the DoT/DoH listener's
// and the DNS-over-QUIC listener's.

#include <gnutls/gnutls.h>

#include <ctime>
#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

namespace dnstransport::detail {

class gnutls_anti_replay {
 public:
  // Throws setup_error when GnuTLS cannot make one. `refuse_all`: every ClientHello counts
  // as seen before, so all early data is refused (tls_server_options::refuse_early_data).
  explicit gnutls_anti_replay(bool refuse_all = false);
  ~gnutls_anti_replay();
  gnutls_anti_replay(const gnutls_anti_replay&) = delete;
  gnutls_anti_replay& operator=(const gnutls_anti_replay&) = delete;

  // Checks the early data of `session` (a server session with GNUTLS_ENABLE_EARLY_DATA)
  // against this database.
  void enable(gnutls_session_t session) const noexcept {
    gnutls_anti_replay_enable(session, anti_replay_);
  }

 private:
  // GnuTLS stores what it has seen through this function; it answers
  // GNUTLS_E_DB_ENTRY_EXISTS for a ClientHello replayed within the window.
  static int remember(void* self, std::time_t expires, const gnutls_datum_t* key,
                      const gnutls_datum_t* data);

  gnutls_anti_replay_t anti_replay_ = nullptr;
  bool refuse_all_;
  std::mutex seen_mutex_;
  std::unordered_map<std::string, std::time_t> seen_;       // entries until they expire
  std::deque<std::pair<std::time_t, std::string>> expiry_;  // seen_'s keys, oldest first
};

}  // namespace dnstransport::detail
