// QUIC datagrams into the responder's DNS-over-QUIC listener (doq_listener, its connections
// and their ngtcp2 and GnuTLS sessions), handed over as its socket would (on_datagram, then
// flush), its packets taken with no socket (send_to). The first octet chooses the settings
// (Retry, 0-RTT); then datagrams, each a 2-octet length (its top bit: from a second client
// address; the next: a batch ends after it, so the listener flushes) and its octets. Seeds:
// Initials of the library's DoQ client. The fuzzer cannot finish a handshake (the
// responder's keys are its own), so no client address is ever validated and the listener
// must keep to QUIC's anti-amplification limit (RFC 9000, section 8.1): at most three times
// the octets a client address sent, whatever it sent (Version Negotiation, Retry and stateless
// resets included).
// Not deterministic in what the listener writes (its connection IDs, keys and the reset
// secret are random), only in what it reads: an input is replayed with the same outcome.

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <new>
#include <span>
#include <string>

#include <unistd.h>

#include <dnstransport/server.hpp>
#include <dnstransport/tls.hpp>

#include "fuzz_check.hpp"
#include "responder/server_thread.hpp"
#include "transport/doq/server_doq.hpp"
#include "transport/doq/server_doq_context.hpp"

using namespace dnstransport;
using namespace dnstransport::detail;

namespace {

std::filesystem::path certificate_directory;

void remove_certificates() {
  std::error_code ignored;
  std::filesystem::remove_all(certificate_directory, ignored);
}

server_options make_options(bool retry, bool early_data) {
  static certificate_files certificate = [] {
    certificate_directory = std::filesystem::temp_directory_path() /
                            ("dnstransport-fuzz-doq-" + std::to_string(::getpid()));
    std::atexit(remove_certificates);
    return generate_self_signed_certificate(certificate_directory, "fuzz.test");
  }();
  server_options o;
  o.tls_options.certificate_file = certificate.certificate_file;
  o.tls_options.key_file = certificate.key_file;
  o.doq_retry = retry;
  o.doq_early_data = early_data;
  return o;
}

// The contexts (certificate, ticket key, anti-replay table) are made once, as a responder
// does for all its threads.
const doq_context& context_for(const server_options& options) {
  static std::array<std::unique_ptr<doq_context>, 2> made;
  auto& context = made[options.doq_early_data ? 1 : 0];
  if (!context)
    context = std::make_unique<doq_context>(options.tls_options, options.doq_early_data);
  return *context;
}

sockaddr_storage address_of(std::uint32_t ip, std::uint16_t port) {
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_addr.s_addr = htonl(ip);
  in.sin_port = htons(port);
  sockaddr_storage storage{};
  std::memcpy(&storage, &in, sizeof in);
  return storage;
}

std::uint16_t port_of(const sockaddr_storage& address) {
  sockaddr_in in{};
  std::memcpy(&in, &address, sizeof in);
  return ntohs(in.sin_port);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const server_options options = make_options((data[0] & 1) != 0, (data[0] & 2) != 0);
  const doq_context& context = context_for(options);
  server_thread thread(options, nullptr, nullptr);
  auto listener = std::make_unique<doq_listener>(thread, context);

  const sockaddr_storage local = address_of(0x7f000001, 853);
  const std::array<sockaddr_storage, 2> clients = {address_of(0x7f000002, 40001),
                                                   address_of(0x7f000003, 40002)};
  std::array<std::uint64_t, 2> received{};  // octets from each client
  std::array<std::uint64_t, 2> sent{};      // octets to each client
  listener->send_to([&](std::span<const doq_packet> packets) {
    for (const doq_packet& p : packets) {
      FUZZ_CHECK(p.remote.ss_family == AF_INET);
      const std::uint16_t port = port_of(p.remote);
      FUZZ_CHECK(port == 40001 || port == 40002);
      FUZZ_CHECK(!p.bytes.empty() && p.bytes.size() <= 65527);
      sent[port - 40001] += p.bytes.size();
    }
  });

  std::span<const std::uint8_t> rest(data + 1, size - 1);
  while (rest.size() >= 2) {
    const unsigned head = (unsigned{rest[0]} << 8) | rest[1];
    const unsigned from = head >> 15;
    const bool end_of_batch = (head & 0x4000) != 0;
    const std::size_t length = std::min<std::size_t>(head & 0x3fff, rest.size() - 2);
    const auto datagram = rest.subspan(2, length);
    rest = rest.subspan(2 + length);
    received[from] += datagram.size();
    try {
      listener->on_datagram(datagram, local, sizeof(sockaddr_in), clients[from],
                            sizeof(sockaddr_in));
    } catch (const std::bad_alloc&) {
      // The socket loop drops the datagram; so does the test.
    }
    if (end_of_batch) listener->flush();
  }
  listener->flush();
  for (unsigned i = 0; i < 2; ++i) FUZZ_CHECK(sent[i] <= 3 * received[i]);
  listener.reset();
  return 0;
}
