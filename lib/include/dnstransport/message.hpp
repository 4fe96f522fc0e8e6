#pragma once
/// \file
/// DNS wire format: encoding queries once, patching their id at send time, and checking
/// that a response really answers the query that was sent.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dnstransport {

/// Size of the fixed DNS header (RFC 1035 §4.1.1).
inline constexpr std::size_t dns_header_size = 12;
/// Longest name in wire format, root label included (RFC 1035 §2.3.4).
inline constexpr std::size_t max_name_wire_size = 255;
/// Longest single label (RFC 1035 §2.3.4).
inline constexpr std::size_t max_label_size = 63;

/// Record types by number; only the ones the code names itself (RFC 1035 unless noted). Any
/// other type is accepted as a number (`TYPE65534`).
namespace rr_type {
inline constexpr std::uint16_t a = 1;        ///< A: an IPv4 address
inline constexpr std::uint16_t ns = 2;       ///< NS: an authoritative name server
inline constexpr std::uint16_t cname = 5;    ///< CNAME: the canonical name of an alias
inline constexpr std::uint16_t soa = 6;      ///< SOA: the start of a zone of authority
inline constexpr std::uint16_t ptr = 12;     ///< PTR: a name pointer (reverse lookups)
inline constexpr std::uint16_t mx = 15;      ///< MX: a mail exchange
inline constexpr std::uint16_t txt = 16;     ///< TXT: text strings
inline constexpr std::uint16_t aaaa = 28;    ///< AAAA: an IPv6 address (RFC 3596)
inline constexpr std::uint16_t srv = 33;     ///< SRV: where a service is (RFC 2782)
inline constexpr std::uint16_t opt = 41;     ///< OPT: the EDNS pseudo-record (RFC 6891)
inline constexpr std::uint16_t ds = 43;      ///< DS: a delegation signer (RFC 4034)
inline constexpr std::uint16_t rrsig = 46;   ///< RRSIG: a DNSSEC signature (RFC 4034)
inline constexpr std::uint16_t dnskey = 48;  ///< DNSKEY: a DNSSEC key (RFC 4034)
inline constexpr std::uint16_t https = 65;   ///< HTTPS: an HTTPS binding (RFC 9460)
inline constexpr std::uint16_t any = 255;    ///< ANY (QTYPE *): all records (RFC 8482)
}  // namespace rr_type

/// Class IN, the only class queries are sent in.
inline constexpr std::uint16_t class_in = 1;

/// Record type from its mnemonic ("A", "aaaa", "HTTPS", "TYPE65"), case-insensitive.
/// Returns nothing for an unknown mnemonic or a TYPEnnn out of 0..65535.
std::optional<std::uint16_t> parse_rr_type(std::string_view mnemonic);

/// Mnemonic of a record type ("AAAA"), or "TYPEnnn" for one without a mnemonic.
std::string rr_type_name(std::uint16_t type);

/// Name of a response code ("NOERROR", "SERVFAIL", "NXDOMAIN", ...), "RCODEnn" otherwise.
std::string rcode_name(unsigned rcode);

/// Encodes a domain name in presentation format ("www.example.com", "example.com.", ".")
/// to uncompressed wire format. It takes the escapes of RFC 1035 §5.1: `\.` for a dot inside
/// a label and `\DDD` (decimal, 0..255) for any octet. A missing trailing dot is implied.
/// Throws std::invalid_argument, with a message saying what is wrong, for an empty
/// label, a label over 63 octets, a name over 255 octets, or a bad escape.
std::vector<std::uint8_t> encode_name(std::string_view name);

/// EDNS0 option codes the code names itself (IANA "DNS EDNS0 Option Codes").
namespace edns_option_code {
/// edns-tcp-keepalive (RFC 7828): empty in a query; a 2-octet idle timeout in units of
/// 100 ms in an answer.
inline constexpr std::uint16_t tcp_keepalive = 11;
/// Padding (RFC 7830): zero octets that make the message a chosen size.
inline constexpr std::uint16_t padding = 12;
/// EDNS Client Subnet (RFC 7871): FAMILY, SOURCE PREFIX-LENGTH, SCOPE PREFIX-LENGTH and the
/// subnet's address, cut to the source prefix's octets.
inline constexpr std::uint16_t client_subnet = 8;
}  // namespace edns_option_code

/// One raw EDNS0 option (RFC 6891 §6.1.2): code and data, written as given.
struct edns_option {
  std::uint16_t code = 0;          ///< option code, e.g. 11 for edns-tcp-keepalive
  std::vector<std::uint8_t> data;  ///< option data, without code and length
};

/// Whether and how a query carries an OPT pseudo-record (RFC 6891).
struct edns_config {
  bool enabled = false;                   ///< add an OPT record to every query
  std::uint16_t udp_payload_size = 1232;  ///< advertised UDP payload size (DNS flag day 2020)
  bool dnssec_ok = false;                 ///< set the DO bit (RFC 3225)
  std::vector<edns_option> options;       ///< raw options appended to the OPT record
  /// Block padding (RFC 7830, RFC 8467 §4.1): a padding option, after `options`, makes the
  /// whole message (id included, TCP length prefix not) a multiple of this many octets
  /// (1: an empty padding option, which asks for padded answers). 0: no padding option.
  /// RFC 8467 recommends 128 for queries, 468 for answers.
  std::uint16_t padding_block = 0;
};

/// What goes into one query besides its name and type.
struct query_options {
  bool recursion_desired = true;    ///< RD bit; on by default, as for a stub resolver
  std::uint16_t qclass = class_in;  ///< QCLASS of the question; IN by default
  edns_config edns;                 ///< OPT record and its options; none by default
};

/// Builds a complete query message for `name` and `type` with id 0 (patched at send time
/// with patch_id). Throws std::invalid_argument for a bad name (see encode_name).
std::vector<std::uint8_t> encode_query(std::string_view name, std::uint16_t type,
                                       const query_options& options = {});

/// Octets of padding-option data that make a message of `size` octets, which grows by the
/// option's 4-octet header and the data, a multiple of `block` (0 or 1: no padding).
std::size_t padding_for(std::size_t size, std::uint16_t block) noexcept;

/// Adds `edns.options` (those whose code the query does not carry yet) and, with
/// `edns.padding_block`, a padding option to an encoded query's OPT record, or gives it an
/// OPT record (payload size and DO bit from `edns`) when it has none; a padding option the
/// query already carries is replaced, and so is an EDNS Client Subnet option when `edns`
/// has one. For queries read from wire files. Throws
/// std::invalid_argument, saying why, for a query whose records do not parse, one with
/// several OPT records or with records after its OPT record (a TSIG would no longer
/// verify), or one that would exceed 65535 octets.
std::vector<std::uint8_t> add_edns_options(std::span<const std::uint8_t> query,
                                           const edns_config& edns);

/// Writes `id` into the first two octets of a message (network byte order).
inline void patch_id(std::uint8_t* message, std::uint16_t id) noexcept {
  message[0] = static_cast<std::uint8_t>(id >> 8);
  message[1] = static_cast<std::uint8_t>(id & 0xff);
}

/// Reads the id of a message of at least two octets.
inline std::uint16_t read_id(const std::uint8_t* message) noexcept {
  return static_cast<std::uint16_t>((message[0] << 8) | message[1]);
}

/// What a received message turned out to be, checked against the query it claims to answer.
enum class response_verdict : std::uint8_t {
  ok,              ///< a well-formed response to this query
  too_short,       ///< fewer than 12 octets: not even a header
  not_response,    ///< QR bit clear: the server sent a query back, or junk
  wrong_id,        ///< the id differs from the query's
  wrong_opcode,    ///< opcode differs from the query's
  wrong_question,  ///< the question section does not echo the query's name, type and class
  malformed,       ///< sections run past the end, bad label, compression loop or pointer
};

/// Short stable name of a verdict ("wrong_question"), used in tables and JSON.
std::string_view verdict_name(response_verdict verdict);

/// The parts of a response a load generator counts.
struct response_summary {
  response_verdict verdict = response_verdict::malformed;  ///< ok, or what is wrong with it
  std::uint16_t id = 0;    ///< valid when the message had at least 2 octets
  std::uint8_t rcode = 0;  ///< 4-bit header RCODE (extended bits not applied)
  bool truncated = false;  ///< TC bit
  /// AD bit (RFC 4035, section 3.2.3): the resolver says it validated the answer with DNSSEC.
  bool authenticated = false;
  std::uint16_t answer_count = 0;  ///< ANCOUNT from the header
  // Read only when check_response is asked to (read_edns_options):
  bool keepalive = false;               ///< the answer carries edns-tcp-keepalive (RFC 7828)
  std::uint16_t keepalive_timeout = 0;  ///< its TIMEOUT, in units of 100 ms
  bool padded = false;                  ///< the answer carries a padding option (RFC 7830)
  /// The answer carries an EDNS Client Subnet option (RFC 7871); the fields below are its.
  bool client_subnet = false;
  std::uint16_t client_subnet_family = 0;        ///< 1: IPv4, 2: IPv6
  std::uint8_t client_subnet_source_prefix = 0;  ///< SOURCE PREFIX-LENGTH, echoed
  std::uint8_t client_subnet_scope_prefix = 0;   ///< SCOPE PREFIX-LENGTH: what the answer is for
  /// Offset of its ADDRESS in the message, and its length in octets (at most 16).
  std::uint16_t client_subnet_address_at = 0;
  std::uint8_t client_subnet_address_size = 0;  ///< octets of ADDRESS
};

/// Checks `response` against `query` (a message produced by encode_query or read from a
/// query file) and `expected_id`. Walks every section so that a response whose records run
/// past the end or whose names loop is reported malformed. With `read_edns_options`, it
/// also reads the options of the answer's OPT record (keepalive, padding, client subnet) and
/// reports the answer malformed when they do not parse: an option running past the record's
/// data, an edns-tcp-keepalive whose data is neither empty (the query's option echoed: no
/// timeout) nor a 2-octet TIMEOUT, a client subnet option shorter than 4 octets or with
/// more than 16 of address, or a second OPT record (RFC 6891 §6.1.1). Never throws, never
/// reads outside the spans.
response_summary check_response(std::span<const std::uint8_t> response,
                                std::span<const std::uint8_t> query, std::uint16_t expected_id,
                                bool read_edns_options = false) noexcept;

/// The largest UDP answer `query` allows (RFC 1035 §4.2.1, RFC 6891 §6.2.3): 512 octets,
/// or the payload size its OPT record advertises when that is larger. A query too broken to
/// find its OPT record in allows 512. Never throws, never reads outside the span.
std::uint16_t udp_answer_limit(std::span<const std::uint8_t> query) noexcept;

/// Walks one wire-format name starting at `offset` in `message`, following compression
/// pointers (RFC 1035 §4.1.4) with loop and bounds checks. Returns the offset just past the
/// name's bytes at its original place (pointers are not followed for this), or nothing for
/// a malformed name.
std::optional<std::size_t> skip_name(std::span<const std::uint8_t> message,
                                     std::size_t offset) noexcept;

}  // namespace dnstransport
