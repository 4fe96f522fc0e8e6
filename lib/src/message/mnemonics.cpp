// RR type and RCODE mnemonics: the names of record types (parse_rr_type, rr_type_name) and
// of response codes (rcode_name), as zone files and dig spell them.

#include <dnstransport/message.hpp>

#include <algorithm>
#include <array>
#include <charconv>

#include <fmt/format.h>

#include "message/wire.hpp"

namespace dnstransport {

using detail::is_digit;

namespace {

struct type_mnemonic {
  std::uint16_t type;
  std::string_view name;
};

// Sorted by number so that rr_type_name can binary-search it.
constexpr std::array<type_mnemonic, 60> type_mnemonics{{
    {1, "A"},           {2, "NS"},      {5, "CNAME"},   {6, "SOA"},       {10, "NULL"},
    {11, "WKS"},        {12, "PTR"},    {13, "HINFO"},  {14, "MINFO"},    {15, "MX"},
    {16, "TXT"},        {17, "RP"},     {18, "AFSDB"},  {19, "X25"},      {20, "ISDN"},
    {21, "RT"},         {24, "SIG"},    {25, "KEY"},    {26, "PX"},       {27, "GPOS"},
    {28, "AAAA"},       {29, "LOC"},    {30, "NXT"},    {33, "SRV"},      {35, "NAPTR"},
    {36, "KX"},         {37, "CERT"},   {38, "A6"},     {39, "DNAME"},    {41, "OPT"},
    {42, "APL"},        {43, "DS"},     {44, "SSHFP"},  {45, "IPSECKEY"}, {46, "RRSIG"},
    {47, "NSEC"},       {48, "DNSKEY"}, {49, "DHCID"},  {50, "NSEC3"},    {51, "NSEC3PARAM"},
    {52, "TLSA"},       {53, "SMIMEA"}, {55, "HIP"},    {59, "CDS"},      {60, "CDNSKEY"},
    {61, "OPENPGPKEY"}, {62, "CSYNC"},  {63, "ZONEMD"}, {64, "SVCB"},     {65, "HTTPS"},
    {99, "SPF"},        {108, "EUI48"}, {109, "EUI64"}, {249, "TKEY"},    {250, "TSIG"},
    {251, "IXFR"},      {252, "AXFR"},  {255, "ANY"},   {256, "URI"},     {257, "CAA"},
}};

constexpr bool sorted_by_type() {
  for (std::size_t i = 1; i < type_mnemonics.size(); ++i) {
    if (type_mnemonics[i - 1].type >= type_mnemonics[i].type) return false;
  }
  return true;
}
static_assert(sorted_by_type());

constexpr char ascii_upper(char c) noexcept {
  return c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c;
}

bool iequals_upper(std::string_view text, std::string_view upper) noexcept {
  return text.size() == upper.size() &&
         std::equal(text.begin(), text.end(), upper.begin(),
                    [](char a, char b) { return ascii_upper(a) == b; });
}

}  // namespace

std::optional<std::uint16_t> parse_rr_type(std::string_view mnemonic) {
  for (const auto& entry : type_mnemonics) {
    if (iequals_upper(mnemonic, entry.name)) return entry.type;
  }
  constexpr std::string_view prefix = "TYPE";
  if (mnemonic.size() <= prefix.size() ||
      !iequals_upper(mnemonic.substr(0, prefix.size()), prefix)) {
    return std::nullopt;
  }
  const std::string_view digits = mnemonic.substr(prefix.size());
  // from_chars alone would accept a leading '-' or '+' for some types; insist on digits.
  if (!std::all_of(digits.begin(), digits.end(), is_digit)) return std::nullopt;
  std::uint16_t value = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (error != std::errc{} || end != digits.data() + digits.size()) return std::nullopt;
  return value;
}

std::string rr_type_name(std::uint16_t type) {
  const auto it = std::lower_bound(
      type_mnemonics.begin(), type_mnemonics.end(), type,
      [](const type_mnemonic& entry, std::uint16_t value) { return entry.type < value; });
  if (it != type_mnemonics.end() && it->type == type) return std::string(it->name);
  return fmt::format("TYPE{}", type);
}

std::string rcode_name(unsigned rcode) {
  static constexpr std::array<std::string_view, 11> names{
      "NOERROR",  "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED",
      "YXDOMAIN", "YXRRSET", "NXRRSET",  "NOTAUTH",  "NOTZONE"};
  if (rcode < names.size()) return std::string(names[rcode]);
  return fmt::format("RCODE{}", rcode);
}

}  // namespace dnstransport
