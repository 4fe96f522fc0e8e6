#include "transport/tls/gnutls_anti_replay.hpp"

#include <fmt/format.h>

#include <dnstransport/error.hpp>

namespace dnstransport::detail {

gnutls_anti_replay::gnutls_anti_replay(bool refuse_all) : refuse_all_(refuse_all) {
  if (const int result = gnutls_anti_replay_init(&anti_replay_); result < 0) {
    throw setup_error(
        fmt::format("cannot set up the 0-RTT anti-replay check: {}", gnutls_strerror(result)));
  }
  gnutls_anti_replay_set_add_function(anti_replay_, &gnutls_anti_replay::remember);
  gnutls_anti_replay_set_ptr(anti_replay_, this);
}

gnutls_anti_replay::~gnutls_anti_replay() {
  gnutls_anti_replay_deinit(anti_replay_);
}

int gnutls_anti_replay::remember(void* self, std::time_t expires, const gnutls_datum_t* key,
                                 const gnutls_datum_t*) {
  auto& table = *static_cast<gnutls_anti_replay*>(self);
  if (table.refuse_all_) return GNUTLS_E_DB_ENTRY_EXISTS;
  const std::lock_guard lock(table.seen_mutex_);  // every responder thread's handshakes
  const std::time_t now = std::time(nullptr);
  // Entries expire in about the order they were added (GnuTLS gives each the same window):
  // the oldest go from the front of the queue, so no handshake scans the table. (A scan
  // once the table held 4096 entries cost half the responder's CPU at 3,000 resumed
  // connections a second.)
  while (!table.expiry_.empty() && table.expiry_.front().first < now) {
    const auto found = table.seen_.find(table.expiry_.front().second);
    if (found != table.seen_.end() && found->second < now) table.seen_.erase(found);
    table.expiry_.pop_front();
  }
  std::string k(reinterpret_cast<const char*>(key->data), key->size);
  const auto [where, added] = table.seen_.try_emplace(k, expires);
  if (!added) {
    if (where->second >= now) return GNUTLS_E_DB_ENTRY_EXISTS;
    where->second = expires;
  }
  table.expiry_.emplace_back(expires, std::move(k));
  return 0;
}

}  // namespace dnstransport::detail
