#include <dnstransport/query_source.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <limits>
#include <memory>
#include <stdexcept>
#include <system_error>

#include <fmt/format.h>

#include <dnstransport/error.hpp>
#include <dnstransport/pcap.hpp>

namespace dnstransport {

namespace {

constexpr std::string_view default_origin = "built-in default set";

bool is_blank(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

// Splits one line into whitespace-separated fields, stopping at a `;` comment. A backslash
// escapes the next character, so that `\;` and `\ ` stay inside a name (RFC 1035 §5.1).
// Returns the number of fields found; only the first `fields.size()` are stored.
std::size_t split_fields(std::string_view line, std::span<std::string_view> fields) noexcept {
  std::size_t count = 0;
  std::size_t i = 0;
  while (i < line.size()) {
    if (is_blank(line[i])) {
      ++i;
      continue;
    }
    if (line[i] == ';') break;
    const std::size_t start = i;
    while (i < line.size() && !is_blank(line[i]) && line[i] != ';') {
      i += line[i] == '\\' && i + 1 < line.size() ? 2 : 1;
    }
    if (count < fields.size()) fields[count] = line.substr(start, i - start);
    ++count;
  }
  return count;
}

std::string system_message(int error) {
  return std::error_code(error, std::generic_category()).message();
}

struct file_closer {
  void operator()(std::FILE* file) const noexcept { std::fclose(file); }
};
using file_ptr = std::unique_ptr<std::FILE, file_closer>;

std::vector<std::uint8_t> read_whole_file(const std::filesystem::path& path) {
  const auto fail = [&](int error) {
    return setup_error(
        fmt::format("cannot read query file \"{}\": {}", path.string(), system_message(error)));
  };
  file_ptr file(std::fopen(path.c_str(), "rb"));
  if (!file) throw fail(errno);
  std::vector<std::uint8_t> data;
  std::array<std::uint8_t, 65536> chunk;
  for (;;) {
    const std::size_t n = std::fread(chunk.data(), 1, chunk.size(), file.get());
    data.insert(data.end(), chunk.begin(), chunk.begin() + static_cast<std::ptrdiff_t>(n));
    if (n < chunk.size()) break;
  }
  // On Linux a directory opens fine and only the read fails, with EISDIR.
  if (std::ferror(file.get())) throw fail(errno);
  return data;
}

std::string lower_extension(const std::filesystem::path& path) {
  std::string extension = path.extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(), [](char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  });
  return extension;
}

bool starts_like_pcap(const std::filesystem::path& path) {
  file_ptr file(std::fopen(path.c_str(), "rb"));
  std::array<std::uint8_t, 4> head{};
  return file && std::fread(head.data(), 1, head.size(), file.get()) == head.size() &&
         looks_like_pcap(head);
}

}  // namespace

void query_set::add(std::span<const std::uint8_t> message) {
  if (message.size() < dns_header_size || message.size() > 0xffff) {
    throw std::invalid_argument(
        fmt::format("a query must have 12 to 65535 octets, not {}", message.size()));
  }
  // Offsets are 32-bit to keep the index small; a set this large is a mistake anyway.
  if (bytes_.size() + message.size() > std::numeric_limits<std::uint32_t>::max()) {
    throw std::length_error("query set exceeds 4 GiB");
  }
  bytes_.insert(bytes_.end(), message.begin(), message.end());
  offsets_.push_back(static_cast<std::uint32_t>(bytes_.size()));
  max_size_ = std::max(max_size_, message.size());
}

query_set parse_text_queries(std::string_view text, std::string_view source_name,
                             const query_options& options) {
  query_set queries;
  std::size_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const std::size_t newline = text.find('\n');
    const std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);

    std::array<std::string_view, 2> fields;
    const std::size_t field_count = split_fields(line, fields);
    if (field_count == 0) continue;
    if (field_count > fields.size()) {
      throw setup_error(fmt::format("{}:{}: {} fields, expected \"name [type]\"", source_name,
                                    line_number, field_count));
    }
    std::uint16_t type = rr_type::a;
    if (field_count == 2) {
      const auto parsed = parse_rr_type(fields[1]);
      if (!parsed) {
        throw setup_error(
            fmt::format("{}:{}: unknown record type \"{}\"", source_name, line_number, fields[1]));
      }
      type = *parsed;
    }
    try {
      queries.add(encode_query(fields[0], type, options));
    } catch (const std::invalid_argument& e) {
      throw setup_error(
          fmt::format("{}:{}: bad name \"{}\": {}", source_name, line_number, fields[0], e.what()));
    }
  }
  if (queries.empty()) throw setup_error(fmt::format("{}: no queries found", source_name));
  queries.set_origin(std::string(source_name));
  return queries;
}

query_set parse_wire_queries(std::span<const std::uint8_t> data, std::string_view source_name) {
  query_set queries;
  std::size_t pos = 0;
  for (std::size_t number = 1; pos < data.size(); ++number) {
    const std::size_t left = data.size() - pos;
    if (left < 2) {
      throw setup_error(fmt::format("{}: query {} at byte {}: truncated length prefix", source_name,
                                    number, pos));
    }
    const std::size_t length = static_cast<std::size_t>(data[pos] << 8) | data[pos + 1];
    if (length < dns_header_size) {
      throw setup_error(
          fmt::format("{}: query {} at byte {}: length {} is shorter than a DNS header",
                      source_name, number, pos, length));
    }
    if (left - 2 < length) {
      throw setup_error(
          fmt::format("{}: query {} at byte {}: truncated: length {} but only {} bytes left",
                      source_name, number, pos, length, left - 2));
    }
    queries.add(data.subspan(pos + 2, length));
    pos += 2 + length;
  }
  if (queries.empty()) throw setup_error(fmt::format("{}: no queries found", source_name));
  queries.set_origin(std::string(source_name));
  return queries;
}

query_file_format query_file_format_of(const std::filesystem::path& path) {
  const std::string extension = lower_extension(path);
  if (extension == ".pcap" || extension == ".pcapng" || starts_like_pcap(path)) {
    return query_file_format::pcap;
  }
  if (extension == ".raw" || extension == ".wire" || extension == ".bin") {
    return query_file_format::wire;
  }
  return query_file_format::text;
}

query_set load_query_file(const std::filesystem::path& path, query_file_format format,
                          const query_options& options) {
  if (format == query_file_format::automatic) format = query_file_format_of(path);
  if (format == query_file_format::pcap) return read_pcap(path).queries;
  const std::vector<std::uint8_t> data = read_whole_file(path);
  const std::string name = path.string();
  if (format == query_file_format::wire) return parse_wire_queries(data, name);
  return parse_text_queries(
      std::string_view(reinterpret_cast<const char*>(data.data()), data.size()), name, options);
}

void save_wire_queries(const query_set& queries, const std::filesystem::path& path) {
  const auto fail = [&](int error) {
    return setup_error(
        fmt::format("cannot write query file \"{}\": {}", path.string(), system_message(error)));
  };
  file_ptr file(std::fopen(path.c_str(), "wb"));
  if (!file) throw fail(errno);
  for (std::size_t i = 0; i < queries.size(); ++i) {
    const auto query = queries[i];
    const std::array<std::uint8_t, 2> prefix{static_cast<std::uint8_t>(query.size() >> 8),
                                             static_cast<std::uint8_t>(query.size() & 0xff)};
    if (std::fwrite(prefix.data(), 1, prefix.size(), file.get()) != prefix.size() ||
        std::fwrite(query.data(), 1, query.size(), file.get()) != query.size()) {
      throw fail(errno);
    }
  }
  // Buffered data is written out only here, so a full disk shows up at close.
  if (std::fclose(file.release()) != 0) throw fail(errno);
}

query_set default_queries(const query_options& options) {
  return parse_text_queries(default_queries_text(), default_origin, options);
}

}  // namespace dnstransport
