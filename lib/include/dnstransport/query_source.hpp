#pragma once
/// \file
/// Where queries come from: dnsperf-style text files, length-prefixed wire files, or the
/// built-in default set. Every query is encoded once, here; the engine only patches ids.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <dnstransport/message.hpp>

namespace dnstransport {

/// An immutable list of encoded queries stored back to back in one buffer, so the engine
/// can hand a query to the kernel without copying it. Every query has id 0.
class query_set {
 public:
  query_set() = default;

  /// Appends one encoded query (at least 12 octets, at most 65535).
  /// Throws std::invalid_argument for a message outside those sizes.
  void add(std::span<const std::uint8_t> message);

  /// Number of queries.
  std::size_t size() const noexcept { return offsets_.size() - 1; }
  /// Whether it holds no query.
  bool empty() const noexcept { return size() == 0; }

  /// The i-th query, id included (always 0).
  std::span<const std::uint8_t> operator[](std::size_t i) const noexcept {
    return {bytes_.data() + offsets_[i], offsets_[i + 1] - offsets_[i]};
  }

  /// Size of the largest query, for sizing send buffers.
  std::size_t max_size() const noexcept { return max_size_; }

  /// Where the queries came from ("built-in default set", a file path), for reports.
  const std::string& origin() const noexcept { return origin_; }
  /// Sets what origin() gives.
  void set_origin(std::string origin) { origin_ = std::move(origin); }

 private:
  std::vector<std::uint8_t> bytes_;
  std::vector<std::uint32_t> offsets_{0};
  std::size_t max_size_ = 0;
  std::string origin_;
};

/// Parses dnsperf's text format: one `name TYPE` per line (TYPE defaults to A when left
/// out), blank lines and lines starting with `;` skipped, trailing `; comment` ignored.
/// `source_name` is used in error messages. Throws setup_error naming `source_name`, the
/// 1-based line number and the problem (bad name, unknown type, extra fields); also when
/// no query at all is found.
query_set parse_text_queries(std::string_view text, std::string_view source_name,
                             const query_options& options = {});

/// Parses a wire-format query stream: each query as a 2-octet big-endian length followed by
/// that many octets (the format of dnsperf -B). Throws setup_error naming `source_name`,
/// the query number and byte offset for a truncated record, a length under 12, or an empty
/// stream.
query_set parse_wire_queries(std::span<const std::uint8_t> data, std::string_view source_name);

/// How to read a query file.
enum class query_file_format {
  automatic,  ///< as query_file_format_of says
  text,
  wire,
  pcap,  ///< the DNS queries of a pcap or pcapng capture (pcap.hpp), on port 53
};

/// The format of a query file by its name and first octets: pcap when the name ends in
/// ".pcap" or ".pcapng" or the file starts with a pcap or pcapng magic number, wire when
/// the name ends in ".raw", ".wire" or ".bin", text otherwise. Never throws; a file that
/// cannot be read is text (and load_query_file then names the problem).
query_file_format query_file_format_of(const std::filesystem::path& path);

/// Reads and parses a query file. Throws setup_error naming the file when it cannot be
/// opened or read, and as the parse functions above (or read_pcap) for its contents.
query_set load_query_file(const std::filesystem::path& path,
                          query_file_format format = query_file_format::automatic,
                          const query_options& options = {});

/// Writes `queries` in the wire format read by parse_wire_queries (and dnsperf -B).
/// Throws setup_error naming the file when it cannot be written.
void save_wire_queries(const query_set& queries, const std::filesystem::path& path);

/// A few hundred realistic queries (popular names, mixed A/AAAA/MX/TXT/NS/HTTPS/SOA and a
/// share of names that do not exist), used when no query file is given.
query_set default_queries(const query_options& options = {});

/// The default set in dnsperf's text format, one `name TYPE` per line, so the same queries
/// can be given to other tools.
std::string default_queries_text();

}  // namespace dnstransport
