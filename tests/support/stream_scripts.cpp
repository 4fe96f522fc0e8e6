#include "stream_scripts.hpp"

#include <algorithm>
#include <vector>

#include <dnstransport/message.hpp>

#include "misbehaviour.hpp"

namespace dnstransport::hostile {

namespace {

// Answers `k` queries; false when the connection went away first.
bool answer_some(stream_peer& peer, std::uint64_t k) {
  for (std::uint64_t i = 0; i < k; ++i) {
    const auto query = peer.read_message();
    if (!query || !peer.write_message(answer_to(*query))) return false;
  }
  return true;
}

}  // namespace

connection_script reset_on_accept() {
  return [](stream_peer& peer) { peer.reset(); };
}

connection_script close_at_once() {
  return [](stream_peer& peer) { peer.close(); };
}

connection_script close_after_first_answer() {
  return [](stream_peer& peer) {
    if (!answer_some(peer, 1)) return;
    peer.close();
  };
}

connection_script never_read() {
  return [](stream_peer& peer) { peer.hold(); };
}

connection_script length_longer_than_data() {
  return [](stream_peer& peer) {
    const auto query = peer.read_message();
    if (!query) return;
    const bytes answer = answer_to(*query);
    const std::size_t claimed = answer.size() + 100;
    bytes framed{static_cast<std::uint8_t>(claimed >> 8), static_cast<std::uint8_t>(claimed)};
    framed.insert(framed.end(), answer.begin(), answer.end());
    if (!peer.write(framed)) return;
    peer.discard_until_gone();
  };
}

connection_script zero_length_prefix() {
  return [](stream_peer& peer) {
    if (!peer.read_message()) return;
    const bytes zero{0, 0};
    if (!peer.write(zero)) return;
    peer.discard_until_gone();
  };
}

connection_script one_byte_at_a_time(microseconds gap) {
  return [gap](stream_peer& peer) {
    while (const auto query = peer.read_message()) {
      const bytes answer = answer_to(*query);
      bytes framed{static_cast<std::uint8_t>(answer.size() >> 8),
                   static_cast<std::uint8_t>(answer.size())};
      framed.insert(framed.end(), answer.begin(), answer.end());
      for (const std::uint8_t octet : framed) {
        if (!peer.write(std::span(&octet, 1))) return;
        peer.pause(gap);
      }
    }
  };
}

connection_script reverse_order(std::size_t batch) {
  return [batch](stream_peer& peer) {
    while (auto first = peer.read_message()) {
      std::vector<bytes> queries{std::move(*first)};
      while (queries.size() < batch) {
        auto more = peer.read_message(milliseconds(5));
        if (!more) break;
        queries.push_back(std::move(*more));
      }
      for (auto it = queries.rbegin(); it != queries.rend(); ++it) {
        if (!peer.write_message(answer_to(*it))) return;
      }
    }
  };
}

connection_script one_at_a_time(microseconds think) {
  return [think](stream_peer& peer) {
    while (const auto query = peer.read_message()) {
      peer.pause(think);
      if (!peer.write_message(answer_to(*query))) return;
    }
  };
}

connection_script idle_close(milliseconds idle) {
  return [idle](stream_peer& peer) {
    for (;;) {
      const auto query = peer.read_message(idle);
      if (!query) break;
      if (!peer.write_message(answer_to(*query))) return;
    }
    if (!peer.gone()) peer.close();
  };
}

connection_script close_after(std::uint64_t k) {
  return [k](stream_peer& peer) {
    if (!answer_some(peer, k)) return;
    peer.close();
  };
}

connection_script half_close_after(std::uint64_t k) {
  return [k](stream_peer& peer) {
    if (!answer_some(peer, k)) return;
    peer.shutdown_write();
    peer.discard_until_gone();
  };
}

connection_script flood(std::size_t size) {
  return [size](stream_peer& peer) {
    bytes junk(size, 0x5a);
    for (std::uint16_t id = 0; peer.write_message(junk); ++id) patch_id(junk.data(), id);
  };
}

connection_script plain_dns_reply() {
  return [](stream_peer& peer) {
    if (peer.read_some(4096).empty()) return;
    // A DNS server that cannot parse what it got: FORMERR, id 0, no question.
    const bytes formerr{0, 12, 0, 0, 0x80, 0x01, 0, 0, 0, 0, 0, 0, 0, 0};
    if (!peer.write(formerr)) return;
    peer.close();
  };
}

connection_script stall_handshake() {
  return [](stream_peer& peer) {
    if (peer.read_some(4096).empty()) return;
    peer.hold();
  };
}

connection_script close_after_client_hello() {
  return [](stream_peer& peer) {
    if (peer.read_some(4096).empty()) return;
    peer.close();
  };
}

connection_script alert_after(std::uint64_t k) {
  return [k](stream_peer& peer) {
    if (!answer_some(peer, k)) return;
    // A clear-text record (alert, fatal, internal_error): never valid inside the session.
    const bytes alert{0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x50};
    if (!peer.write_raw(alert)) return;
    peer.hold();
  };
}

}  // namespace dnstransport::hostile
