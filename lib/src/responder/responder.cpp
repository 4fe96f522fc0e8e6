#include "responder/responder.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <dnstransport/message.hpp>

namespace dnstransport::detail {

namespace {

constexpr std::uint8_t qr_bit = 0x80;
constexpr std::uint8_t aa_bit = 0x04;
constexpr std::uint8_t ra_bit = 0x80;
constexpr std::uint32_t answer_ttl = 300;

std::uint16_t read16(const std::uint8_t* p) {
  return static_cast<std::uint16_t>((p[0] << 8) | p[1]);
}

std::uint8_t* write16(std::uint8_t* p, std::uint16_t v) {
  p[0] = static_cast<std::uint8_t>(v >> 8);
  p[1] = static_cast<std::uint8_t>(v);
  return p + 2;
}

std::uint8_t* write32(std::uint8_t* p, std::uint32_t v) {
  p = write16(p, static_cast<std::uint16_t>(v >> 16));
  return write16(p, static_cast<std::uint16_t>(v));
}

std::size_t header_only(std::span<const std::uint8_t> query, std::uint8_t rcode,
                        std::span<std::uint8_t> out) {
  std::memset(out.data(), 0, dns_header_size);
  out[0] = query[0];
  out[1] = query[1];
  out[2] = static_cast<std::uint8_t>(qr_bit | (query[2] & 0x79));  // opcode and RD kept
  out[3] = static_cast<std::uint8_t>(ra_bit | rcode);
  return dns_header_size;
}

// What the query's OPT record holds that the answer depends on.
struct query_opt {
  bool found = false;
  bool dnssec_ok = false;
  bool keepalive = false;  // edns-tcp-keepalive
  bool padding = false;
  std::size_t client_subnet_at = 0;  // a well-formed client subnet option's start (0: none)
};

// Whether the client subnet option whose data (after code and length) are `data` is one to
// echo (RFC 7871, section 6): a known family, a source prefix the address holds, and the
// address cut to that prefix's octets.
bool client_subnet_well_formed(std::span<const std::uint8_t> data) {
  if (data.size() < 4) return false;
  const std::uint16_t family = read16(data.data());
  const unsigned source = data[2];
  if ((family != 1 || source > 32) && (family != 2 || source > 128)) return false;
  return data.size() - 4 == (source + 7) / 8;
}

// Finds the OPT record in the query's additional section; its options are read only when
// `edns` answers any of them.
query_opt find_opt(std::span<const std::uint8_t> query, std::size_t offset,
                   const answer_edns& edns) {
  query_opt opt;
  const unsigned records = read16(&query[6]) + read16(&query[8]) + read16(&query[10]);
  const unsigned additional_start = read16(&query[6]) + read16(&query[8]);
  for (unsigned i = 0; i < records; ++i) {
    const auto after_name = skip_name(query, offset);
    if (!after_name || *after_name + 10 > query.size()) return opt;
    const std::uint8_t* fixed = &query[*after_name];
    const std::size_t rdlength = read16(fixed + 8);
    if (i >= additional_start && read16(fixed) == rr_type::opt) {
      opt.found = true;
      opt.dnssec_ok = (fixed[6] & 0x80) != 0;
      if (!edns.keepalive && edns.padding_block == 0 && edns.client_subnet_scope < 0) return opt;
      // Options that run past the record or the message end the walk: the ones before count.
      const std::size_t end = std::min(*after_name + 10 + rdlength, query.size());
      for (std::size_t at = *after_name + 10; end - at >= 4;) {
        const std::uint16_t code = read16(&query[at]);
        const std::size_t start = at;
        at += 4 + std::size_t{read16(&query[at + 2])};
        if (at > end) break;
        opt.keepalive = opt.keepalive || code == edns_option_code::tcp_keepalive;
        opt.padding = opt.padding || code == edns_option_code::padding;
        if (code == edns_option_code::client_subnet && opt.client_subnet_at == 0 &&
            client_subnet_well_formed(query.subspan(start + 4, at - start - 4))) {
          opt.client_subnet_at = start;
        }
      }
      return opt;
    }
    offset = *after_name + 10 + rdlength;
    if (offset > query.size()) return opt;
  }
  return opt;
}

}  // namespace

answer_edns answer_edns_for(const server_options& options, transport_kind transport) noexcept {
  answer_edns edns;
  const transport_traits& traits = traits_of(transport);
  if (traits.over_tcp) {
    edns.keepalive = true;
    const double seconds = options.keepalive_timeout_seconds >= 0
                               ? options.keepalive_timeout_seconds
                           : options.idle_timeout_seconds > 0 ? options.idle_timeout_seconds
                                                              : default_keepalive_seconds;
    edns.keepalive_timeout =
        static_cast<std::uint16_t>(std::min(std::lround(seconds * 10), long{0xffff}));
  }
  if (traits.has_tls) edns.padding_block = options.padding_block;
  edns.client_subnet_scope = options.client_subnet_scope;
  return edns;
}

std::size_t build_answer(std::span<const std::uint8_t> query, answer_mode mode,
                         std::span<std::uint8_t> out, const answer_edns& edns) noexcept {
  if (query.size() < dns_header_size || (query[2] & qr_bit) != 0) return 0;
  if (out.size() < query.size() + answer_overhead) return 0;
  if (mode == answer_mode::echo) {
    std::memcpy(out.data(), query.data(), query.size());
    out[2] |= qr_bit;
    return query.size();
  }
  if (read16(&query[4]) != 1) return header_only(query, 1, out);
  const auto name_end = skip_name(query, dns_header_size);
  if (!name_end || *name_end + 4 > query.size()) return header_only(query, 1, out);
  const std::size_t question_end = *name_end + 4;
  const std::uint16_t qtype = read16(&query[*name_end]);
  const std::uint16_t qclass = read16(&query[*name_end + 2]);
  const query_opt opt = find_opt(query, question_end, edns);
  const bool has_opt = opt.found;
  const bool has_answer = qclass == class_in && (qtype == rr_type::a || qtype == rr_type::aaaa);

  std::uint8_t* p = out.data();
  std::memcpy(p, query.data(), question_end);
  p[2] = static_cast<std::uint8_t>(qr_bit | aa_bit | (query[2] & 0x79));
  p[3] = ra_bit;
  write16(p + 4, 1);
  write16(p + 6, has_answer ? 1 : 0);
  write16(p + 8, 0);
  write16(p + 10, has_opt ? 1 : 0);
  p += question_end;
  if (has_answer) {
    p = write16(p, 0xc000 | dns_header_size);  // pointer to the question name
    p = write16(p, qtype);
    p = write16(p, class_in);
    p = write32(p, answer_ttl);
    if (qtype == rr_type::a) {
      static constexpr std::uint8_t address[4] = {192, 0, 2, 1};  // RFC 5737 documentation
      p = write16(p, sizeof address);
      std::memcpy(p, address, sizeof address);
      p += sizeof address;
    } else {
      static constexpr std::uint8_t address[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0,
                                                   0,    0,    0,    0,    0, 0, 0, 1};
      p = write16(p, sizeof address);
      std::memcpy(p, address, sizeof address);
      p += sizeof address;
    }
  }
  if (has_opt) {
    *p++ = 0;  // root name
    p = write16(p, rr_type::opt);
    p = write16(p, 1232);
    p = write32(p, opt.dnssec_ok ? 0x8000u : 0u);
    std::uint8_t* rdlength = p;
    p += 2;
    if (opt.client_subnet_at != 0 && edns.client_subnet_scope >= 0) {
      // FAMILY, SOURCE PREFIX-LENGTH and ADDRESS as the query had them (RFC 7871, section
      // 7.2.1), with the scope the answer is for.
      const std::size_t length = 4 + std::size_t{read16(&query[opt.client_subnet_at + 2])};
      std::memcpy(p, &query[opt.client_subnet_at], length);
      const unsigned bits = read16(&query[opt.client_subnet_at + 4]) == 1 ? 32 : 128;
      p[7] = static_cast<std::uint8_t>(std::min<unsigned>(edns.client_subnet_scope, bits));
      p += length;
    }
    if (opt.keepalive && edns.keepalive) {
      p = write16(p, edns_option_code::tcp_keepalive);
      p = write16(p, 2);
      p = write16(p, edns.keepalive_timeout);
    }
    if (opt.padding && edns.padding_block != 0) {
      const std::size_t size = static_cast<std::size_t>(p - out.data());
      const std::size_t padding = padding_for(size, edns.padding_block);
      if (size + 4 + padding <= std::min<std::size_t>(out.size(), 0xffff)) {
        p = write16(p, edns_option_code::padding);
        p = write16(p, static_cast<std::uint16_t>(padding));
        std::memset(p, 0, padding);
        p += padding;
      }
    }
    write16(rdlength, static_cast<std::uint16_t>(p - rdlength - 2));
  }
  return static_cast<std::size_t>(p - out.data());
}

}  // namespace dnstransport::detail
