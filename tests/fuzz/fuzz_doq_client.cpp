// QUIC datagrams into the DNS-over-QUIC client (doq_client*.cpp: ngtcp2 and GnuTLS under
// it), handed over as its socket would (the datagram_socket seam of the unit tests,
// tests/support/scripted_datagram.hpp), its packets taken with no socket. The fuzzer cannot
// finish a handshake (the client's keys are random), so what it reaches is what a server
// can do before one: the input is a list of packets sent on the client's first Initial,
// each an octet (its low two bits: raw octets, Version Negotiation, Retry, an Initial
// CONNECTION_CLOSE; 0x04: a raw packet gets the client's connection IDs in its header;
// 0x80: the packets from it wait for the client's next datagram, as after a Retry, or 2 ms), a
// 2-octet length and its octets (raw: the packet; Version Negotiation: the versions, 4
// octets each; Retry: its connection ID's length and octets, then the token; CONNECTION_CLOSE:
// 8 octets of error code, then the reason). Version Negotiation, Retry and CONNECTION_CLOSE
// are built valid for the client's connection IDs (Retry's integrity tag, the Initial's
// keys), so the client acts on them. When the list is spent, each datagram of that
// connection is answered with a valid Initial CONNECTION_CLOSE, so the connection ends at
// once. The client's next connections reach the library's own DoQ responder
// (tests/support/scripted_quic.hpp), which answers, so the run always finishes: three
// queries, every one sent once and answered (the fuzzed connection never had one), none
// counted twice; the fuzzed connection's failure counted once, at most one Retry followed.
// FUZZ_DOQ_CLIENT_WRITE_SEEDS=DIR writes seeds.

#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <boost/asio/steady_timer.hpp>

#include "fuzz_check.hpp"
#include "scripted_datagram.hpp"
#include "scripted_quic.hpp"
#include "scripted_run.hpp"
#include "transport/doq/doq_transport.hpp"

using namespace dnstransport;
using namespace dnstransport::detail;

namespace {

constexpr std::uint64_t query_count = 3;

using bytes = std::vector<std::uint8_t>;

enum : std::uint8_t {
  op_raw = 0,
  op_version_negotiation = 1,
  op_retry = 2,
  op_close = 3,
  op_patch_ids = 0x04,
  op_wait = 0x80,
};

// The connection IDs of a client's long-header packet; false for anything else.
bool client_ids(std::span<const std::uint8_t> d, ngtcp2_cid& dcid, ngtcp2_cid& scid) {
  if (d.size() < 7 || (d[0] & 0x80) == 0) return false;
  const std::size_t dl = d[5];
  if (dl > NGTCP2_MAX_CIDLEN || d.size() < 7 + dl) return false;
  const std::size_t sl = d[6 + dl];
  if (sl > NGTCP2_MAX_CIDLEN || d.size() < 7 + dl + sl) return false;
  ngtcp2_cid_init(&dcid, d.data() + 6, dl);
  ngtcp2_cid_init(&scid, d.data() + 7 + dl, sl);
  return true;
}

// The server's packets of the first connection, from the fuzzer; the rest of the
// connections go to the honest responder.
class fuzzed_peer final : public scripted::datagram_peer {
 public:
  fuzzed_peer(std::span<const std::uint8_t> input, scripted::datagram_link& link,
              std::unique_ptr<scripted::datagram_peer> honest)
      : rest_(input), link_(link), honest_(std::move(honest)), wait_(link.io()) {}

  void from_client(std::span<const std::vector<std::uint8_t>> datagrams) override {
    std::vector<std::vector<std::uint8_t>> onward;
    for (const auto& d : datagrams) {
      ngtcp2_cid dcid{};
      ngtcp2_cid scid{};
      const bool long_header = client_ids(d, dcid, scid);
      if (!started_ && long_header) {
        started_ = true;
        fuzzed_scid_ = scid;
      }
      if (!long_header || !ngtcp2_cid_eq(&scid, &fuzzed_scid_)) {
        onward.push_back(d);
        continue;
      }
      answer(dcid, scid);
    }
    if (!onward.empty()) honest_->from_client(onward);
  }

 private:
  void answer(const ngtcp2_cid& dcid, const ngtcp2_cid& scid) {
    ++answers_;
    bool first = true;
    while (rest_.size() >= 3) {
      const std::uint8_t op = rest_[0];
      if ((op & op_wait) != 0 && !first) {
        // For the client's next datagram, or 2 ms if none comes (the client ignored what
        // came), so that no input waits for the handshake's timeout.
        wait_.expires_after(std::chrono::milliseconds(2));
        wait_.async_wait(
            [this, answers = answers_, dcid, scid](const boost::system::error_code& ec) {
              if (!ec && answers == answers_) answer(dcid, scid);
            });
        return;
      }
      first = false;
      const std::size_t length =
          std::min<std::size_t>((std::size_t{rest_[1]} << 8) | rest_[2], rest_.size() - 3);
      const auto body = rest_.subspan(3, length);
      rest_ = rest_.subspan(3 + length);
      send(op, body, dcid, scid);
    }
    rest_ = {};
    if (closes_ < 4) {  // the list is spent: the connection ends
      ++closes_;
      close(dcid, scid, 0x0a, {});  // PROTOCOL_VIOLATION
    }
  }

  void send(std::uint8_t op, std::span<const std::uint8_t> body, const ngtcp2_cid& dcid,
            const ngtcp2_cid& scid) {
    switch (op & 3) {
      case op_raw: {
        bytes packet;
        if ((op & op_patch_ids) != 0 && body.size() >= 5 && (body[0] & 0x80) != 0) {
          packet.assign(body.begin(), body.begin() + 5);
          packet.push_back(static_cast<std::uint8_t>(scid.datalen));
          packet.insert(packet.end(), scid.data, scid.data + scid.datalen);
          packet.push_back(static_cast<std::uint8_t>(dcid.datalen));
          packet.insert(packet.end(), dcid.data, dcid.data + dcid.datalen);
          packet.insert(packet.end(), body.begin() + 5, body.end());
        } else if ((op & op_patch_ids) != 0 && !body.empty()) {
          packet.push_back(body[0]);
          packet.insert(packet.end(), scid.data, scid.data + scid.datalen);
          packet.insert(packet.end(), body.begin() + 1, body.end());
        } else {
          packet.assign(body.begin(), body.end());
        }
        if (!packet.empty()) link_.to_client(packet);
        return;
      }
      case op_version_negotiation: {
        std::vector<std::uint32_t> versions;
        for (std::size_t i = 0; i + 4 <= body.size() && versions.size() < 64; i += 4) {
          versions.push_back((std::uint32_t{body[i]} << 24) | (std::uint32_t{body[i + 1]} << 16) |
                             (std::uint32_t{body[i + 2]} << 8) | body[i + 3]);
        }
        const ngtcp2_ssize n = ngtcp2_pkt_write_version_negotiation(
            buffer_.data(), buffer_.size(), op, scid.data, scid.datalen, dcid.data, dcid.datalen,
            versions.data(), versions.size());
        if (n > 0) link_.to_client({buffer_.data(), static_cast<std::size_t>(n)});
        return;
      }
      case op_retry: {
        ngtcp2_cid new_scid{};
        std::size_t used = 0;
        if (!body.empty()) {
          const std::size_t l =
              std::min<std::size_t>(body[0] % (NGTCP2_MAX_CIDLEN + 1), body.size() - 1);
          ngtcp2_cid_init(&new_scid, body.data() + 1, l);
          used = 1 + l;
        }
        // A Retry's connection ID differs from the one the client sent it to (RFC 9000,
        // section 17.2.5.1; ngtcp2 asserts it): a second Retry drawn with the first one's ID
        // gets its last octet changed.
        if (ngtcp2_cid_eq(&new_scid, &dcid)) {
          if (new_scid.datalen == 0) new_scid.datalen = 1;
          new_scid.data[new_scid.datalen - 1] ^= 0xff;
        }
        const auto token = body.subspan(used);
        if (token.empty()) return;  // a Retry has a token (RFC 9000, section 17.2.5)
        const ngtcp2_ssize n =
            ngtcp2_crypto_write_retry(buffer_.data(), buffer_.size(), NGTCP2_PROTO_VER_V1, &scid,
                                      &new_scid, &dcid, token.data(), token.size());
        if (n > 0) link_.to_client({buffer_.data(), static_cast<std::size_t>(n)});
        return;
      }
      default: {
        std::uint64_t code = 0;
        const std::size_t head = std::min<std::size_t>(8, body.size());
        for (std::size_t i = 0; i < head; ++i) code = (code << 8) | body[i];
        close(dcid, scid, code & ((std::uint64_t{1} << 62) - 1), body.subspan(head));
        return;
      }
    }
  }

  void close(const ngtcp2_cid& dcid, const ngtcp2_cid& scid, std::uint64_t code,
             std::span<const std::uint8_t> reason) {
    const ngtcp2_ssize n = ngtcp2_crypto_write_connection_close(
        buffer_.data(), buffer_.size(), NGTCP2_PROTO_VER_V1, &scid, &dcid, code, reason.data(),
        std::min<std::size_t>(reason.size(), 1000));
    if (n > 0) link_.to_client({buffer_.data(), static_cast<std::size_t>(n)});
  }

  std::span<const std::uint8_t> rest_;
  scripted::datagram_link& link_;
  std::unique_ptr<scripted::datagram_peer> honest_;
  ngtcp2_cid fuzzed_scid_{};
  bool started_ = false;
  unsigned closes_ = 0;
  std::uint64_t answers_ = 0;  // calls of answer, so that a wait ended by a datagram is over
  boost::asio::steady_timer wait_;
  std::array<std::uint8_t, 1452> buffer_{};
};

scripted::quic_responder& responder() {
  static const scripted::quic_script script;
  static scripted::quic_responder made(script);
  return made;
}

void write_seeds(const char* directory) {
  const auto put = [&](const std::string& name, const bytes& input) {
    std::ofstream file(std::string(directory) + "/" + name, std::ios::binary);
    file.write(reinterpret_cast<const char*>(input.data()),
               static_cast<std::streamsize>(input.size()));
  };
  const auto op = [](bytes& out, std::uint8_t code, const bytes& body) {
    out.push_back(code);
    out.push_back(static_cast<std::uint8_t>(body.size() >> 8));
    out.push_back(static_cast<std::uint8_t>(body.size()));
    out.insert(out.end(), body.begin(), body.end());
  };
  bytes in;
  put("closed_at_once", in);
  in.clear();
  op(in, op_version_negotiation, {0xff, 0x00, 0x00, 0x1d, 0x0a, 0x0a, 0x0a, 0x0a});
  put("version_negotiation", in);
  in.clear();
  op(in, op_version_negotiation, {0x00, 0x00, 0x00, 0x01});
  put("version_negotiation_listing_ours", in);
  in.clear();
  op(in, op_retry, {8, 1, 2, 3, 4, 5, 6, 7, 8, 't', 'o', 'k', 'e', 'n'});
  put("retry", in);
  in.clear();
  op(in, op_retry, {8, 1, 2, 3, 4, 5, 6, 7, 8, 't', 'o', 'k', 'e', 'n'});
  op(in, op_retry | op_wait, {4, 9, 9, 9, 9, 'a', 'g', 'a', 'i', 'n'});
  op(in, op_close, {0, 0, 0, 0, 0, 0, 0x01, 0x28, 'n', 'o'});  // a TLS alert (40)
  put("retry_twice_then_tls_alert", in);
  in.clear();
  op(in, op_close, {0, 0, 0, 0, 0, 0, 0, 0x02, 'b', 'u', 's', 'y'});
  put("close_refused", in);
  in.clear();
  bytes initial{0xc0, 0, 0, 0, 1};
  initial.resize(1200, 0);
  initial[5] = 0x00;  // token length, then garbage where the length and payload go
  op(in, op_raw | op_patch_ids, initial);
  bytes short_header(40, 0x41);
  short_header[0] = 0x40;
  op(in, op_raw | op_patch_ids, short_header);
  op(in, op_raw, {0x80, 0, 0, 0, 0, 0, 0});  // a Version Negotiation with no IDs
  put("undecryptable_initial_and_short", in);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  if (const char* directory = std::getenv("FUZZ_DOQ_CLIENT_WRITE_SEEDS")) {
    write_seeds(directory);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  scripted::quic_responder& honest = responder();
  const std::span<const std::uint8_t> input(data, size);
  const scripted::socket_script sockets;
  scripted::socket_log socket_log;
  auto honest_peers = honest.peers();
  const doq_transport transport(
      doq_settings{}, honest.client_tls(),
      scripted::make_datagram_socket_factory(
          sockets, socket_log,
          [&](scripted::datagram_link& link,
              unsigned index) -> std::unique_ptr<scripted::datagram_peer> {
            return std::make_unique<fuzzed_peer>(input, link, honest_peers(link, index));
          }));
  scripted::run_shape shape;
  shape.count = query_count;
  shape.outstanding = query_count;
  // A fuzzed connection that never ends (the list waits for a datagram that does not
  // come) fails its handshake after this long; the honest connection's answers take a few
  // milliseconds, far within it, even on a loaded machine.
  shape.timeout_seconds = 0.5;
  const counters counts = scripted::run_on_one_worker(transport, shape);
  const query_counters& q = counts.queries;
  FUZZ_CHECK(q.queries_sent == query_count);
  FUZZ_CHECK(queries_ended(q) == q.queries_sent);
  // Only the honest responder's answers count; the fuzzed connection carried no query.
  FUZZ_CHECK(q.responses_received == query_count);
  FUZZ_CHECK(socket_log.sockets_opened == 1);
  // The fuzzed connection failed, counted once; the honest one carried the queries. A
  // client follows one Retry per connection at most (RFC 9000, section 17.2.5.2), and a
  // Version Negotiation ends it.
  FUZZ_CHECK(counts.connections.failed == 1);
  FUZZ_CHECK(counts.connections.opened == 1);
  FUZZ_CHECK(counts.quic.retries <= 1);
  FUZZ_CHECK(counts.quic.version_negotiation <= 1);
  return 0;
}
