#pragma once
// Internal: what the members of an MPI group (mpi_group.cpp) send each other, as text, and
// member 0's verdict at a start. Nothing here calls MPI: it is built the same with or
// without it, and tested without mpirun.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace dnstransport::detail {

// Fields separated by '\n': at most `fields` of them, the last one holding the rest of
// `text`, '\n' and all (an error message, packed texts).
std::vector<std::string> split_fields(const std::string& text, std::size_t fields);

// Several texts as one (every member's result, every member's host): each as its length in
// decimal, '\n', then the text. unpack_texts takes them apart again.
std::string pack_texts(const std::vector<std::string>& texts);
std::vector<std::string> unpack_texts(const std::string& packed);

// "rank 2 on host-b", or "rank 2" when its host is not known, for messages.
std::string member_name(unsigned rank, const std::vector<std::string>& hosts);

// What member 0 answers every member at a start.
struct start_verdict {
  std::string verdict = "go";    // "go", "stop" or "fail"
  std::string message;           // for "fail": why
  bool members_missing = false;  // "fail" because members said nothing: the group is broken
};

// The verdict from what each member said (`states`, in rank order: "ready", "stop" or
// "error"; nullopt: nothing within `wait_seconds`) and each one's error: "fail" naming the
// first member that cannot run, else naming the members that said nothing; "stop" when a
// member was asked to stop; "go" otherwise.
start_verdict decide_start(const std::vector<std::optional<std::string>>& states,
                           const std::vector<std::string>& errors,
                           const std::vector<std::string>& hosts, double wait_seconds);

}  // namespace dnstransport::detail
