#include <dnstransport/pcap.hpp>

#include <arpa/inet.h>
#include <pcap/pcap.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include <dnstransport/error.hpp>

#include "query/pcap_decode.hpp"

namespace dnstransport {

namespace {

using detail::decoded_packet;
using detail::message_kind;

struct pcap_closer {
  void operator()(pcap_t* p) const noexcept { pcap_close(p); }
};
using pcap_ptr = std::unique_ptr<pcap_t, pcap_closer>;

// One direction of a TCP connection.
using flow_key = std::tuple<bool, std::array<std::uint8_t, 16>, std::array<std::uint8_t, 16>,
                            std::uint16_t, std::uint16_t>;

// The part of a DNS message seen so far on a flow, waiting for the segment that follows.
struct partial_message {
  std::uint32_t next_sequence = 0;
  std::uint64_t time_ns = 0;  // of the segment that began it
  std::vector<std::uint8_t> bytes;
};

class capture_builder {
 public:
  capture_builder(std::string_view source_name, const pcap_options& options) : options_(options) {
    capture_.queries.set_origin(std::string(source_name));
  }

  void add_frame(detail::link_kind link, std::span<const std::uint8_t> frame,
                 std::uint64_t time_ns) {
    pcap_counts& c = capture_.counts;
    ++c.packets;
    const decoded_packet p = detail::decode_frame(link, frame);
    switch (p.what) {
      case decoded_packet::kind::malformed:
        ++c.malformed;
        return;
      case decoded_packet::kind::fragment:
        ++c.fragments;
        return;
      case decoded_packet::kind::not_ip_transport:
        ++c.not_dns;
        return;
      case decoded_packet::kind::udp:
      case decoded_packet::kind::tcp:
        break;
    }
    if (!is_dns_port(p.source_port) && !is_dns_port(p.destination_port)) {
      ++c.not_dns;
      return;
    }
    if (p.what == decoded_packet::kind::udp) {
      add_message(p, p.payload, time_ns);
    } else {
      add_segment(p, time_ns);
    }
  }

  pcap_capture finish() {
    capture_.counts.tcp_incomplete += flows_.size();
    flows_.clear();
    return std::move(capture_);
  }

 private:
  bool is_dns_port(std::uint16_t port) const noexcept {
    return std::find(options_.ports.begin(), options_.ports.end(), port) != options_.ports.end();
  }

  void add_message(const decoded_packet& p, std::span<const std::uint8_t> message,
                   std::uint64_t time_ns) {
    pcap_counts& c = capture_.counts;
    switch (detail::classify_message(message)) {
      case message_kind::response:
        ++c.responses;
        return;
      case message_kind::other_dns:
        ++c.other_dns;
        return;
      case message_kind::malformed:
        ++c.malformed;
        return;
      case message_kind::query:
        break;
    }
    std::vector<std::uint8_t> query(message.begin(), message.end());
    patch_id(query.data(), 0);
    capture_.queries.add(query);
    capture_.times_ns.push_back(time_ns);
    capture_.clients.push_back(client_of(p));
    ++c.queries;
  }

  // The DNS messages of a TCP segment, each after its 2-octet length (RFC 7766 §8); a message
  // that goes on past the segment waits for the flow's next segment.
  void add_segment(const decoded_packet& p, std::uint64_t time_ns) {
    pcap_counts& c = capture_.counts;
    if (p.payload.empty()) {
      ++c.tcp_without_data;
      return;
    }
    const flow_key key{p.ipv6, p.source, p.destination, p.source_port, p.destination_port};
    std::vector<std::uint8_t> joined;
    std::span<const std::uint8_t> data = p.payload;
    std::uint64_t first_time = time_ns;
    if (const auto it = flows_.find(key); it != flows_.end()) {
      if (it->second.next_sequence == p.tcp_sequence) {
        joined = std::move(it->second.bytes);
        joined.insert(joined.end(), data.begin(), data.end());
        data = joined;
        first_time = it->second.time_ns;
      } else {
        ++c.tcp_incomplete;
      }
      flows_.erase(it);
    }
    while (!data.empty()) {
      const std::size_t length = data.size() >= 2 ? (std::size_t{data[0]} << 8) | data[1] : 0;
      if (data.size() < 2 || data.size() - 2 < length) {
        partial_message& rest = flows_[key];
        rest.next_sequence = p.tcp_sequence + static_cast<std::uint32_t>(p.payload.size());
        rest.time_ns = first_time;
        rest.bytes.assign(data.begin(), data.end());
        return;
      }
      add_message(p, data.subspan(2, length), first_time);
      data = data.subspan(2 + length);
      first_time = time_ns;
    }
  }

  std::uint32_t client_of(const decoded_packet& p) {
    const auto [it, added] = client_index_.try_emplace(
        std::make_pair(p.ipv6, p.source), static_cast<std::uint32_t>(capture_.sources.size()));
    if (added) {
      char text[INET6_ADDRSTRLEN] = {};
      inet_ntop(p.ipv6 ? AF_INET6 : AF_INET, p.source.data(), text, sizeof text);
      capture_.sources.emplace_back(text);
    }
    return it->second;
  }

  const pcap_options& options_;
  pcap_capture capture_;
  std::map<flow_key, partial_message> flows_;
  std::map<std::pair<bool, std::array<std::uint8_t, 16>>, std::uint32_t> client_index_;
};

std::string counts_text(const pcap_counts& c) {
  return fmt::format(
      "{} packets: {} responses, {} other DNS, {} not DNS, {} TCP without data, {} fragments, "
      "{} malformed, {} incomplete TCP messages",
      c.packets, c.responses, c.other_dns, c.not_dns, c.tcp_without_data, c.fragments, c.malformed,
      c.tcp_incomplete);
}

}  // namespace

bool looks_like_pcap(std::span<const std::uint8_t> head) noexcept {
  if (head.size() < 4) return false;
  const std::uint32_t big = (std::uint32_t{head[0]} << 24) | (std::uint32_t{head[1]} << 16) |
                            (std::uint32_t{head[2]} << 8) | head[3];
  const std::uint32_t little = (std::uint32_t{head[3]} << 24) | (std::uint32_t{head[2]} << 16) |
                               (std::uint32_t{head[1]} << 8) | head[0];
  for (const std::uint32_t magic : {big, little}) {
    if (magic == 0xa1b2c3d4 || magic == 0xa1b23c4d) return true;
  }
  return big == 0x0a0d0d0a;  // pcapng Section Header Block (a palindrome)
}

namespace {

// Every record of the capture in `file`, which this closes.
pcap_capture read_records(std::FILE* file, std::string_view source_name,
                          const pcap_options& options) {
  char error[PCAP_ERRBUF_SIZE] = {};
  pcap_ptr pcap(pcap_fopen_offline_with_tstamp_precision(file, PCAP_TSTAMP_PRECISION_NANO, error));
  if (!pcap) {
    std::fclose(file);
    throw setup_error(fmt::format("{}: not a capture libpcap reads: {}", source_name, error));
  }
  const int dlt = pcap_datalink(pcap.get());
  const auto link = detail::link_kind_of(dlt);
  if (!link) {
    const char* name = pcap_datalink_val_to_name(dlt);
    throw setup_error(fmt::format(
        "{}: link type {} ({}) is not supported (Ethernet, Linux cooked, raw IP, loopback)",
        source_name, name != nullptr ? name : "unknown", dlt));
  }
  capture_builder builder(source_name, options);
  for (;;) {
    pcap_pkthdr* header = nullptr;
    const std::uint8_t* bytes = nullptr;
    const int status = pcap_next_ex(pcap.get(), &header, &bytes);
    if (status == PCAP_ERROR_BREAK) break;  // end of the capture
    if (status != 1) {
      // A capture whose writer was stopped mid-record: keep what came before.
      pcap_capture partial = builder.finish();
      ++partial.counts.malformed;
      ++partial.counts.packets;
      if (partial.queries.empty()) {
        throw setup_error(fmt::format("{}: no DNS queries before a broken record ({}): {}",
                                      source_name, pcap_geterr(pcap.get()),
                                      counts_text(partial.counts)));
      }
      return partial;
    }
    const std::uint64_t time_ns =
        static_cast<std::uint64_t>(header->ts.tv_sec) * 1'000'000'000u +
        static_cast<std::uint64_t>(header->ts.tv_usec);  // nanoseconds at this precision
    builder.add_frame(*link, {bytes, header->caplen}, time_ns);
  }
  pcap_capture capture = builder.finish();
  if (capture.queries.empty()) {
    throw setup_error(
        fmt::format("{}: no DNS queries found ({})", source_name, counts_text(capture.counts)));
  }
  return capture;
}

}  // namespace

pcap_capture parse_pcap(std::span<const std::uint8_t> data, std::string_view source_name,
                        const pcap_options& options) {
  if (options.ports.empty()) throw setup_error(setting("pcap_options::ports") + ": no port given");
  // fmemopen refuses a zero size; an empty capture is refused by libpcap.
  static const std::uint8_t nothing = 0;
  std::FILE* file =
      fmemopen(const_cast<std::uint8_t*>(data.empty() ? &nothing : data.data()), data.size(), "rb");
  if (file == nullptr) {
    throw setup_error(
        fmt::format("cannot read capture \"{}\": {}", source_name, std::strerror(errno)));
  }
  return read_records(file, source_name, options);
}

pcap_capture read_pcap(const std::filesystem::path& path, const pcap_options& options) {
  if (options.ports.empty()) throw setup_error(setting("pcap_options::ports") + ": no port given");
  // Read as libpcap goes, so a capture of any size needs no more memory than its queries.
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    throw setup_error(
        fmt::format("cannot read query file \"{}\": {}", path.string(), std::strerror(errno)));
  }
  return read_records(file, path.string(), options);
}

}  // namespace dnstransport
