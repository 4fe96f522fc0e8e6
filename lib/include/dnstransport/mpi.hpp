#pragma once
/// \file
/// Runs over several processes and hosts under MPI (`mpirun -np N dnstransport run ...`):
/// the processes of the MPI job form one load_group (group.hpp) over MPI_COMM_WORLD.

#include <memory>
#include <string>

#include <dnstransport/group.hpp>

namespace dnstransport {

/// How many processes the MPI job this process was started in has, read from what mpirun
/// puts in the environment (Open MPI's OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_SIZE...); 0
/// when it was not started by mpirun. Works in builds without MPI.
unsigned mpi_launch_size() noexcept;

/// True when this build can join an MPI job (compiled with DNSTRANSPORT_WITH_MPI).
bool mpi_compiled_in() noexcept;

/// Joins the MPI job this process was started in (MPI_Init; call it once, from the thread
/// that will run the loads, before any other thread starts) and returns this process's
/// member of the group of all of the job's processes. Null when the process was not
/// started by mpirun or the build has no MPI.
std::shared_ptr<load_group> join_mpi_job();

/// Leaves the MPI job before the process exits with `exit_status`: MPI_Finalize when every
/// member is still there, MPI_Abort with `exit_status` (which makes mpirun end the others)
/// when one went missing, so that nothing waits for a dead member. `message`, when not
/// empty, is reported by member 0 to other members that are still waiting at a start
/// (a member that fails before its first load tells them why it does not come).
void leave_mpi_job(load_group& group, int exit_status, const std::string& message = {});

}  // namespace dnstransport
