// The texts the members of an MPI group exchange (fields, packed texts) and member 0's
// verdict at a start; mpi_group.cpp sends and receives them.

#include "mpi/mpi_exchange.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace dnstransport::detail {

std::vector<std::string> split_fields(const std::string& text, std::size_t fields) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (out.size() + 1 < fields) {
    const auto end = text.find('\n', at);
    if (end == std::string::npos) break;
    out.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  out.push_back(text.substr(std::min(at, text.size())));
  return out;
}

std::string pack_texts(const std::vector<std::string>& texts) {
  std::string out;
  for (const auto& t : texts) {
    out += std::to_string(t.size());
    out += '\n';
    out += t;
  }
  return out;
}

std::vector<std::string> unpack_texts(const std::string& packed) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < packed.size()) {
    const auto end = packed.find('\n', at);
    if (end == std::string::npos) break;
    const std::size_t size = std::stoull(packed.substr(at, end - at));
    out.push_back(packed.substr(end + 1, size));
    at = end + 1 + size;
  }
  return out;
}

std::string member_name(unsigned rank, const std::vector<std::string>& hosts) {
  return rank < hosts.size() && !hosts[rank].empty()
             ? fmt::format("rank {} on {}", rank, hosts[rank])
             : fmt::format("rank {}", rank);
}

start_verdict decide_start(const std::vector<std::optional<std::string>>& states,
                           const std::vector<std::string>& errors,
                           const std::vector<std::string>& hosts, double wait_seconds) {
  start_verdict out;
  for (unsigned r = 0; r < states.size(); ++r) {
    if (states[r] && *states[r] == "error") {
      out.verdict = "fail";
      out.message = fmt::format("{}: {}", member_name(r, hosts), errors[r]);
      return out;
    }
  }
  std::vector<std::string> silent;
  for (unsigned r = 0; r < states.size(); ++r) {
    if (!states[r]) silent.push_back(std::to_string(r));
  }
  if (!silent.empty()) {
    out.verdict = "fail";
    out.message = fmt::format(
        "{} {} did not get ready within {:g} s (set-up hung, or the process failed or was "
        "killed)",
        silent.size() == 1 ? "rank" : "ranks", fmt::join(silent, ", "), wait_seconds);
    out.members_missing = true;
    return out;
  }
  for (const auto& state : states) {
    if (*state == "stop") out.verdict = "stop";
  }
  return out;
}

}  // namespace dnstransport::detail
