// The processes of an MPI job as one load_group. Everything goes through member 0 with
// point-to-point messages polled against a deadline (never a blocking collective), so a
// member that fails, hangs or is killed ends the wait with an error instead of a hang.
//
// start_together: every member sends "ready|stop|error", its host and the error to member
// 0, which answers each with "go|stop|fail", the message and every host (the texts and the
// verdict in mpi_exchange.cpp).
// gather: every member sends its result (run JSON) to member 0, which sends back every
// member's result (an empty text for a member that sent none in time).

#include <mpi.h>

#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <boost/json.hpp>

#include <dnstransport/error.hpp>
#include <dnstransport/load.hpp>
#include <dnstransport/mpi.hpp>

#include "mpi/mpi_exchange.hpp"
#include "report/json_io.hpp"
#include "util/clock.hpp"

namespace dnstransport {

namespace {

enum message_tag : int {
  tag_ready = 11,
  tag_go = 12,
  tag_result = 13,
  tag_results = 14,
  tag_done = 15
};

// How long the other ranks wait at the end for rank 0 to have printed and written the
// results (a report's plots included) before they exit.
constexpr double done_wait_seconds = 300;

using detail::monotonic_ns;

std::uint64_t deadline_after(double seconds) {
  return monotonic_ns() + static_cast<std::uint64_t>(std::max(0.0, seconds) * 1e9);
}

// Waits for a message with `tag` from `source` (MPI_ANY_SOURCE: anyone) until `deadline`;
// its text and sender, or nothing.
std::optional<std::pair<std::string, int>> receive(int source, int tag, std::uint64_t deadline) {
  for (;;) {
    int flag = 0;
    MPI_Status status{};
    MPI_Iprobe(source, tag, MPI_COMM_WORLD, &flag, &status);
    if (flag != 0) {
      int size = 0;
      MPI_Get_count(&status, MPI_CHAR, &size);
      std::string text(static_cast<std::size_t>(size), '\0');
      MPI_Recv(text.data(), size, MPI_CHAR, status.MPI_SOURCE, tag, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
      return std::make_pair(std::move(text), status.MPI_SOURCE);
    }
    if (monotonic_ns() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

// Sends `text` and waits until MPI is done with it or `deadline` passes (a large message
// waits for its receiver, which may be gone); false then.
bool send(const std::string& text, int destination, int tag, std::uint64_t deadline) {
  MPI_Request request{};
  MPI_Isend(text.data(), static_cast<int>(text.size()), MPI_CHAR, destination, tag, MPI_COMM_WORLD,
            &request);
  for (;;) {
    int done = 0;
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done != 0) return true;
    if (monotonic_ns() >= deadline) {
      MPI_Cancel(&request);
      MPI_Request_free(&request);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

class mpi_group final : public load_group {
 public:
  mpi_group() {
    int rank = 0;
    int size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    rank_ = static_cast<unsigned>(rank);
    size_ = static_cast<unsigned>(size);
    char name[MPI_MAX_PROCESSOR_NAME] = {};
    int length = 0;
    MPI_Get_processor_name(name, &length);
    host_.assign(name, static_cast<std::size_t>(length));
    hosts_.assign(size_, std::string());
    hosts_[rank_] = host_;
  }

  unsigned rank() const noexcept override { return rank_; }
  unsigned size() const noexcept override { return size_; }
  std::vector<std::string> hosts() const override { return hosts_; }
  bool broken() const noexcept override { return broken_; }
  bool started() const noexcept { return started_; }

  bool start_together(const std::string& error, bool stopping, double wait_seconds) override {
    if (broken_) throw setup_error("a rank of this mpirun job went missing earlier");
    started_ = true;
    const std::string state = !error.empty() ? "error" : stopping ? "stop" : "ready";
    const auto deadline = deadline_after(wait_seconds);
    if (rank_ != 0) {
      if (!send(state + "\n" + host_ + "\n" + error, 0, tag_ready, deadline)) {
        broken_ = true;
        throw setup_error(fmt::format("rank 0 did not take part within {:g} s", wait_seconds));
      }
      const auto answer = receive(0, tag_go, deadline);
      if (!answer) {
        broken_ = true;
        throw setup_error(
            fmt::format("rank 0 did not say when to start within {:g} s (it failed or was killed)",
                        wait_seconds));
      }
      const auto fields = detail::split_fields(answer->first, 3);
      if (fields.size() == 3) {
        const auto hosts = detail::unpack_texts(fields[2]);
        if (hosts.size() == size_) hosts_ = hosts;
      }
      if (fields[0] == "fail") throw setup_error(fields.size() > 1 ? fields[1] : "a rank failed");
      return fields[0] == "go";
    }
    // Member 0: every member's state, then one answer for all.
    std::vector<std::optional<std::string>> states(size_);
    std::vector<std::string> errors(size_);
    states[0] = state;
    errors[0] = error;
    for (unsigned got = 1; got < size_;) {
      const auto message = receive(MPI_ANY_SOURCE, tag_ready, deadline);
      if (!message) break;
      const auto fields = detail::split_fields(message->first, 3);
      const auto from = static_cast<unsigned>(message->second);
      if (states[from]) continue;
      states[from] = fields[0];
      if (fields.size() > 1) hosts_[from] = fields[1];
      if (fields.size() > 2) errors[from] = fields[2];
      ++got;
    }
    const detail::start_verdict start = detail::decide_start(states, errors, hosts_, wait_seconds);
    if (start.members_missing) broken_ = true;
    const std::string answer =
        start.verdict + "\n" + start.message + "\n" + detail::pack_texts(hosts_);
    const auto answer_deadline = deadline_after(10);
    for (unsigned r = 1; r < size_; ++r) {
      if (states[r]) send(answer, static_cast<int>(r), tag_go, answer_deadline);
    }
    if (start.verdict == "fail") throw setup_error(start.message);
    return start.verdict == "go";
  }

  std::vector<std::optional<run_result>> gather(const run_result& mine,
                                                double wait_seconds) override {
    std::vector<std::optional<run_result>> out(size_);
    const std::string own = boost::json::serialize(detail::run_result_to_json(mine));
    if (broken_) {
      out[rank_] = mine;
      return out;
    }
    std::vector<std::string> texts(size_);
    if (rank_ != 0) {
      // Member 0 waits up to wait_seconds for the others, then merges and answers.
      const auto deadline = deadline_after(wait_seconds + 10);
      const bool sent = send(own, 0, tag_result, deadline);
      const auto answer = sent ? receive(0, tag_results, deadline) : std::nullopt;
      if (!answer) {
        broken_ = true;
        out[rank_] = mine;
        return out;
      }
      texts = detail::unpack_texts(answer->first);
      if (texts.size() != size_) {
        broken_ = true;
        out[rank_] = mine;
        return out;
      }
    } else {
      texts[0] = own;
      std::vector<bool> got(size_, false);
      got[0] = true;
      const auto deadline = deadline_after(wait_seconds);
      for (unsigned n = 1; n < size_;) {
        const auto message = receive(MPI_ANY_SOURCE, tag_result, deadline);
        if (!message) break;
        const auto from = static_cast<unsigned>(message->second);
        if (got[from]) continue;
        got[from] = true;
        texts[from] = message->first;
        ++n;
      }
      for (unsigned r = 1; r < size_; ++r) {
        if (!got[r]) broken_ = true;
      }
      const std::string packed = detail::pack_texts(texts);
      const auto answer_deadline = deadline_after(10);
      for (unsigned r = 1; r < size_; ++r) {
        if (got[r] && !send(packed, static_cast<int>(r), tag_results, answer_deadline)) {
          broken_ = true;
        }
      }
    }
    for (unsigned r = 0; r < size_; ++r) {
      if (r == rank_) {
        out[r] = mine;
        continue;
      }
      if (texts[r].empty()) continue;
      try {
        out[r] = detail::run_result_from_json_value(boost::json::parse(texts[r]));
      } catch (const std::exception&) {
        broken_ = true;  // cannot happen between two builds of the same version
      }
    }
    return out;
  }

 private:
  unsigned rank_ = 0;
  unsigned size_ = 1;
  std::string host_;
  std::vector<std::string> hosts_;
  bool broken_ = false;
  bool started_ = false;
};

}  // namespace

bool mpi_compiled_in() noexcept {
  return true;
}

std::shared_ptr<load_group> join_mpi_job() {
  if (mpi_launch_size() == 0) return nullptr;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized == 0) {
    int provided = 0;
    // MPI is called only from the thread that runs the loads (the workers never call it).
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  }
  // Errors come back as codes (checked by the deadlines) instead of ending the process.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  return std::make_shared<mpi_group>();
}

void leave_mpi_job(load_group& group, int exit_status, const std::string& message) {
  auto* member = dynamic_cast<mpi_group*>(&group);
  if (member != nullptr && !message.empty() && !member->started() && !member->broken()) {
    // Failed before its first load: the others may be waiting for it at their start.
    try {
      member->start_together(message, false, 10);
    } catch (const std::exception&) {
    }
  }
  if (group.broken()) {
    MPI_Abort(MPI_COMM_WORLD, exit_status == 0 ? 1 : exit_status);
  }
  // mpirun ends the whole job as soon as one process exits with a status other than 0, so
  // the other ranks wait until rank 0 is done printing and writing before they exit.
  if (group.rank() == 0) {
    const auto deadline = deadline_after(10);
    for (unsigned r = 1; r < group.size(); ++r)
      send("done", static_cast<int>(r), tag_done, deadline);
  } else {
    receive(0, tag_done, deadline_after(done_wait_seconds));
  }
  MPI_Finalize();
}

}  // namespace dnstransport
