#include "misbehaviour.hpp"

#include <dnstransport/message.hpp>

#include "responder/responder.hpp"

namespace dnstransport::hostile {

namespace {

constexpr std::uint8_t qr_bit = 0x80;
constexpr std::uint8_t tc_bit = 0x02;
constexpr std::uint8_t ad_bit = 0x20;  // in the header's fourth octet

void put16(bytes& out, std::uint16_t value) {
  out.push_back(static_cast<std::uint8_t>(value >> 8));
  out.push_back(static_cast<std::uint8_t>(value));
}

void set16(bytes& out, std::size_t at, std::uint16_t value) {
  out[at] = static_cast<std::uint8_t>(value >> 8);
  out[at + 1] = static_cast<std::uint8_t>(value);
}

std::uint16_t id_of(std::span<const std::uint8_t> query) {
  return query.size() >= 2 ? read_id(query.data()) : 0;
}

// Header (id of the query, QR RD RA, one question, `answers` answers) and the question
// copied from the query, which the engine only ever sends well-formed.
bytes answer_head(std::span<const std::uint8_t> query, std::uint16_t answers) {
  bytes out;
  put16(out, id_of(query));
  out.push_back(static_cast<std::uint8_t>(qr_bit | 0x01));
  out.push_back(0x80);
  put16(out, 1);
  put16(out, answers);
  put16(out, 0);
  put16(out, 0);
  const auto name_end = skip_name(query, dns_header_size);
  const std::size_t end = name_end ? *name_end + 4 : dns_header_size;
  out.insert(out.end(), query.begin() + dns_header_size,
             query.begin() + static_cast<std::ptrdiff_t>(std::min(end, query.size())));
  return out;
}

// An A record whose owner name is `owner` (already in wire form).
void append_a_record(bytes& out, const bytes& owner) {
  out.insert(out.end(), owner.begin(), owner.end());
  put16(out, rr_type::a);
  put16(out, class_in);
  put16(out, 0);
  put16(out, 300);  // TTL
  put16(out, 4);
  for (std::uint8_t octet : {192, 0, 2, 1}) out.push_back(octet);
}

std::vector<reply> one(bytes data) {
  std::vector<reply> replies;
  replies.push_back({std::move(data)});
  return replies;
}

}  // namespace

bytes answer_to(std::span<const std::uint8_t> query) {
  bytes out(query.size() + detail::answer_overhead);
  out.resize(detail::build_answer(query, answer_mode::answer, out));
  return out;
}

message_script answer_all(microseconds delay) {
  return [delay](std::span<const std::uint8_t> query, std::uint64_t) {
    std::vector<reply> replies;
    replies.push_back({answer_to(query), delay});
    return replies;
  };
}

message_script answer_all_spread(microseconds delay, microseconds spread) {
  return [delay, spread](std::span<const std::uint8_t> query, std::uint64_t number) {
    // Knuth's multiplicative hash: consecutive numbers land far apart in [0, 1).
    const double part = static_cast<double>((number * 2654435761u) % 4294967296u) / 4294967296.0;
    std::vector<reply> replies;
    replies.push_back({answer_to(query), delay + microseconds(static_cast<std::int64_t>(
                                                     part * static_cast<double>(spread.count())))});
    return replies;
  };
}

message_script answer_every_other() {
  return [](std::span<const std::uint8_t> query, std::uint64_t number) {
    return number % 2 == 0 ? one(answer_to(query)) : std::vector<reply>{};
  };
}

message_script wrong_id() {
  return [](std::span<const std::uint8_t> query, std::uint64_t) {
    bytes answer = answer_to(query);
    // The top bit is a generation bit of the engine's ids: same slot, another query.
    patch_id(answer.data(), static_cast<std::uint16_t>(id_of(query) ^ 0x8000));
    return one(std::move(answer));
  };
}

message_script id_offset(std::uint16_t offset) {
  return [offset](std::span<const std::uint8_t> query, std::uint64_t) {
    bytes answer = answer_to(query);
    patch_id(answer.data(), static_cast<std::uint16_t>(id_of(query) + offset));
    return one(std::move(answer));
  };
}

message_script qr_not_set() {
  return [](std::span<const std::uint8_t> query, std::uint64_t) {
    return one(bytes(query.begin(), query.end()));
  };
}

message_script wrong_question() {
  return [](std::span<const std::uint8_t> query, std::uint64_t) {
    bytes answer = answer_to(query);
    // The first octet of the first label, changed so that no case folding makes it equal.
    std::uint8_t& first = answer[dns_header_size + 1];
    first = (first | 0x20) == 'q' ? 'z' : 'q';
    return one(std::move(answer));
  };
}

message_script lower_case_question() {
  return [](std::span<const std::uint8_t> query, std::uint64_t) {
    bytes answer = answer_to(query);
    const auto name_end = skip_name(answer, dns_header_size);
    for (std::size_t at = dns_header_size; name_end && at < *name_end; at += answer[at] + 1u) {
      for (std::size_t i = at + 1; i <= at + answer[at]; ++i) {
        if (answer[i] >= 'A' && answer[i] <= 'Z') answer[i] |= 0x20;
      }
    }
    return one(std::move(answer));
  };
}

message_script truncated_answers() {
  return [](std::span<const std::uint8_t> query, std::uint64_t) {
    bytes answer(query.begin(), query.end());
    answer[2] |= qr_bit | tc_bit;
    return one(std::move(answer));
  };
}

message_script truncated_every_other() {
  return [](std::span<const std::uint8_t> query, std::uint64_t number) {
    if (number % 2 == 0) return one(answer_to(query));
    bytes answer(query.begin(), query.end());
    answer[2] |= qr_bit | tc_bit;
    return one(std::move(answer));
  };
}

message_script authenticated_every_other() {
  return [](std::span<const std::uint8_t> query, std::uint64_t number) {
    bytes answer = answer_to(query);
    if (number % 2 == 1) answer[3] |= ad_bit;
    return one(std::move(answer));
  };
}

message_script garbage_and_short(bool datagrams) {
  return [datagrams](std::span<const std::uint8_t> query, std::uint64_t number) {
    std::vector<reply> replies;
    if (datagrams) replies.push_back({});
    replies.push_back({{0x42}});
    bytes junk(40);
    for (std::size_t i = 0; i < junk.size(); ++i) {
      junk[i] = static_cast<std::uint8_t>((number * 131 + i * 29) ^ 0xa5);
    }
    patch_id(junk.data(), static_cast<std::uint16_t>(id_of(query) ^ 0x8000));
    replies.push_back({std::move(junk)});
    bytes cut = answer_to(query);
    cut.resize(dns_header_size - 1);
    replies.push_back({std::move(cut)});
    return replies;
  };
}

message_script duplicate_answers() {
  return [](std::span<const std::uint8_t> query, std::uint64_t) {
    std::vector<reply> replies;
    replies.push_back({answer_to(query)});
    replies.push_back({answer_to(query)});
    return replies;
  };
}

message_script compression_loop() {
  return [](std::span<const std::uint8_t> query, std::uint64_t) {
    bytes answer = answer_head(query, 1);
    // "x" then a pointer back to the "x": the name never ends.
    const auto at = static_cast<std::uint16_t>(answer.size());
    append_a_record(answer, {1, 'x', static_cast<std::uint8_t>(0xc0 | (at >> 8)),
                             static_cast<std::uint8_t>(at)});
    return one(std::move(answer));
  };
}

message_script pointer_past_end() {
  return [](std::span<const std::uint8_t> query, std::uint64_t) {
    bytes answer = answer_head(query, 1);
    append_a_record(answer, {0xff, 0xf0});
    return one(std::move(answer));
  };
}

message_script oversized_answers(std::size_t size) {
  return [size](std::span<const std::uint8_t> query, std::uint64_t) {
    bytes answer = answer_head(query, 1);
    put16(answer, 0xc000 | dns_header_size);  // owner: the question's name
    put16(answer, rr_type::txt);
    put16(answer, class_in);
    put16(answer, 0);
    put16(answer, 300);
    const std::size_t length_at = answer.size();
    put16(answer, 0);
    // Character strings of up to 255 octets until the message has `size` octets.
    while (answer.size() < size) {
      const std::size_t chunk = std::min<std::size_t>(size - answer.size() - 1, 255);
      answer.push_back(static_cast<std::uint8_t>(chunk));
      answer.insert(answer.end(), chunk, 't');
    }
    set16(answer, length_at, static_cast<std::uint16_t>(answer.size() - length_at - 2));
    return one(std::move(answer));
  };
}

message_script junk_frames(std::size_t size) {
  return [size](std::span<const std::uint8_t> query, std::uint64_t) {
    bytes junk(size, 0xff);
    patch_id(junk.data(), id_of(query));
    junk[2] = qr_bit;
    junk[3] = 0;
    set16(junk, 4, 1);  // one question, whose name is a pointer out of the message
    set16(junk, 6, 0);
    set16(junk, 8, 0);
    set16(junk, 10, 0);
    return one(std::move(junk));
  };
}

}  // namespace dnstransport::hostile
