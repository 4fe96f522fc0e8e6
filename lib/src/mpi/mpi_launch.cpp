// Whether this process was started by mpirun, read from the environment: works with or
// without MPI compiled in, so that a build without it can say why it will not share a run.

#include <dnstransport/mpi.hpp>

#include <charconv>
#include <cstdlib>
#include <string_view>

namespace dnstransport {

unsigned mpi_launch_size() noexcept {
  // Open MPI's, then the PMI one that MPICH (hydra) and Slurm set.
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
    const char* value = std::getenv(name);
    if (value == nullptr) continue;
    const std::string_view text(value);
    unsigned size = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), size);
    if (ec == std::errc() && end == text.data() + text.size() && size > 0) return size;
  }
  return 0;
}

#ifndef DNSTRANSPORT_HAVE_MPI
bool mpi_compiled_in() noexcept {
  return false;
}

std::shared_ptr<load_group> join_mpi_job() {
  return nullptr;
}

void leave_mpi_job(load_group& /*group*/, int /*exit_status*/, const std::string& /*message*/) {}
#endif

}  // namespace dnstransport
