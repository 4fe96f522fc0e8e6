#include "scripted_stream.hpp"

#include <algorithm>
#include <memory>
#include <span>
#include <vector>

#include "message/framing.hpp"

namespace dnstransport::scripted {

namespace {

// The DNS peer of one connection: reads the client's length-prefixed queries and echoes each
// as its answer, as the script says.
class dns_echo_peer final : public peer_end {
 public:
  dns_echo_peer(const peer_script& script, peer_log& log) : script_(script), log_(log) {}

  void take(std::span<const std::uint8_t> octets) override {
    while (!octets.empty()) {
      const auto space = from_client_.prepare();
      const std::size_t n = std::min(space.size(), octets.size());
      std::copy_n(octets.begin(), n, space.begin());
      from_client_.commit(n);
      octets = octets.subspan(n);
    }
    std::span<const std::uint8_t> query;
    while (from_client_.next(query) == detail::frame_reader::result::message) {
      ++log_.queries_received;
      if (answered_ + held_.size() >= script_.answers_per_connection) continue;
      if (query.size() < 12) continue;
      send_answer(query);
      if (answered_ == script_.answers_per_connection &&
          script_.after_answers != peer_script::then::keep_reading) {
        end_after_sending(script_.after_answers == peer_script::then::reset);
      }
    }
  }

 private:
  void send_answer(std::span<const std::uint8_t> query) {
    std::vector<std::uint8_t> answer(query.begin(), query.end());
    answer[2] |= 0x80;  // QR: the echoed query is its own answer (NOERROR, no records)
    held_.push_back(std::move(answer));
    if (held_.size() < script_.reverse_batch) return;
    for (auto it = held_.rbegin(); it != held_.rend(); ++it) {
      const bool zero = script_.zero_length_first && answered_ == 0;
      const std::size_t size = zero ? 0 : it->size();
      const std::uint8_t prefix[2] = {static_cast<std::uint8_t>(size >> 8),
                                      static_cast<std::uint8_t>(size & 0xff)};
      send(prefix);
      if (!zero) send(*it);
      ++answered_;
      ++log_.answers_sent;
    }
    held_.clear();
  }

  const peer_script& script_;
  peer_log& log_;
  detail::frame_reader from_client_;
  std::vector<std::vector<std::uint8_t>> held_;  // answers waiting for a reverse batch
  std::uint64_t answered_ = 0;
};

}  // namespace

detail::stream_socket_factory make_socket_factory(const peer_script& script, peer_log& log) {
  return make_scripted_sockets(script, log, [&script, &log]() -> std::unique_ptr<peer_end> {
    return std::make_unique<dns_echo_peer>(script, log);
  });
}

}  // namespace dnstransport::scripted
